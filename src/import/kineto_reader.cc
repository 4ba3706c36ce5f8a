// Kineto JSON reader: streams "traceEvents" (or a top-level event array)
// event by event, keeping the events listed in kineto.h.
#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "import/json_reader.h"
#include "import/kineto.h"

namespace swapplan::import_internal {
namespace {

enum class Cat : uint8_t { kSkip, kOp, kAnnotation, kLaunch, kDevice };

Cat CategoryOf(absl::string_view cat) {
  std::string c = absl::AsciiStrToLower(cat);
  if (c == "cpu_op" || c == "operator") return Cat::kOp;
  if (c == "user_annotation") return Cat::kAnnotation;
  if (c == "cuda_runtime" || c == "runtime" || c == "cuda_driver" || c == "xpu_runtime" ||
      c == "privateuse1_runtime") {
    return Cat::kLaunch;
  }
  if (c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "memcpy" || c == "memset") {
    return Cat::kDevice;
  }
  return Cat::kSkip;
}

// Microseconds (possibly fractional) to nanoseconds; false on overflow.
bool MicrosToNanos(const JsonNumber& n, int64_t* out) {
  if (n.is_int) {
    return !__builtin_mul_overflow(n.int_value, int64_t{1000}, out);
  }
  double d = n.ToDouble() * 1000.0;
  if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return false;
  // Exact for the common "1234.567" form: integer part and three decimals.
  absl::string_view t = n.text;
  size_t dot = t.find('.');
  if (dot != absl::string_view::npos && t.find_first_of("eE") == absl::string_view::npos &&
      dot <= 18) {
    bool neg = !t.empty() && t[0] == '-';
    int64_t ip = 0;
    for (size_t k = neg ? 1 : 0; k < dot; ++k) ip = ip * 10 + (t[k] - '0');
    int64_t frac = 0;
    for (size_t k = 1; k <= 3; ++k) {
      frac = frac * 10 + (dot + k < t.size() ? t[dot + k] - '0' : 0);
    }
    if (dot + 4 < t.size() && t[dot + 4] >= '5') ++frac;
    int64_t v = 0;
    if (__builtin_mul_overflow(ip, int64_t{1000}, &v) || __builtin_add_overflow(v, frac, &v)) {
      return false;
    }
    *out = neg ? -v : v;
    return true;
  }
  *out = static_cast<int64_t>(std::llround(d));
  return true;
}

struct Event {
  std::string ph, cat, name, pid, tid, stack;
  bool has_ts = false, has_dur = false;
  int64_t ts = 0, dur = 0;
  int64_t external_id = -1, rf_id = -1, correlation = -1, fwd_tid = -1;
  int64_t device_type = -1, device_id = -1, addr = -1, bytes = 0, total_allocated = -1;
  bool has_bytes = false;
  void Reset() {
    ph.clear(); cat.clear(); name.clear(); pid.clear(); tid.clear(); stack.clear();
    has_ts = has_dur = has_bytes = false;
    ts = dur = bytes = 0;
    external_id = rf_id = correlation = fwd_tid = device_type = device_id = addr = -1;
    total_allocated = -1;
  }
};

class KinetoParser {
 public:
  KinetoParser(JsonReader& r, KinetoCapture* cap) : r_(r), cap_(cap) {}

  absl::Status Run() {
    bool saw_events = false;
    if (r_.Peek() == JsonKind::kArray) {
      saw_events = true;
      Events();
    } else if (r_.BeginObject()) {
      absl::string_view key;
      while (r_.NextKey(&key)) {
        if (key == "traceEvents") {
          saw_events = true;
          Events();
        } else if (key == "deviceProperties") {
          DeviceProperties();
        } else {
          r_.Skip();
        }
      }
    }
    if (r_.ok()) r_.AtEndOfInput();
    if (!r_.ok()) return r_.status();
    if (!saw_events) {
      return absl::InvalidArgumentError(absl::StrCat(
          r_.source(), ": no \"traceEvents\" array: not a Kineto trace [kineto-schema]"));
    }
    return absl::OkStatus();
  }

 private:
  // A number or a string of digits (Kineto writes tids both ways) as text.
  void ScalarText(std::string* out) {
    out->clear();
    if (r_.Peek() == JsonKind::kString) {
      absl::string_view s;
      if (r_.ReadString(&s)) out->assign(s.data(), s.size());
    } else if (r_.Peek() == JsonKind::kNumber) {
      JsonNumber n;
      if (r_.ReadNumber(&n)) out->assign(n.text.data(), n.text.size());
    } else {
      r_.Skip();
    }
  }
  bool Int(int64_t* out) {
    if (r_.Peek() == JsonKind::kNumber) {
      JsonNumber n;
      if (!r_.ReadNumber(&n)) return false;
      if (n.is_int) {
        *out = n.int_value;
      } else {
        double d = n.ToDouble();
        if (std::isfinite(d) && std::fabs(d) < 9.2e18) *out = static_cast<int64_t>(d);
      }
      return true;
    }
    return r_.Skip();
  }
  void Time(int64_t* out, bool* has) {
    if (r_.Peek() == JsonKind::kString) {  // some writers quote numbers
      absl::string_view s;
      if (!r_.ReadString(&s)) return;
      JsonNumber n;
      n.text = s;
      int64_t v = 0;
      if (absl::SimpleAtoi(s, &v)) {
        n.is_int = true;
        n.int_value = v;
      }
      if (MicrosToNanos(n, out)) *has = true;
      return;
    }
    JsonNumber n;
    if (!r_.ReadNumber(&n)) return;
    if (!MicrosToNanos(n, out)) {
      r_.Fail("time out of range", "kineto-schema");
      return;
    }
    *has = true;
  }

  void Args() {
    if (!r_.BeginObject()) return;
    absl::string_view key;
    while (r_.NextKey(&key)) {
      if (key == "External id") Int(&e_.external_id);
      else if (key == "Record function id") Int(&e_.rf_id);
      else if (key == "correlation") Int(&e_.correlation);
      else if (key == "Fwd thread id") Int(&e_.fwd_tid);
      else if (key == "Device Type") Int(&e_.device_type);
      else if (key == "Device Id") Int(&e_.device_id);
      else if (key == "Addr") Int(&e_.addr);
      else if (key == "Bytes") e_.has_bytes = Int(&e_.bytes);
      else if (key == "Total Allocated") Int(&e_.total_allocated);
      else if (key == "Call stack") ScalarText(&e_.stack);
      else r_.Skip();
      if (!r_.ok()) return;
    }
  }

  void Events() {
    if (!r_.BeginArray()) return;
    while (r_.NextElement()) {
      if (r_.Peek() != JsonKind::kObject) {
        r_.Skip();
        continue;
      }
      e_.Reset();
      r_.BeginObject();
      absl::string_view key;
      while (r_.NextKey(&key)) {
        if (key == "ph") ScalarText(&e_.ph);
        else if (key == "cat") ScalarText(&e_.cat);
        else if (key == "name") ScalarText(&e_.name);
        else if (key == "pid") ScalarText(&e_.pid);
        else if (key == "tid") ScalarText(&e_.tid);
        else if (key == "ts") Time(&e_.ts, &e_.has_ts);
        else if (key == "dur") Time(&e_.dur, &e_.has_dur);
        else if (key == "args" && r_.Peek() == JsonKind::kObject) Args();
        else r_.Skip();
        if (!r_.ok()) return;
      }
      if (!r_.ok()) return;
      ++cap_->events;
      Keep();
    }
  }

  int32_t Thread() {
    thread_key_.assign(e_.pid);
    thread_key_.push_back('/');
    thread_key_.append(e_.tid);
    return cap_->Intern(thread_key_, &cap_->threads, &cap_->thread_index);
  }

  void Keep() {
    if (e_.name == "[memory]" && e_.has_ts && e_.has_bytes) {
      KMemory m;
      m.ts_ns = e_.ts;
      m.addr = e_.addr;
      m.bytes = e_.bytes;
      m.total_allocated = e_.total_allocated;
      m.thread = Thread();
      m.device_type = static_cast<int32_t>(e_.device_type);
      m.device_id = static_cast<int32_t>(e_.device_id);
      cap_->memory.push_back(m);
      return;
    }
    if (e_.ph != "X" || !e_.has_ts) return;
    Cat c = CategoryOf(e_.cat);
    if (c == Cat::kSkip) return;
    const int64_t dur = e_.has_dur ? std::max<int64_t>(e_.dur, 0) : 0;
    int64_t end = 0;
    if (__builtin_add_overflow(e_.ts, dur, &end)) {
      r_.Fail("ts + dur overflows", "kineto-schema");
      return;
    }
    if (c == Cat::kDevice) {
      int64_t key = e_.correlation >= 0 ? e_.correlation : e_.external_id;
      if (key >= 0) {
        int64_t& v = cap_->device_ns[key];
        v = v > INT64_MAX - dur ? INT64_MAX : v + dur;
      }
      return;
    }
    if (c == Cat::kLaunch) {
      cap_->launches.push_back({e_.ts, e_.correlation, Thread()});
      return;
    }
    KOp op;
    op.ts_ns = e_.ts;
    op.end_ns = end;
    op.external_id = e_.external_id;
    op.rf_id = e_.rf_id;
    op.name = cap_->Intern(e_.name, &cap_->names, &cap_->name_index);
    op.thread = Thread();
    op.annotation = c == Cat::kAnnotation;
    op.fwd_thread = e_.fwd_tid > 0;
    if (!e_.stack.empty()) op.stack = cap_->Intern(e_.stack, &cap_->stacks, &cap_->stack_index);
    cap_->ops.push_back(op);
  }

  void DeviceProperties() {
    if (!r_.BeginArray()) return;
    while (r_.NextElement()) {
      if (r_.Peek() != JsonKind::kObject) {
        r_.Skip();
        continue;
      }
      KinetoCapture::Device d;
      r_.BeginObject();
      absl::string_view key;
      while (r_.NextKey(&key)) {
        if (key == "id") Int(&d.id);
        else if (key == "name") ScalarText(&d.name);
        else if (key == "totalGlobalMem") Int(&d.memory_bytes);
        else r_.Skip();
        if (!r_.ok()) return;
      }
      cap_->devices.push_back(d);
    }
  }

  JsonReader& r_;
  KinetoCapture* cap_;
  Event e_;
  std::string thread_key_;
};

}  // namespace

int32_t KinetoCapture::Intern(absl::string_view s, std::vector<std::string>* table,
                              absl::flat_hash_map<std::string, int32_t>* index) {
  auto it = index->find(s);
  if (it != index->end()) return it->second;
  int32_t id = static_cast<int32_t>(table->size());
  table->emplace_back(s);
  index->emplace(table->back(), id);
  return id;
}

absl::Status ParseKineto(google::protobuf::io::ZeroCopyInputStream* in, const std::string& source,
                         const ImportOptions& options, std::function<absl::Status()> stream_error,
                         KinetoCapture* cap) {
  JsonLimits limits;
  limits.max_token_bytes = options.max_json_token_bytes;
  JsonReader r(in, source, limits, std::move(stream_error));
  KinetoParser p(r, cap);
  return p.Run();
}

}  // namespace swapplan::import_internal
