// Recomputation as a first-class decision: for one trace iteration, which
// tensors can be dropped and produced again by re-running recorded ops, what
// that costs on the compute stream and how much memory it holds while it
// runs. The checker, the resolver, the simulator and the hybrid planner all
// price RECOMPUTE items (policy/policy.h) with this one definition.
//
// Recipe. To materialise a set of target tensors before local op `at`, the
// producing op of each target is re-run; an input of a re-run op that is not
// on the device at that moment (freed by the trace, or off the device under
// the policy) is itself produced again — transitively, a chain — and every
// re-run op runs once even when several targets need it. Ops re-run in their
// recorded order:
//
//   compute  ... op at-1 | p(x) | p(t) | op at ...
//   device          x allocated ^     ^ x freed (an intermediate), t kept
//
// Cost: the sum of the re-run ops' durations (trace/op_times.h, scaled by
// the device model's compute_time_scale). Transient peak: the most bytes
// the re-run holds at once beyond the targets (whose blocks the policy
// counts from `at` anyway): intermediates from their op to the last re-run
// op reading them, and every other output of a re-run op during that op.
// Inputs found on the device are read in place and add nothing.
//
// Eligibility (RecomputeBlocker): a tensor can be produced again only when
// exactly one op of the iteration writes it and that op
//   * draws no random numbers — unless the trace's metadata attribute
//     `rng_state_restorable` is "true" or "1" (the recorder stashes and
//     restores the generator state, as torch.utils.checkpoint does);
//   * is not in place (a trailing '_' in its ATen name, or it reads what it
//     writes), and no other op writes the tensor; in a recipe, no input of
//     a re-run op is written again between that op and `at` (the value it
//     read is gone);
//   * is not a view or alias of another storage (view, t, transpose, slice,
//     expand, ...) and the tensor shares no recorded storage id;
//   * has no side effect (host sync such as _local_scalar_dense, running
//     statistics of batch_norm, record_stream, resize_/set_);
//   * is not a collective (c10d, nccl, all_reduce, all_gather, ...);
//   * is not an optimizer update (an op of the OPTIMIZER phase).
// Names are matched on the part after "::", case-sensitively, once per name.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(RecomputeAnalysis a,
//                             RecomputeAnalysis::Build(trace, 0, device));
//   if (a.blocker(t) == RecomputeBlocker::kNone) {
//     RecomputeRecipe r = a.Plan({t}, at, [&](TensorId x) { return resident(x); });
//     if (r.ok()) charge(r.cost_ns, r.transient_peak_bytes);
//   }
//
// Complexity: Build O(ops + uses of the iteration + tensors); Plan
// O(u log t + t^2) with u the uses of the re-run ops and t the tensors they
// touch (sorted-vector sets: the t^2 is memmove of ids, cheaper than
// hashing for the few dozen tensors of a recipe).
#ifndef SWAPPLAN_TRACE_RECOMPUTE_H_
#define SWAPPLAN_TRACE_RECOMPUTE_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/device/device_model.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// Why a tensor cannot be produced again (kNone: it can).
enum class RecomputeBlocker : uint8_t {
  kNone = 0,
  kNoProducer = 1,   // no op of the iteration writes it (input, parameter, earlier iteration)
  kRandomState = 2,  // its op draws random numbers; the trace records no restorable RNG state
  kInPlace = 3,      // written by several ops, in place, or an input is written later
  kAliasing = 4,     // a view / alias of another storage
  kSideEffect = 5,   // its op has a side effect (host sync, running statistics)
  kCollective = 6,   // its op is collective communication
  kOptimizer = 7,    // its op is an optimizer update
  kNotBefore = 8,    // its op does not run before the point it is needed at
};
// "none", "no-producer", "random-state", "in-place", "aliasing",
// "side-effect", "collective", "optimizer", "not-before".
absl::string_view RecomputeBlockerName(RecomputeBlocker b);

// The op-level blocker of an op name (no tensor context): kRandomState
// (unless rng_state_restorable), kInPlace, kAliasing, kSideEffect,
// kCollective or kNone. The phase rule (kOptimizer) is not name-based.
RecomputeBlocker ClassifyOpName(absl::string_view name, bool rng_state_restorable);

struct RecomputeRecipe {
  // kNone when every target can be produced; otherwise why `blocked_tensor`
  // (a target or a chained input) cannot, and the other fields are partial.
  RecomputeBlocker blocker = RecomputeBlocker::kNone;
  TensorId blocked_tensor = kNoTensor;
  // Local ops re-run, ascending.
  std::vector<int32_t> ops;
  // Tensors produced again that are not targets (chained inputs), ascending.
  std::vector<TensorId> intermediates;
  // Inputs of re-run ops read from the device (must be resident at `at`),
  // ascending, without duplicates.
  std::vector<TensorId> leaves;
  // Sum of the re-run ops' scaled durations.
  int64_t cost_ns = 0;
  // Most bytes held at once beyond the targets (see the header comment).
  int64_t transient_peak_bytes = 0;

  bool ok() const { return blocker == RecomputeBlocker::kNone; }
};

class RecomputeAnalysis {
 public:
  // Analyses iteration `iteration` of `trace` (which must outlive the
  // result): producers, blockers and op durations (OpTimeModel::kAuto,
  // scaled by device.compute_time_scale). When the trace has neither
  // recorded durations nor an iteration time, every cost is 0
  // (has_costs() false). InvalidArgument for a bad iteration or scale.
  static absl::StatusOr<RecomputeAnalysis> Build(const Trace& trace, int32_t iteration,
                                                 const DeviceModel& device);

  const Trace& trace() const { return *trace_; }
  int32_t iteration() const { return iteration_; }
  int32_t num_ops() const { return static_cast<int32_t>(op_ns_.size()); }
  bool rng_state_restorable() const { return rng_state_restorable_; }
  bool has_costs() const { return has_costs_; }

  // The local op that writes `t` in this iteration (its first writer when
  // several do), or -1.
  int32_t producer(TensorId t) const { return producer_[t]; }
  // Whether `t` can be produced again at all (ignoring where it is needed).
  RecomputeBlocker blocker(TensorId t) const { return blocker_[t]; }
  // Scaled duration of local op `op`.
  int64_t op_ns(int32_t op) const { return op_ns_[op]; }

  // The recipe producing `targets` again just before local op `at`;
  // `available(x)` says whether tensor x is on the device at that moment
  // (targets are never asked). Under a schedule, `pos` maps local ops to
  // positions (empty: recorded order) and "before" compares positions.
  // Requires 0 <= at < num_ops() and targets of this trace.
  RecomputeRecipe Plan(absl::Span<const TensorId> targets, int32_t at,
                       absl::FunctionRef<bool(TensorId)> available,
                       absl::Span<const int32_t> pos = {}) const;

 private:
  RecomputeAnalysis() = default;

  const Trace* trace_ = nullptr;
  int32_t iteration_ = 0;
  OpIndex begin_ = 0;
  bool rng_state_restorable_ = false;
  bool has_costs_ = false;
  std::vector<int32_t> producer_;
  std::vector<RecomputeBlocker> blocker_;
  std::vector<int64_t> op_ns_;
  // Per tensor written by several ops: every writing local op (CSR).
  std::vector<int32_t> writer_begin_, writer_ops_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_RECOMPUTE_H_
