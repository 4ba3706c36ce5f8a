// Kineto -> Trace, and Kineto -> pairing for execution traces (rules in
// docs/importers.md, "Kineto traces").
//
// Ops: every leaf operator, and every stretch of an operator's own time
// (between its children) in which it launched device work or allocated or
// freed memory. Memory events of the modelled device become tensors: an
// allocation is an ALLOC at the op it happened in and an output of that op;
// a free is a FREE there and an input. Memory allocated before the trace
// (Total Allocated of the first event minus its Bytes) enters as resident
// tensors: those freed in the trace one by one, the rest as one block.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "import/assembler.h"
#include "import/formats.h"
#include "import/kineto.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

constexpr int32_t kPre = -1;   // before the first op of the trace
constexpr int32_t kPost = -2;  // after the last

struct Emitted {
  int64_t key_ns = 0;   // start of the op or of the stretch
  int64_t end_ns = 0;
  uint32_t kop = 0;
  int32_t segment = -1;  // -1: a leaf op; else the stretch after child #segment
  int32_t iteration = -1;
  int32_t op = -1;       // assembler op when kept
  int64_t device_ns = 0;
};

class KinetoConverter {
 public:
  KinetoConverter(const KinetoCapture& cap, const KinetoIndex& idx, TraceAssembler* a)
      : cap_(cap), idx_(idx), a_(*a) {}

  absl::Status Run() {
    BuildChildren();
    Emit();
    AssignIterations();
    KeepOps();
    Memory();
    return absl::OkStatus();
  }

 private:
  void BuildChildren() {
    children_.resize(cap_.ops.size());
    std::vector<uint32_t> order(cap_.ops.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](uint32_t x, uint32_t y) { return cap_.ops[x].ts_ns < cap_.ops[y].ts_ns; });
    for (uint32_t i : order) {
      if (idx_.parent[i] >= 0) children_[idx_.parent[i]].push_back(i);
    }
  }

  // Which child gap of op p time t falls in.
  int32_t Gap(uint32_t p, int64_t t) const {
    const std::vector<uint32_t>& ch = children_[p];
    return static_cast<int32_t>(std::partition_point(ch.begin(), ch.end(), [&](uint32_t c) {
                                  return cap_.ops[c].end_ns < t;
                                }) - ch.begin());
  }

  // The emitted op an item inside op p (innermost) belongs to, or -1.
  int32_t EmittedFor(int32_t p, int64_t t) {
    if (p < 0 || !IsOperator(cap_, idx_, p)) return -1;
    if (!idx_.has_op_child[p]) return leaf_emitted_[p];
    const int32_t g = Gap(static_cast<uint32_t>(p), t);
    const uint64_t key = (static_cast<uint64_t>(p) << 32) | static_cast<uint32_t>(g);
    auto it = segments_.find(key);
    if (it != segments_.end()) return it->second;
    const KOp& o = cap_.ops[p];
    const std::vector<uint32_t>& ch = children_[p];
    Emitted e;
    e.kop = static_cast<uint32_t>(p);
    e.segment = g;
    e.key_ns = g == 0 ? o.ts_ns : cap_.ops[ch[g - 1]].end_ns;
    e.end_ns = g < static_cast<int32_t>(ch.size()) ? cap_.ops[ch[g]].ts_ns : o.end_ns;
    emitted_.push_back(e);
    segments_.emplace(key, static_cast<int32_t>(emitted_.size() - 1));
    return static_cast<int32_t>(emitted_.size() - 1);
  }

  void Emit() {
    leaf_emitted_.assign(cap_.ops.size(), -1);
    for (uint32_t i = 0; i < cap_.ops.size(); ++i) {
      if (!IsOperator(cap_, idx_, i) || idx_.has_op_child[i]) continue;
      Emitted e;
      e.kop = i;
      e.key_ns = cap_.ops[i].ts_ns;
      e.end_ns = cap_.ops[i].end_ns;
      emitted_.push_back(e);
      leaf_emitted_[i] = static_cast<int32_t>(emitted_.size() - 1);
    }
    launch_emitted_.resize(cap_.launches.size());
    for (size_t k = 0; k < cap_.launches.size(); ++k) {
      launch_emitted_[k] = EmittedFor(idx_.launch_op[k], cap_.launches[k].ts_ns);
    }
    memory_emitted_.assign(cap_.memory.size(), -1);
    for (uint32_t k : idx_.device_memory) {
      memory_emitted_[k] = EmittedFor(idx_.memory_op[k], cap_.memory[k].ts_ns);
    }
    // Device time per emitted op.
    for (size_t k = 0; k < cap_.launches.size(); ++k) {
      if (launch_emitted_[k] < 0) continue;
      auto d = cap_.device_ns.find(cap_.launches[k].correlation);
      if (d != cap_.device_ns.end()) {
        int64_t& v = emitted_[launch_emitted_[k]].device_ns;
        v = SatAdd(v, d->second);
      }
    }
    order_.resize(emitted_.size());
    std::iota(order_.begin(), order_.end(), 0u);
    std::sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) {
      const Emitted& p = emitted_[x];
      const Emitted& q = emitted_[y];
      if (p.key_ns != q.key_ns) return p.key_ns < q.key_ns;
      if (cap_.ops[p.kop].thread != cap_.ops[q.kop].thread) {
        return cap_.ops[p.kop].thread < cap_.ops[q.kop].thread;
      }
      if (p.kop != q.kop) return p.kop < q.kop;
      return p.segment < q.segment;
    });
  }

  void AssignIterations() {
    std::vector<uint32_t> steps, opt;
    for (uint32_t i = 0; i < cap_.ops.size(); ++i) {
      const NameTraits& t = idx_.traits[cap_.ops[i].name];
      if (t.profiler_step) steps.push_back(i);
      if (t.optimizer_step) opt.push_back(i);
    }
    auto by_ts = [&](uint32_t x, uint32_t y) { return cap_.ops[x].ts_ns < cap_.ops[y].ts_ns; };
    std::sort(steps.begin(), steps.end(), by_ts);
    std::sort(opt.begin(), opt.end(), [&](uint32_t x, uint32_t y) {
      return cap_.ops[x].end_ns < cap_.ops[y].end_ns;
    });
    int64_t outside = 0;
    for (uint32_t k : order_) {
      Emitted& e = emitted_[k];
      if (!steps.empty()) {
        auto up = std::partition_point(steps.begin(), steps.end(), [&](uint32_t s) {
          return cap_.ops[s].ts_ns <= e.key_ns;
        });
        if (up != steps.begin() && e.key_ns <= cap_.ops[*(up - 1)].end_ns) {
          e.iteration = static_cast<int32_t>(up - steps.begin()) - 1;
        }
      } else if (!opt.empty()) {
        auto up = std::partition_point(opt.begin(), opt.end(), [&](uint32_t s) {
          return cap_.ops[s].end_ns < e.key_ns;
        });
        if (up != opt.end()) e.iteration = static_cast<int32_t>(up - opt.begin());
      } else {
        e.iteration = 0;
      }
      if (e.iteration < 0) ++outside;
    }
    if (outside > 0) {
      a_.Note(steps.empty() ? "ops_after_last_optimizer_step" : "ops_outside_profiler_steps",
              outside);
    }
    if (!steps.empty()) {
      for (size_t s = 0; s < steps.size(); ++s) {
        const KOp& o = cap_.ops[steps[s]];
        a_.SetWallTime(static_cast<int32_t>(s), o.end_ns - o.ts_ns);
      }
      a_.SetAttribute("import.iterations",
                      absl::StrCat(cap_.names[cap_.ops[steps.front()].name], " .. ",
                                   cap_.names[cap_.ops[steps.back()].name]));
    } else if (!opt.empty()) {
      int64_t prev = -1;
      for (size_t s = 0; s < opt.size(); ++s) {
        const int64_t end = cap_.ops[opt[s]].end_ns;
        if (prev >= 0) a_.SetWallTime(static_cast<int32_t>(s), std::max<int64_t>(SatSub(end, prev), 0));
        prev = end;
      }
      a_.SetAttribute("import.iterations", "one per Optimizer.step# (no ProfilerStep#)");
    } else {
      a_.SetAttribute("import.iterations", "whole trace (no ProfilerStep# nor Optimizer.step#)");
    }
  }

  PhaseHint HintOf(uint32_t kop) {
    // Nearest annotation with a phase; autograd evidence otherwise.
    bool autograd = cap_.ops[kop].fwd_thread || idx_.autograd_thread[cap_.ops[kop].thread];
    for (int32_t p = static_cast<int32_t>(kop); p >= 0; p = idx_.parent[p]) {
      const NameTraits& t = idx_.traits[cap_.ops[p].name];
      if ((t.annotation || cap_.ops[p].annotation) && t.hint != PhaseHint::kNone) return t.hint;
      autograd = autograd || t.autograd || cap_.ops[p].fwd_thread;
    }
    return autograd ? PhaseHint::kAutograd : PhaseHint::kNone;
  }

  void KeepOps() {
    for (uint32_t k : order_) {
      Emitted& e = emitted_[k];
      if (e.iteration < 0) continue;
      const KOp& o = cap_.ops[e.kop];
      e.op = a_.AddOp(e.iteration, a_.Name(cap_.names[o.name]), HintOf(e.kop));
      kept_.push_back(k);
      if (o.stack >= 0) a_.SetStack(e.op, o.stack);
      if (idx_.any_device_activity) {
        a_.SetDuration(e.op, e.device_ns);
      } else {
        a_.SetDuration(e.op, std::max<int64_t>(e.end_ns - e.key_ns, 0));
      }
    }
    kept_key_.reserve(kept_.size());
    for (uint32_t k : kept_) kept_key_.push_back(emitted_[k].key_ns);
  }

  // The kept op a memory event at time t takes effect at: its own op when
  // kept; otherwise an allocation at the next op, a free after the previous.
  int32_t Target(int32_t emitted, int64_t t, bool alloc) const {
    if (emitted >= 0 && emitted_[emitted].op >= 0) return emitted_[emitted].op;
    if (alloc) {
      auto it = std::lower_bound(kept_key_.begin(), kept_key_.end(), t);
      if (it == kept_key_.end()) return kPost;
      return emitted_[kept_[it - kept_key_.begin()]].op;
    }
    auto it = std::upper_bound(kept_key_.begin(), kept_key_.end(), t);
    if (it == kept_key_.begin()) return kPre;
    return emitted_[kept_[(it - kept_key_.begin()) - 1]].op;
  }

  void Memory();

  const KinetoCapture& cap_;
  const KinetoIndex& idx_;
  TraceAssembler& a_;
  std::vector<std::vector<uint32_t>> children_;
  std::vector<Emitted> emitted_;
  std::vector<int32_t> leaf_emitted_;
  absl::flat_hash_map<uint64_t, int32_t> segments_;
  std::vector<int32_t> launch_emitted_, memory_emitted_;
  std::vector<uint32_t> order_;
  std::vector<uint32_t> kept_;
  std::vector<int64_t> kept_key_;
};

void KinetoConverter::Memory() {
  if (idx_.device_memory.empty() || kept_.empty()) return;
  a_.SetAttribute("import.memory_device", idx_.memory_device);
  struct Live {
    int64_t size;
    int64_t tensor;  // -1: allocated before the trace, not materialised yet
  };
  absl::flat_hash_map<int64_t, Live> by_addr;
  absl::flat_hash_map<int64_t, std::vector<int64_t>> by_size;  // no addresses: LIFO per size
  const bool have_addr = cap_.memory[idx_.device_memory.front()].addr >= 0;
  const bool have_total = cap_.memory[idx_.device_memory.front()].total_allocated >= 0;
  int64_t resident_at_start = 0;   // bytes of tensors materialised as resident
  int64_t ta_start = -1;           // Total Allocated when the trace begins
  int64_t ta = -1;
  int64_t peak_in = -1, peak_all = -1;
  std::vector<int64_t> ta_after(static_cast<size_t>(a_.num_ops()), -1);
  int64_t ta_before_first = -1;
  auto resident = [&](int64_t size) {
    uint64_t t = a_.AddTensor(size, DType::kUnknown, {}, "");
    a_.SetPersistent(t, true);
    resident_at_start = SatAdd(resident_at_start, size);
    return static_cast<int64_t>(t);
  };
  for (uint32_t k : idx_.device_memory) {
    const KMemory& m = cap_.memory[k];
    if (m.total_allocated >= 0) peak_all = std::max(peak_all, m.total_allocated);
    if (m.bytes == 0) continue;
    const bool alloc = m.bytes > 0;
    const int32_t op = Target(memory_emitted_[k], m.ts_ns, alloc);
    if (op == kPost) continue;
    if (op == kPre) {
      if (m.total_allocated >= 0) ta_before_first = m.total_allocated;
      if (!have_addr) {
        if (alloc) by_size[m.bytes].push_back(-1);
        else if (auto it = by_size.find(-m.bytes); it != by_size.end() && !it->second.empty()) it->second.pop_back();
        continue;
      }
      if (alloc) by_addr[m.addr] = Live{m.bytes, -1};
      else by_addr.erase(m.addr);
      continue;
    }
    if (ta_start < 0 && m.total_allocated >= 0) ta_start = SatSub(m.total_allocated, m.bytes);
    if (m.total_allocated >= 0) {
      ta = m.total_allocated;
      peak_in = std::max(peak_in, ta);
      ta_after[op] = ta;
    }
    const int64_t size = alloc ? m.bytes : SatSub(0, m.bytes);
    if (alloc) {
      int64_t t = static_cast<int64_t>(a_.AddTensor(size, DType::kUnknown, {}, ""));
      if (have_addr) {
        auto it = by_addr.find(m.addr);
        if (it != by_addr.end()) {
          // The free of the previous block at this address was not recorded.
          int64_t old = it->second.tensor >= 0 ? it->second.tensor : resident(it->second.size);
          a_.AddEvent(op, MemoryEventKind::kFree, static_cast<uint64_t>(old));
          a_.Note("allocations_over_live_blocks");
        }
        by_addr[m.addr] = Live{size, t};
      } else {
        by_size[size].push_back(t);
      }
      a_.AddEvent(op, MemoryEventKind::kAlloc, static_cast<uint64_t>(t));
      a_.AddUse(op, static_cast<uint64_t>(t), /*output=*/true);
      continue;
    }
    int64_t t = -1;
    if (have_addr) {
      auto it = by_addr.find(m.addr);
      if (it != by_addr.end()) {
        if (it->second.size != size) a_.Note("frees_with_another_size");
        t = it->second.tensor >= 0 ? it->second.tensor : resident(it->second.size);
        by_addr.erase(it);
      }
    } else {
      auto it = by_size.find(size);
      if (it != by_size.end() && !it->second.empty()) {
        t = it->second.back() >= 0 ? it->second.back() : resident(size);
        it->second.pop_back();
      }
    }
    if (t < 0) t = resident(size);  // allocated before the trace began
    a_.AddEvent(op, MemoryEventKind::kFree, static_cast<uint64_t>(t));
    a_.AddUse(op, static_cast<uint64_t>(t), /*output=*/false);
  }
  // Blocks alive at the end: allocated in the trace -> resident to its end;
  // allocated before it and never freed -> resident throughout.
  auto finish_live = [&](int64_t tensor, int64_t size) {
    if (tensor >= 0) a_.SetPersistent(static_cast<uint64_t>(tensor), true);
    else resident(size);
  };
  for (const auto& [addr, live] : by_addr) finish_live(live.tensor, live.size);
  for (const auto& [size, stack] : by_size) {
    for (int64_t tensor : stack) finish_live(tensor, size);
  }
  if (ta_start < 0) ta_start = ta_before_first;
  if (have_total && ta_start >= 0) {
    const int64_t rest = SatSub(ta_start, resident_at_start);
    if (rest > 0) {
      uint64_t t = a_.AddTensor(rest, DType::kUnknown, {}, "allocated before the trace");
      a_.SetPersistent(t, true);
      a_.SetKind(t, TensorKind::kOther);
    } else if (rest < 0) {
      a_.Note("resident_bytes_over_total_allocated", -rest);
    }
    int64_t carry = ta_start;
    for (int32_t op = 0; op < a_.num_ops(); ++op) {
      if (ta_after[op] >= 0) carry = ta_after[op];
      a_.SetAllocatorBytes(op, carry);
    }
    a_.SetAttribute("import.allocator_peak_bytes", absl::StrCat(std::max(peak_in, ta_start)));
    a_.SetAttribute("import.allocator_peak_bytes_whole_trace", absl::StrCat(peak_all));
  } else {
    a_.Note("no_total_allocated_figures");
  }
}

}  // namespace

absl::StatusOr<Trace> ImportKineto(ImportInput& in, const ImportOptions& options) {
  KinetoCapture cap;
  SWAPPLAN_RETURN_IF_ERROR(ParseKineto(in.stream(), in.source(), options, in.ErrorFn(), &cap));
  KinetoIndex idx = IndexKineto(cap);
  TraceAssembler a(in.source());
  KinetoConverter conv(cap, idx, &a);
  SWAPPLAN_RETURN_IF_ERROR(conv.Run());
  TraceMetadata& m = a.metadata();
  m.framework = "PyTorch";
  m.recorder = "Kineto";
  m.recorder_version = "torch.profiler";
  for (const KinetoCapture::Device& d : cap.devices) {
    if (d.id == std::max(idx.memory_device_id, 0)) {
      m.device_name = d.name;
      m.device_memory_bytes = std::max<int64_t>(d.memory_bytes, 0);
    }
  }
  a.SetAttribute("import.format", kFormatKineto);
  a.SetAttribute("import.durations", idx.any_device_activity
                                         ? "recorded: device time of the kernels, copies and sets "
                                           "each op launched"
                                         : "recorded: host time of each op (no device activity "
                                           "in the trace)");
  return std::move(a).Finish();
}

}  // namespace swapplan::import_internal
