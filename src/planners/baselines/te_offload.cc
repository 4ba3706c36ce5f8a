// TransformerEngine / Megatron CPU activation offloading (see practice.h).
//
// TE's DefaultOffloadSynchronizer with L layers, k offloaded (layer i < k):
//
//   forward   |L0 fwd|L1 fwd| ... |L(L-k) fwd| ... |L(L-1) fwd|
//   d2h              |== out L0 ==|          (starts at L1's fwd_step)
//   release                       ^ before fwd of layer L−k+i (waits for the copy)
//   backward  |L(L-1) bwd| ... |L(L-1-k) bwd| ... |L0 bwd|
//   h2d                        |== in L0 ==|     (starts at bwd_step of L−1−k+i)
//
// At most L−k layers' saved activations are on the device at once.
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planners/baselines/common.h"
#include "swapplan/planners/baselines/practice.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

// First and last op of one (micro-batch, layer) in one phase.
struct OpRange {
  int32_t first = -1;
  int32_t last = -1;
};

struct LayerTable {
  // Layer values (hints or logical groups) of FORWARD segments, ascending;
  // the rank of a value is the TE layer index.
  std::vector<int32_t> layers;
  // (micro-batch, rank) -> span, per phase (0 FORWARD, 1 BACKWARD).
  std::map<std::pair<int32_t, int32_t>, OpRange> spans[2];
  int32_t RankOf(int32_t layer) const {
    auto it = std::lower_bound(layers.begin(), layers.end(), layer);
    return it != layers.end() && *it == layer ? static_cast<int32_t>(it - layers.begin()) : -1;
  }
  const OpRange* Find(int ph, int32_t mb, int32_t rank) const {
    auto it = spans[ph].find({mb, rank});
    return it == spans[ph].end() ? nullptr : &it->second;
  }
};

LayerTable BuildTable(const Trace& trace, int32_t iteration, const LayerSegments& s) {
  const IterationInfo& iter = trace.iteration(iteration);
  LayerTable t;
  for (const LayerSegment& seg : s.segments) {
    if (seg.phase == Phase::kForward && seg.layer >= 0) t.layers.push_back(seg.layer);
  }
  std::sort(t.layers.begin(), t.layers.end());
  t.layers.erase(std::unique(t.layers.begin(), t.layers.end()), t.layers.end());
  for (const LayerSegment& seg : s.segments) {
    const int ph = seg.phase == Phase::kForward ? 0 : 1;
    const int32_t rank = t.RankOf(seg.layer);
    if (rank < 0) continue;
    const int32_t mb = trace.op(iter.op_begin + seg.first_op).micro_batch;
    OpRange& sp = t.spans[ph][{mb, rank}];
    sp.first = sp.first < 0 ? seg.first_op : std::min(sp.first, seg.first_op);
    sp.last = std::max(sp.last, seg.last_op);
  }
  return t;
}

int64_t Elements(const Trace& trace, TensorId t) {
  absl::Span<const int64_t> shape = trace.shape(t);
  if (shape.empty()) return trace.tensor(t).size_bytes;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

absl::Status TeOffloadOptions::Validate() const {
  auto bad = [](absl::string_view field, int64_t v) {
    return absl::InvalidArgumentError(
        absl::StrCat("te-offload options: ", field, " is ", v, "; must be >= 0"));
  };
  if (offload_layers < 0) return bad("offload_layers", offload_layers);
  if (min_elements < 0) return bad("min_elements", min_elements);
  if (logical_layers < 0) return bad("logical_layers", logical_layers);
  return absl::OkStatus();
}

const OptionTable<TeOffloadOptions>& TeOffloadOptionTable() {
  using O = TeOffloadOptions;
  using T = OptionType;
  static const OptionTable<O> table({
      {"offload_layers", T::kInt,
       "Offloaded layers k, layers 0..k-1 (TE's num_layers); 0: the smallest k that fits the "
       "budget (recorded as chosen)",
       "", [](const O& o) { return absl::StrCat(o.offload_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.offload_layers); }},
      {"min_elements", T::kInt,
       "Saved tensors with fewer elements stay on the device (TE: 262144)", "",
       [](const O& o) { return absl::StrCat(o.min_elements); },
       [](O& o, absl::string_view v) {
         int32_t n = 0;
         SWAPPLAN_RETURN_IF_ERROR(ParseOptionInt(v, &n));
         o.min_elements = n;
         return absl::OkStatus();
       }},
      {"logical_layers", T::kInt,
       "Logical layers when the trace has no layer hints (0: metadata model_layers, else 16)", "",
       [](const O& o) { return absl::StrCat(o.logical_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.logical_layers); }},
  });
  return table;
}

absl::Status TeOffloadPlanner::SetOption(absl::string_view name, absl::string_view value) {
  return TeOffloadOptionTable().SetValidated("te-offload", &options_, name, value);
}

absl::StatusOr<Policy> TeOffloadPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  const IterationInfo& iter = trace.iteration(it);
  SWAPPLAN_ASSIGN_OR_RETURN(LayerSegments segments,
                            SegmentLayers(trace, it, options_.logical_layers));
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));
  const LayerTable table = BuildTable(trace, it, segments);
  const int32_t L = static_cast<int32_t>(table.layers.size());
  if (options_.offload_layers > 0 && options_.offload_layers >= L) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("te-offload: offload_layers is ", options_.offload_layers,
                              "; iteration ", it, " has ", L,
                              " layers and TE offloads at most L - 1 of them"));
  }
  // Candidates: saved activations (a forward→backward window) of at least
  // min_elements, owned by the layer of their last forward use (the layer
  // whose forward saves them).
  struct Candidate {
    ActivationWindow w;
    int32_t mb = -1;
    int32_t rank = -1;
  };
  std::vector<Candidate> candidates;
  for (const ActivationWindow& w : ActivationWindows(trace, it)) {
    if (Elements(trace, w.tensor) < options_.min_elements) continue;
    const int32_t seg = segments.segment_of_op[w.last_forward_use];
    if (seg < 0) continue;
    const int32_t rank = table.RankOf(segments.segments[seg].layer);
    if (rank < 0) continue;
    candidates.push_back({w, trace.op(iter.op_begin + w.last_forward_use).micro_batch, rank});
  }
  auto build = [&](int32_t k) {
    TeOffloadOptions resolved = options_;
    resolved.offload_layers = k;
    Policy p = BaselinePolicy(problem, name(), TeOffloadOptionTable().ToParameters(resolved));
    for (const Candidate& c : candidates) {
      if (c.rank >= k) continue;
      const int32_t u = c.w.last_forward_use, v = c.w.first_backward_use;
      const OpRange* own = table.Find(0, c.mb, c.rank);
      const OpRange* release_layer = table.Find(0, c.mb, L - k + c.rank);
      const OpRange* reload_layer = table.Find(1, c.mb, L - 1 - k + c.rank);
      // Out when the owner's forward ends (the next layer's fwd_step).
      const int32_t out = std::clamp(own != nullptr ? own->last : u, u, v - 2);
      // Released before the forward of layer L−k+i.
      const int32_t release =
          std::clamp(release_layer != nullptr ? release_layer->first - 1 : out, out, v - 2);
      // Reloaded before the backward of layer L−1−k+i.
      const int32_t in =
          std::clamp(reload_layer != nullptr ? reload_layer->first : v, release + 1, v);
      PolicyItem item = MakePolicyItem(trace, it, c.w.tensor, out, release, in, v);
      item.release_waits_for_copy = true;
      p.items.push_back(std::move(item));
    }
    return p;
  };
  if (options_.offload_layers > 0 || L <= 1) {
    Policy p = build(options_.offload_layers);
    SWAPPLAN_RETURN_IF_ERROR(CheckPolicyFits(
        problem, unswapped,
        absl::StrCat("offloading ", p.items.size(), " activations of ", options_.offload_layers,
                     " of ", L, " layers"),
        &p));
    return p;
  }
  // The smallest k that fits (TE allows k <= L − 1).
  absl::Status last = absl::OkStatus();
  for (int32_t k = 0; k < L; ++k) {
    Policy p = build(k);
    last = CheckPolicyFits(problem, unswapped,
                           absl::StrCat("offloading ", p.items.size(), " activations of ", k,
                                        " of ", L, " layers (the most TE allows)"),
                           &p);
    if (last.ok()) return p;
  }
  return last;
}

}  // namespace swapplan
