// The baseline planners of SPEC §6. Each turns a PlanningProblem into a
// policy that the evaluation simulator judges like any other; none of them
// looks at time except full recomputation (which needs the forward time it
// re-runs). What each does, exactly:
//
// ideal      No items. Judged with unlimited memory: the time an iteration
//            takes when nothing has to move (the denominator of "overhead").
// noswap     No items. Feasible only when the unswapped peak fits the budget;
//            ResourceExhausted (how far over, where) otherwise.
// recompute  Full recomputation, Megatron-style. Per forward layer segment
//            (common.h): every ACTIVATION made by the layer and used only
//            inside it in the forward pass, and again in the backward pass,
//            is dropped after its last forward use; the layer's inputs (made
//            by an earlier layer) are kept as checkpoints. When the first of
//            the dropped tensors is needed in the backward pass, the whole
//            layer forward is re-run on the compute stream (the sum of the
//            segment's op durations — recorded or Eq. 1) and all of them are
//            back from that op on. Items are RECOMPUTE with release_op =
//            swap_out_op = last forward use, swap_in_op = that trigger; the
//            layer's time is on the item needed first. The recipes are then
//            made exact (trace/recompute.h via the resolver): items whose
//            tensor cannot be recomputed (random state, in place, ...) are
//            kept on the device, and a recipe that chains beyond the
//            segment (an input freed or dropped elsewhere) adds its extra
//            cost to that first item. Not budget-aware: it
//            drops everything it can and fails when that is still too much.
// vdnn       vDNN-style swap-all (Rhu et al., MICRO'16, "vDNN_all"): every
//            ACTIVATION with a forward→backward idle window goes out after
//            its last forward use; its block is released at the end of that
//            forward layer — the layer-boundary synchronisation that made
//            vDNN stall when a copy outlasted the layer; it is prefetched at
//            the start of the backward layer before the one that needs it
//            ("one layer ahead"), or at its own layer's start when none
//            precedes. Not budget-aware. Items carry
//            release_waits_for_copy: the op after the layer boundary waits
//            for a copy that outlasts the layer (the stall vDNN had).
// bucket     Layer-bucket heuristic like the production SmartSwap v2: only
//            activations of at least 20 MiB, each out after its last forward
//            use; the layer's bucket is released at the end of the *next*
//            forward layer (one layer of slack for the copy instead of a
//            synchronisation), and swapped in at the start of the backward
//            layer before the one that needs it. No scoring, no simulation,
//            not budget-aware. Items carry release_waits_for_copy, as vdnn's.
// lru        On-demand LRU, ODSwap of seed 002 §6.1. Walks the ops with the
//            budget: when op k would exceed it, evicts ACTIVATION tensors in
//            least-recently-used order (not used by op k, needed again later
//            in the iteration) until it fits. An eviction is on demand: the
//            copy is issued just before op k (swap_out_op = release_op =
//            k − 1) and op k waits for it (release_waits_for_copy).
//            Prefetching follows the order seen in the previous iteration: the swap-ins are issued in the order
//            the evicted tensors were needed back, each as early as the
//            budget allows (never before the previous one's trigger, never
//            before its own release). ODSwap learns that order in its first
//            iteration and applies it from the second; we plan one iteration,
//            so the "previous iteration" is the same op sequence (identical
//            in steady-state training, which is what the fingerprint checks).
//            ResourceExhausted when even evicting every candidate does not
//            fit an op.
//
//   std::unique_ptr<Planner> p = std::make_unique<LayerSwapPlanner>("vdnn", VdnnOptions());
//   absl::StatusOr<Policy> policy = p->Plan(problem);   // Planner::Plan
#ifndef SWAPPLAN_PLANNERS_BASELINES_BASELINES_H_
#define SWAPPLAN_PLANNERS_BASELINES_BASELINES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/planners/planner.h"

namespace swapplan {

// Complexity: O(1) plus the memory curve when problem.curve is absent.
class IdealPlanner : public Planner {
 public:
  std::string name() const override { return "ideal"; }
  bool unlimited_memory() const override { return true; }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;
};

// Complexity: O(ops of the iteration) given the curve.
class NoSwapPlanner : public Planner {
 public:
  std::string name() const override { return "noswap"; }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;
};

struct RecomputeOptions {
  // Logical layers per phase when the trace has no layer hints; 0 = the
  // trace's model_layers, else kDefaultLogicalLayers.
  int32_t logical_layers = 0;

  // InvalidArgument when logical_layers < 0.
  absl::Status Validate() const;
};

// The one declaration of the recompute options (planners/option_table.h):
// logical_layers.
const OptionTable<RecomputeOptions>& RecomputeOptionTable();

// Complexity: O(ops + tensors + uses of the iteration) given the curve.
class RecomputePlanner : public Planner {
 public:
  explicit RecomputePlanner(RecomputeOptions options = {}) : options_(options) {}
  std::string name() const override { return "recompute"; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override {
    return RecomputeOptionTable().Describe(options_);
  }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  RecomputeOptions options_;
};

struct LayerSwapOptions {
  // Activations smaller than this stay on the device.
  int64_t min_bytes = 0;
  // Release at the end of the forward layer this many layers after the one
  // holding the last forward use (0 = the same layer).
  int32_t release_lag_layers = 0;
  // Swap in at the start of the backward layer this many layers before the
  // one holding the first backward use (0 = that layer itself).
  int32_t prefetch_lead_layers = 1;
  // As RecomputeOptions::logical_layers.
  int32_t logical_layers = 0;

  // InvalidArgument naming the field when negative.
  absl::Status Validate() const;
};

// The one declaration of the vdnn/bucket options (planners/option_table.h):
// min_bytes, release_lag_layers, prefetch_lead_layers, logical_layers.
const OptionTable<LayerSwapOptions>& LayerSwapOptionTable();

// vdnn: everything, release in the same layer, prefetch one layer ahead.
LayerSwapOptions VdnnOptions();
// bucket: >= 20 MiB, release one layer later, prefetch one layer ahead.
LayerSwapOptions BucketOptions();

// Complexity: O(ops + tensors + uses of the iteration) given the curve.
class LayerSwapPlanner : public Planner {
 public:
  LayerSwapPlanner(std::string name, LayerSwapOptions options)
      : name_(std::move(name)), options_(options) {}
  std::string name() const override { return name_; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override {
    return LayerSwapOptionTable().Describe(options_);
  }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  std::string name_;
  LayerSwapOptions options_;
};

// Complexity: O((ops + uses + evictions) log ops) given the curve.
class LruPlanner : public Planner {
 public:
  std::string name() const override { return "lru"; }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_BASELINES_BASELINES_H_
