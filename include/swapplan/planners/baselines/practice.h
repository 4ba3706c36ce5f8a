// The baselines users pick in practice (issue 23): Megatron's selective
// recomputation, TransformerEngine / Megatron CPU activation offloading and
// PyTorch's torch.autograd.graph.save_on_cpu, each modelled on a recorded
// trace as a policy the evaluation simulator judges like any other planner's.
// What each reproduces upstream, and where it simplifies: docs/baselines.md.
//
// selective    Megatron-LM --recompute-granularity selective (core_attn,
//              Korthikanti et al. 2023): the activations made inside the
//              attention core and used only there — the softmax
//              probabilities, the dropout on them and its mask; with a fused
//              (flash) kernel, what the kernel saves besides its output (the
//              log-sum-exp) — are dropped after their last forward use; the
//              core's inputs (q, k, v) and its output stay. When the first
//              dropped tensor is needed in backward, the core's forward ops
//              are re-run on the compute stream (sum of their durations,
//              RECOMPUTE items, the time on the item needed first). The
//              matcher: AttentionCores below. A trace without attention
//              gives an empty policy (feasible when nothing has to go;
//              ResourceExhausted naming the reason otherwise).
// te-offload   TransformerEngine's DefaultOffloadSynchronizer
//              (get_cpu_offload_context(num_layers=k, model_layers=L)): the
//              saved activations (>= 256 Ki elements) of layers 0..k−1 are
//              copied out once their layer's forward ends, released before
//              the forward of layer L−k+i (waiting for the copy), and
//              reloaded before the backward of layer L−1−k+i. k is the option
//              or, by default, the smallest in 0..L−1 whose policy fits the
//              budget (recorded in the policy parameters as chosen_k).
// save-on-cpu  torch.autograd.graph.save_on_cpu: every saved activation is
//              copied out as it is saved (after its last forward use) and the
//              next op waits for the copy (the synchronous .cpu()); it comes
//              back when backward unpacks it — the copy in starts at its first
//              backward use, which waits (no prefetch). Not budget-aware.
//
//   std::unique_ptr<Planner> p = std::make_unique<TeOffloadPlanner>();
//   absl::StatusOr<Policy> policy = p->Plan(problem);   // Planner::Plan
#ifndef SWAPPLAN_PLANNERS_BASELINES_PRACTICE_H_
#define SWAPPLAN_PLANNERS_BASELINES_PRACTICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/planners/planner.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// One attention core of an iteration: its forward ops (local indices,
// ascending) and whether it was a fused kernel.
struct AttentionCore {
  std::vector<int32_t> ops;
  bool fused = false;
};

// The attention cores of `iteration`, in op order. An op name matches
// case-insensitively by substring; only FORWARD ops are considered and a name
// containing "backward", "_bwd" or "grad" never matches.
//   fused:   a name containing flash_attention, flash_attn, fusion_attention,
//            efficient_attention, cudnn_attention, fused_attn or
//            dot_product_attention is a core by itself.
//   classic: an op whose name contains "softmax" (not "log_softmax") whose
//            scores come from a batched matmul (a name containing "bmm" or
//            "matmul": QKᵀ), found by following the largest input back
//            through at most 8 producers (scaling, masking); then, among the
//            ops reading the probabilities in the next 64 ops, the first
//            batched matmul, or a dropout followed by the first batched
//            matmul reading its outputs (attention × V). The core is every
//            FORWARD op from QKᵀ to attention × V (to the softmax when none
//            is found). A softmax without a batched-matmul producer (an MoE
//            router, a loss) is not a core.
// Complexity: O(ops + uses of the iteration).
std::vector<AttentionCore> AttentionCores(const Trace& trace, int32_t iteration);

struct SelectiveOptions {
  // Whether fused (flash) attention kernels count as cores. Megatron still
  // checkpoints core_attn with them (its config warns it is nearly useless:
  // the kernel keeps no s² tensors); false leaves them alone.
  bool fused_cores = true;

  // Always OK (kept for the uniform options interface).
  absl::Status Validate() const;
};
const OptionTable<SelectiveOptions>& SelectiveOptionTable();

// Complexity: O(ops + tensors + uses of the iteration) given the curve.
class SelectivePlanner : public Planner {
 public:
  explicit SelectivePlanner(SelectiveOptions options = {}) : options_(options) {}
  std::string name() const override { return "selective"; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override {
    return SelectiveOptionTable().Describe(options_);
  }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  SelectiveOptions options_;
};

struct TeOffloadOptions {
  // Offloaded layers k (TE's num_layers); 0 = the smallest k that fits the
  // budget. Must be below the number of layers L (TE enforces k <= L − 1).
  int32_t offload_layers = 0;
  // Saved tensors with fewer elements stay on the device (TE's
  // _check_if_offload: 256 × 1024).
  int64_t min_elements = 256 * 1024;
  // Logical layers when the trace has no layer hints (0 = model_layers,
  // else kDefaultLogicalLayers).
  int32_t logical_layers = 0;

  // InvalidArgument naming the field when negative.
  absl::Status Validate() const;
};
const OptionTable<TeOffloadOptions>& TeOffloadOptionTable();

// Complexity: O(L × (ops + items)) given the curve (L candidate k's).
class TeOffloadPlanner : public Planner {
 public:
  explicit TeOffloadPlanner(TeOffloadOptions options = {}) : options_(options) {}
  std::string name() const override { return "te-offload"; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override {
    return TeOffloadOptionTable().Describe(options_);
  }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  TeOffloadOptions options_;
};

struct SaveOnCpuOptions {
  // Saved activations smaller than this stay on the device (0 = every one,
  // as save_on_cpu packs every saved tensor).
  int64_t min_bytes = 0;

  // InvalidArgument when negative.
  absl::Status Validate() const;
};
const OptionTable<SaveOnCpuOptions>& SaveOnCpuOptionTable();

// Complexity: O(ops + tensors + uses of the iteration) given the curve.
class SaveOnCpuPlanner : public Planner {
 public:
  explicit SaveOnCpuPlanner(SaveOnCpuOptions options = {}) : options_(options) {}
  std::string name() const override { return "save-on-cpu"; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override {
    return SaveOnCpuOptionTable().Describe(options_);
  }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  SaveOnCpuOptions options_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_BASELINES_PRACTICE_H_
