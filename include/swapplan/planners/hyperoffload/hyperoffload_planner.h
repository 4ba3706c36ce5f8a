// HyperOffload planner (seed 003 §4–5): explicit cache operators on a
// memory tier, placed by execution-order refinement.
//
//   HyperOffloadPlanner planner;                      // options: the table below
//   SWAPPLAN_RETURN_IF_ERROR(planner.SetOption("tier", "remote"));
//   SWAPPLAN_ASSIGN_OR_RETURN(Policy p, planner.Plan(problem));
//   // p.items: Store / Detach / Prefetch per offloaded window (policy.h),
//   // p.schedule: the refined order when it differs from the recorded one.
//
// Steps (docs/hyperoffload.md):
//   1. Lifetime analysis over the iteration: for every ACTIVATION tensor,
//      the idle gaps between consecutive uses, timed on the op timeline
//      (trace/op_times.h, the device's compute_time_scale).
//   2. Candidates by size and lifetime (§5.1): a gap qualifies when the
//      tensor has at least min_tensor_bytes, at most max_uses uses in the
//      iteration (a finely accessed tensor stays), and the gap's compute
//      time is at least min_idle_ratio x (Store + Prefetch copy time) on
//      its tier (a short-lived tensor stays: the transfers would cost more
//      than the memory is worth).
//   3. Tier: `auto` puts a window on the remote tier (device tier 1) while
//      the bytes put there stay within this rank's capacity of it (a
//      conservative sum), else on the host; `host` / `remote` force one.
//   4. Selection: by bytes x idle time, largest first, until the planned
//      peak (a range-add / max segment tree over the unswapped curve) fits
//      the budget; `offload_all` keeps every candidate (§5.1: offload what
//      is idle, whatever the budget).
//   5. Cache operators: Store after the last use before the gap, Detach at
//      the op during which the Store completes (per-tier FIFO on the
//      timeline); Prefetches queued on each tier's load stream, placed
//      backward from the last consumer (src/planners/hyperoffload/load_queue.h); both repeated in
//      rounds while the peak is over, taking more candidates. Then the
//      Prefetches are placed by the execution-order refinement
//      (src/planners/hyperoffload/refine.h) with the dataflow graph's legal
//      reorderings (trace/dataflow.h) — the refined order becomes the
//      policy's schedule. A later window of a tensor not written since it
//      came back from the same tier is a Detach without a Store (`clean`).
//   KV cache (inference, kv_cache.h): the gaps between the decode steps'
//      reads of each layer's prompt cache are candidates by option
//      kv_offload; a tensor's windows share its tier, and every window after
//      the first one kept is clean (one Store per tensor, then read-only
//      Prefetches).
//   6. Parameters and optimizer states (persistent.h), when every
//      activation window leaves the peak over the budget: a wrapping window
//      per tensor plus clean windows between its uses, only those off the
//      device at an op still over the budget.
//   7. Release waits, when even that leaves the peak over: Detaches move
//      back to where each Store completes alone, then to the Store's op
//      at the planned peak (the next op waits for the copy), taking
//      windows left out of the selection if need be. When step 6 took
//      anything, the plan without it (release waits on activations only)
//      is made too and the faster under sim/simulator.h is returned.
//   8. The policy is checked (sim/checker.h, release points marked as
//      planned waits where the FIFO is late); a reordered policy that
//      does not fit falls back to the recorded order.
//
// Complexity: O(ops + tensors + uses + E log E) for the timeline and the
// dataflow graph, O(C log C + C log ops) per selection round (at most 16)
// for C candidates, O(C) per window moved by step 7's second part, plus
// the refinement (refine.h) and the checker.
#ifndef SWAPPLAN_PLANNERS_HYPEROFFLOAD_HYPEROFFLOAD_PLANNER_H_
#define SWAPPLAN_PLANNERS_HYPEROFFLOAD_HYPEROFFLOAD_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/hyperoffload/kv_cache.h"
#include "swapplan/planners/option_table.h"
#include "swapplan/planners/planner.h"

namespace swapplan {

enum class TierChoice : uint8_t {
  kAuto = 0,    // the remote tier while it has room, else the host
  kHost = 1,    // tier 0 only
  kRemote = 2,  // tier 1 only (the device model must have one)
};
// "auto", "host", "remote"; ParseTierChoice false for anything else.
absl::string_view TierChoiceName(TierChoice t);
bool ParseTierChoice(absl::string_view name, TierChoice* out);

struct HyperOffloadOptions {
  // Tensors smaller than this stay on the device.
  int64_t min_tensor_bytes = int64_t{1} << 20;
  // A gap qualifies when its compute time is at least this times the
  // Store + Prefetch copy time of the tensor (dimensionless).
  double min_idle_ratio = 2.0;
  // Tensors used more often than this in the iteration stay (finely
  // accessed).
  int32_t max_uses = 64;
  // Where offloaded windows go.
  TierChoice tier = TierChoice::kAuto;
  // Refinement cost model: weight of one ns of device residency against one
  // ns of exposed transfer latency (refine.h).
  double residency_weight = 0.001;
  // Reorder independent ops around prefetch consumers (the policy then
  // carries a schedule, which the eager runtime refuses).
  bool reorder = true;
  // Ops after a consumer scanned for independent ones, and the most hoisted
  // before one consumer.
  int32_t reorder_scan_ops = 64;
  int32_t max_hoisted_ops = 8;
  // Weigh each tier's load stream as a queue: Prefetches placed backward
  // from the last consumer so that every copy ends in time for its own
  // consumer and for the next copy on the stream (load_queue.h); false:
  // each just in time for its own consumer alone.
  bool stream_contention = true;
  // Also offload parameters and optimizer states (persistent.h: wrapping
  // windows across iterations plus clean windows between their uses) when
  // every activation window together leaves the peak over the budget.
  bool offload_parameters = true;
  // When every candidate together leaves the peak over the budget because
  // the queued Stores complete too late, move Detaches back to where each
  // Store would complete alone (in Store order, until the peak fits): the
  // op after such a Detach waits for its Store, a planned stall
  // (Chameleon's release waits, src/planners/chameleon/release_wait.cc).
  bool release_waits = true;
  // Keep every activation candidate, not only those needed to fit the
  // budget (parameters and optimizer states still only when needed).
  bool offload_all = false;
  // KV-cache tensors of inference traces (kv_cache.h): `fit` makes every
  // idle gap of one a candidate whatever its idle ratio and use count (it
  // trades decode time for capacity, as §7.3 does), `all` offloads every
  // such gap, `off` treats them as any activation.
  KvOffload kv_offload = KvOffload::kFit;

  // InvalidArgument naming the field: a negative size or count, a ratio or
  // weight negative or not finite.
  absl::Status Validate() const;
};
const OptionTable<HyperOffloadOptions>& HyperOffloadOptionTable();

class HyperOffloadPlanner : public Planner {
 public:
  explicit HyperOffloadPlanner(HyperOffloadOptions options = {}) : options_(options) {}
  std::string name() const override { return "hyperoffload"; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override {
    return HyperOffloadOptionTable().Describe(options_);
  }
  const HyperOffloadOptions& options() const { return options_; }

 protected:
  // InvalidArgument for tier `remote` on a device without a tier;
  // ResourceExhausted (naming the op and the bytes over) when every
  // candidate together does not fit.
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  HyperOffloadOptions options_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_HYPEROFFLOAD_HYPEROFFLOAD_PLANNER_H_
