// Pieces shared by the baseline planners (ideal, noswap, recompute, vdnn,
// bucket, lru): layer segmentation of an iteration, the forward→backward idle
// windows of activations, policy items with their exact keys, and the
// op-indexed peak of a set of items (the simulator's memory model without
// time).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(LayerSegments layers, SegmentLayers(trace, 0, 0));
//   for (const ActivationWindow& w : ActivationWindows(trace, 0)) {
//     const LayerSegment& fwd = layers.segments[layers.segment_of_op[w.last_forward_use]];
//   }
//   SWAPPLAN_RETURN_IF_ERROR(CheckPolicyFits(problem, policy));  // ResourceExhausted if not
//
// Layers. A segment is a maximal run of consecutive FORWARD (or BACKWARD) ops
// of one layer of one micro-batch. The layer of an op is its `layer` hint
// when any op of that phase carries one; otherwise the phase's ops are split
// into L equal groups by count (seeds 000/001 §4.1, Eq. 1), L = the option,
// else the trace's model_layers, else kDefaultLogicalLayers.
//
// Complexity: SegmentLayers O(ops); ActivationWindows O(tensors + uses);
// PolicyPeak O(ops + items) given the unswapped curve.
#ifndef SWAPPLAN_SRC_PLANNERS_BASELINES_COMMON_H_
#define SWAPPLAN_SRC_PLANNERS_BASELINES_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/planner.h"
#include "swapplan/policy/policy.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// Logical layers per phase when the trace has neither layer hints nor a
// model layer count.
inline constexpr int32_t kDefaultLogicalLayers = 16;

struct LayerSegment {
  int32_t first_op = 0;  // local op indices, inclusive
  int32_t last_op = 0;
  Phase phase = Phase::kForward;
  // Layer hint, or the logical group index.
  int32_t layer = -1;
};

struct LayerSegments {
  std::vector<LayerSegment> segments;  // in op order
  // Per local op: its segment, -1 for OPTIMIZER / OTHER ops.
  std::vector<int32_t> segment_of_op;
  // Per segment: the previous / next segment of the same phase in op order
  // (-1 when none).
  std::vector<int32_t> prev_same_phase;
  std::vector<int32_t> next_same_phase;
  // Whether each phase used hints (index: 0 FORWARD, 1 BACKWARD), and L
  // for the phases that did not.
  bool from_hints[2] = {false, false};
  int32_t logical_layers = 0;
};

// Segments of iteration `iteration`; `logical_layers` 0 picks the default
// described above. InvalidArgument for a bad iteration or negative L.
absl::StatusOr<LayerSegments> SegmentLayers(const Trace& trace, int32_t iteration,
                                            int32_t logical_layers);

// An activation's idle window: its last FORWARD use and the next use, which
// is a BACKWARD op at least two ops later (local indices).
struct ActivationWindow {
  TensorId tensor = kNoTensor;
  int32_t last_forward_use = 0;
  int32_t first_backward_use = 0;
  int64_t size_bytes = 0;
};

// Every ACTIVATION tensor of the iteration with such a window, ordered by
// last_forward_use (ties: tensor id).
std::vector<ActivationWindow> ActivationWindows(const Trace& trace, int32_t iteration);

// The uses of tensor `t` (global op indices, ascending) within iteration
// `iter`. O(log uses).
absl::Span<const OpIndex> UsesIn(const Trace& trace, const IterationInfo& iter, TensorId t);

// Whether op `op` (global index) writes tensor `t` (has it among its
// outputs). O(outputs of op).
bool OpWrites(const Trace& trace, OpIndex op, TensorId t);

// A policy item for tensor `t` with the exact key (trace id) and the parts of
// the runtime key known without the op-frequency table: dtype, size, shape
// and op_count (uses up to and including swap_out_op). Op indices local.
PolicyItem MakePolicyItem(const Trace& trace, int32_t iteration, TensorId t, int32_t swap_out_op,
                          int32_t release_op, int32_t swap_in_op, int32_t first_use_op);

// Appends to `p` one RECOMPUTE item per window of a group of activations
// dropped together after their last forward use and re-run together (one
// recipe of `group_recompute_ns`, charged to the item needed first) when the
// first of them is needed in backward. Requires a non-empty group.
// O(group × uses).
void AppendGroupRecompute(const Trace& trace, int32_t iteration,
                          const std::vector<ActivationWindow>& group, int64_t group_recompute_ns,
                          Policy* p);

// A policy for `problem` from planner `name` with no items yet: fingerprint,
// budget, bandwidths, planner name and parameters.
Policy BaselinePolicy(const PlanningProblem& problem, absl::string_view name,
                      std::vector<std::pair<std::string, std::string>> parameters);

// Makes a policy's RECOMPUTE claims exact (policy/resolver.h): drops the
// items whose recipe cannot run (a tensor in its chain is random-state, in
// place, ...) until none is left, then raises the stated recompute_ns of
// each position's first item by what the recipe costs beyond what the
// items state. Requires the policy's fingerprint. O(rounds × resolution),
// rounds <= items dropped + 1.
absl::Status MakeRecomputeExact(const PlanningProblem& problem, Policy* p);
// The same with the caller's resolver of the problem's iteration and its
// resolution options (all_issues is set here; a recipe memo and analysis in
// `options` are reused across the rounds). Same result.
absl::Status MakeRecomputeExact(const PlanningProblem& problem, const PolicyResolver& resolver,
                                ResolveOptions options, Policy* p);
// The same, also setting *resolved to the resolution of the final *p, as
// resolver.Resolve(*p, problem.device, options with all_issues) gives it:
// the last round's resolution with the raised costs written in (the items'
// recompute_ns, the recipes' stated_ns, no recompute-understated issue for
// a raised recipe), without resolving again. `current`, when given: *p's
// resolution as that Resolve gives it, used (moved from) as the first
// round's instead of resolving again. O(rounds × resolution).
absl::Status MakeRecomputeExact(const PlanningProblem& problem, const PolicyResolver& resolver,
                                ResolveOptions options, Policy* p, ResolvedPolicy* resolved,
                                ResolvedPolicy* current = nullptr);

// Unswapped bytes in use during each op of the problem's iteration (from
// problem.curve when given).
absl::StatusOr<std::vector<int64_t>> IterationUnswappedBytes(const PlanningProblem& problem);

struct PolicyPeakInfo {
  int64_t bytes = 0;
  int32_t op = -1;  // local index of the first op at the peak
};

// Peak of `unswapped` (per op of the iteration) with every item's tensor off
// the device from release_op + 1 to swap_in_op − 1.
PolicyPeakInfo PolicyPeak(const std::vector<int64_t>& unswapped, const Policy& policy);

// Sets policy.expected_peak_bytes; OK when it is within the budget, else
// ResourceExhausted: "<planner>: <what> peaks at X at op K (name), Y over the
// budget of Z".
absl::Status CheckPolicyFits(const PlanningProblem& problem, const std::vector<int64_t>& unswapped,
                             absl::string_view what, Policy* policy);

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_BASELINES_COMMON_H_
