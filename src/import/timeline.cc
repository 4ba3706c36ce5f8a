// torch.profiler memory timeline, raw export (MemoryProfileTimeline.
// export_memory_timeline_raw): a JSON array of rows [ts, action, bytes,
// category] for one device, in time order. Actions: 1 PREEXISTING (ts -1),
// 2 CREATE, 3 INCREMENT_VERSION (a pair of rows: -bytes with the old
// version's category, +bytes with the new one's), 4 DESTROY (bytes may be
// written negative). Categories: 0 PARAMETER, 1 OPTIMIZER_STATE, 2 INPUT,
// 3 TEMPORARY, 4 ACTIVATION, 5 GRADIENT, 6 AUTOGRAD_DETAIL, 7 unknown.
//
// Rows carry no tensor identity: a DESTROY or version row is matched to the
// most recent live tensor of the same size and current category (LIFO,
// which is the order autograd frees activations; the byte curve is exact
// whichever tensor is picked). Each distinct timestamp becomes one op.
#include <algorithm>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "import/assembler.h"
#include "import/formats.h"
#include "import/json_reader.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

constexpr int kCategories = 8;
constexpr const char* kCategoryNames[kCategories] = {
    "PARAMETER", "OPTIMIZER_STATE", "INPUT", "TEMPORARY", "ACTIVATION", "GRADIENT",
    "AUTOGRAD_DETAIL", "UNKNOWN"};
constexpr const char* kActionNames[5] = {"", "PREEXISTING", "CREATE", "INCREMENT_VERSION",
                                         "DESTROY"};

TensorKind KindOfCategory(int c) {
  switch (c) {
    case 0: return TensorKind::kParameter;
    case 1: return TensorKind::kOptimizerState;
    case 2: return TensorKind::kInput;
    case 3: return TensorKind::kTemporary;
    case 4: return TensorKind::kActivation;
    case 5: return TensorKind::kGradient;
    case 6: return TensorKind::kTemporary;
    default: return TensorKind::kOther;
  }
}

struct Row {
  int64_t ts, action, bytes, category;
};

class TimelineImporter {
 public:
  TimelineImporter(JsonReader& r, TraceAssembler* a) : r_(r), a_(*a) {}

  absl::Status Run() {
    if (!r_.BeginArray()) return r_.status();
    int64_t index = -1;
    while (r_.NextElement()) {
      ++index;
      Row row{};
      if (!ReadRow(&row)) break;
      SWAPPLAN_RETURN_IF_ERROR(Apply(row, index));
    }
    if (r_.ok()) r_.AtEndOfInput();
    SWAPPLAN_RETURN_IF_ERROR(r_.status());
    Close();
    return absl::OkStatus();
  }

 private:
  bool ReadRow(Row* row) {
    if (!r_.BeginArray()) return false;
    int64_t v[4];
    int k = 0;
    while (r_.NextElement()) {
      if (k == 4) {
        r_.Fail("a row has more than 4 values [ts, action, bytes, category]", "timeline-schema");
        return false;
      }
      JsonNumber n;
      if (!r_.ReadNumber(&n)) return false;
      if (!n.is_int) {
        double d = n.ToDouble();
        if (!(std::abs(d) < 9.0e18) || d != static_cast<double>(static_cast<int64_t>(d))) {
          r_.Fail("expected an integer", "timeline-schema");
          return false;
        }
        v[k++] = static_cast<int64_t>(d);
      } else {
        v[k++] = n.int_value;
      }
    }
    if (!r_.ok()) return false;
    if (k != 4) {
      r_.Fail(absl::StrCat("a row has ", k, " values; expected [ts, action, bytes, category]"),
              "timeline-schema");
      return false;
    }
    *row = Row{v[0], v[1], v[2], v[3]};
    return true;
  }

  absl::Status Bad(int64_t index, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(r_.source(), ": row ", index, ": ", what, " [timeline-schema]"));
  }

  // The live tensor of `size` whose current category is `category`.
  int64_t TakeLive(int64_t size, int64_t category) {
    auto it = live_.find(Key(size, category));
    if (it == live_.end() || it->second.empty()) return -1;
    int64_t t = it->second.back();
    it->second.pop_back();
    return t;
  }
  static std::pair<int64_t, int64_t> Key(int64_t size, int64_t category) {
    return {size, category};
  }

  void StartOp(const Row& row) {
    if (op_ >= 0 && row.ts == op_ts_) return;
    if (op_ >= 0) {
      a_.SetDuration(op_, std::max<int64_t>(SatSub(row.ts, op_ts_), 0));
      a_.SetAllocatorBytes(op_, total_);
      iteration_end_ = row.ts;
    }
    // A new iteration at the first forward op after optimizer work.
    PhaseHint h = HintOf(row);
    if (h == PhaseHint::kForward && seen_optimizer_) {
      if (iteration_start_ >= 0) {
        a_.SetWallTime(iteration_, std::max<int64_t>(SatSub(row.ts, iteration_start_), 0));
      }
      ++iteration_;
      seen_optimizer_ = false;
      iteration_start_ = row.ts;
    }
    if (iteration_start_ < 0) iteration_start_ = row.ts;
    if (h == PhaseHint::kOptimizer) seen_optimizer_ = true;
    op_ = a_.AddOp(iteration_,
                   a_.Name(absl::StrCat(kActionNames[row.action], " ",
                                        kCategoryNames[row.category])),
                   h);
    op_ts_ = row.ts;
  }

  static PhaseHint HintOf(const Row& row) {
    if (row.action == 2 && row.category == 4) return PhaseHint::kForward;
    if ((row.action == 2 && (row.category == 5 || row.category == 6))) return PhaseHint::kBackward;
    if (row.category == 1 && (row.action == 2 || row.action == 3)) return PhaseHint::kOptimizer;
    return PhaseHint::kNone;
  }

  absl::Status Apply(const Row& row, int64_t index) {
    if (row.action < 1 || row.action > 4) {
      return Bad(index, absl::StrCat("action ", row.action, " is not 1-4"));
    }
    if (row.category < 0 || row.category >= kCategories) {
      return Bad(index, absl::StrCat("category ", row.category, " is not 0-7"));
    }
    if (row.bytes == INT64_MIN) return Bad(index, "bytes out of range");
    const int64_t size = std::abs(row.bytes);
    if (row.action == 1) {
      if (op_ >= 0) return Bad(index, "PREEXISTING after the first event");
      if (size == 0) return absl::OkStatus();
      uint64_t t = a_.AddTensor(size, DType::kUnknown, {}, "");
      a_.SetPersistent(t, true);
      Classify(t, row.category);
      live_[Key(size, row.category)].push_back(static_cast<int64_t>(t));
      if (__builtin_add_overflow(total_, size, &total_)) return Bad(index, "total bytes overflow");
      peak_ = std::max(peak_, total_);
      return absl::OkStatus();
    }
    if (row.ts < last_ts_) {
      return Bad(index, absl::StrCat("timestamp ", row.ts, " is before the previous row's ", last_ts_));
    }
    last_ts_ = row.ts;
    if (size == 0) return absl::OkStatus();
    StartOp(row);
    if (row.action == 2) {
      uint64_t t = a_.AddTensor(size, DType::kUnknown, {}, "");
      Classify(t, row.category);
      a_.AddEvent(op_, MemoryEventKind::kAlloc, t);
      a_.AddUse(op_, t, /*output=*/true);
      live_[Key(size, row.category)].push_back(static_cast<int64_t>(t));
      if (__builtin_add_overflow(total_, size, &total_)) return Bad(index, "total bytes overflow");
      peak_ = std::max(peak_, total_);
    } else if (row.action == 3) {
      if (row.bytes < 0) {
        pending_version_ = TakeLive(size, row.category);
        if (pending_version_ < 0) a_.Note("version_rows_without_a_live_tensor");
        return absl::OkStatus();
      }
      int64_t t = pending_version_;
      pending_version_ = -1;
      if (t < 0) return absl::OkStatus();
      Classify(static_cast<uint64_t>(t), row.category);
      a_.AddUse(op_, static_cast<uint64_t>(t), /*output=*/false);
      live_[Key(size, row.category)].push_back(t);
    } else {
      int64_t t = TakeLive(size, row.category);
      if (t < 0) {
        // Destroyed but never created nor pre-existing in the export.
        a_.Note("destroys_without_a_live_tensor");
        return absl::OkStatus();
      }
      a_.AddEvent(op_, MemoryEventKind::kFree, static_cast<uint64_t>(t));
      a_.AddUse(op_, static_cast<uint64_t>(t), /*output=*/false);
      total_ -= size;
    }
    return absl::OkStatus();
  }

  // The first known category decides the kind.
  void Classify(uint64_t t, int64_t category) {
    if (category == 7 || a_.kind_known(t)) return;
    a_.SetKind(t, KindOfCategory(static_cast<int>(category)));
  }

  void Close() {
    if (op_ >= 0) {
      a_.SetDuration(op_, 0);
      a_.SetAllocatorBytes(op_, total_);
      if (iteration_start_ >= 0 && seen_optimizer_) {
        a_.SetWallTime(iteration_, std::max<int64_t>(SatSub(iteration_end_, iteration_start_), 0));
      }
    }
    // Alive at the end: resident until the end of the trace.
    for (auto& [key, stack] : live_) {
      for (int64_t t : stack) a_.SetPersistent(static_cast<uint64_t>(t), true);
    }
    a_.SetAttribute("import.allocator_peak_bytes", absl::StrCat(peak_));
  }

  JsonReader& r_;
  TraceAssembler& a_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::vector<int64_t>> live_;
  int32_t op_ = -1;
  int64_t op_ts_ = 0;
  int64_t last_ts_ = INT64_MIN;
  int32_t iteration_ = 0;
  int64_t iteration_start_ = -1;
  int64_t iteration_end_ = 0;
  bool seen_optimizer_ = false;
  int64_t pending_version_ = -1;
  int64_t total_ = 0;
  int64_t peak_ = 0;
};

}  // namespace

absl::StatusOr<Trace> ImportTimeline(ImportInput& in, const ImportOptions& options) {
  JsonLimits limits;
  limits.max_token_bytes = options.max_json_token_bytes;
  JsonReader r(in.stream(), in.source(), limits, in.ErrorFn());
  TraceAssembler a(in.source());
  TimelineImporter imp(r, &a);
  SWAPPLAN_RETURN_IF_ERROR(imp.Run());
  a.metadata().framework = "PyTorch";
  a.metadata().recorder = "torch.profiler";
  a.metadata().recorder_version = "memory timeline";
  a.SetAttribute("import.format", kFormatTimeline);
  a.SetAttribute("import.durations", "time to the next event of the timeline");
  a.SetAttribute("import.iterations", "a new one at the first activation created after optimizer work");
  return std::move(a).Finish();
}

}  // namespace swapplan::import_internal
