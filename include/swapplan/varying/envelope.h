// Iteration envelope: what a planner should plan against when the next
// iteration will not be the one it saw. MoE routing moves tokens between
// experts from one iteration to the next, so an expert's tensors grow or
// shrink while the op sequence stays the same; a policy planned on one
// iteration swaps tensors that are smaller the next time (frees less than
// planned) while other ops need more (seed 001 §2.3: "undersized tensor
// swaps, failing to prevent OOM").
//
// The envelope folds the iterations a runtime observed during GenPolicy
// into two tables, keyed by role (tensor_roles.h: the same op of the
// iteration, the same position among its tensors — what "the same tensor"
// means across iterations):
//
//   tensor role -> smallest and largest size seen     (what a swap frees)
//   op role     -> smallest and largest bytes in use  (what must fit)
//
// and Build() turns one observed iteration into a planning input that is
// the worst case of both: every tensor shrunk to the least its role was
// seen to free, and at every op a headroom block (allocated before the op,
// freed after it, used by nothing — so never a swap candidate, never in a
// runtime key) that lifts the bytes in use to the most that op was seen to
// need. `spread_margin` extrapolates beyond what was seen by that multiple
// of the observed spread (max − min):
//
//   size'(t)   = max(1, min_size − margin · (max_size − min_size))
//   bytes'(op) = max_bytes + margin · (max_bytes − min_bytes)
//   headroom(op) = max(0, bytes'(op) − bytes of op with the sizes')
//
//   bytes in use at op j, three observations and the envelope:
//     ^           ._.                 max over observations (+ margin)
//     |      .___/ \___.              = what the planner sees: shrunk
//     |  ___/           \___          tensors + headroom blocks
//     +----------------------------> op
//
// A policy planned on the envelope names the tensors of the built iteration
// (the same file ids, ops and runtime keys as the observed one; sizes are
// the shrunk ones), so it is matched and applied like any other. At run
// time a matched tensor is usually larger than its item says: the item
// still applies with the tensor's real size (it frees more, its copies take
// longer), and the headroom covers the ops that need more.
//
//   IterationEnvelope env;                       // one per policy key
//   for each GenPolicy iteration t:  env.Observe(seg_t, 0);
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace plan_on, env.Build(seg_t, 0));
//   problem.trace = &plan_on;  ... planner->Plan(problem)
//
// Complexity: Observe O(ops + uses + tensors of the trace) time, the tables
// O(tensor and op roles seen); Build the same plus TraceBuilder::Finish on
// a trace of at most (tensors + ops) tensors. Not thread-safe.
#ifndef SWAPPLAN_VARYING_ENVELOPE_H_
#define SWAPPLAN_VARYING_ENVELOPE_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct EnvelopeOptions {
  // Extrapolation beyond the observed range, as a multiple of each
  // quantity's observed spread (max − min); 0 = exactly what was seen. With
  // k observations of a random size, a new one falls below the observed
  // minimum with probability about 1/(k+1); one spread below it, far less
  // (docs/varying.md gives the measured miss rates).
  double spread_margin = 1.0;

  // InvalidArgument when spread_margin is negative or not finite.
  absl::Status Validate() const;
};

// What Build() did (for reports and tests).
struct EnvelopeStats {
  // Tensors whose size was lowered, and by how many bytes in all.
  int32_t tensors_shrunk = 0;
  int64_t bytes_shrunk = 0;
  // Ops given a headroom block, the largest block, and the largest bytes in
  // use the built iteration has (its unswapped peak).
  int32_t ops_with_headroom = 0;
  int64_t max_headroom_bytes = 0;
  int64_t peak_bytes = 0;
};

// Unswapped bytes in use during each op of iteration `iteration` (index =
// local op): the sizes of the tensors whose lifetime covers it, as
// curve/memory_curve.h counts them. O(ops + tensors).
std::vector<int64_t> BytesInUsePerOp(const Trace& trace, int32_t iteration);

class IterationEnvelope {
 public:
  explicit IterationEnvelope(EnvelopeOptions options = {}) : options_(options) {}

  // Folds iteration `iteration` of `trace` (which must exist) into the
  // tables. O(ops + uses + tensors).
  void Observe(const Trace& trace, int32_t iteration);
  // Iterations observed since construction or Clear().
  int32_t observations() const { return observations_; }
  void Clear();

  // Iteration `iteration` of `trace` — usually the one observed last — as a
  // one-iteration trace with the envelope's sizes and headroom blocks (see
  // above; a tensor or op whose role was never observed keeps its own size
  // / bytes). Tensors keep their file ids, kinds, dtypes, shapes, names and
  // persistence; ops their names, phases, hints and durations; the
  // metadata, op-name table and wall time are copied; headroom blocks are
  // TEMPORARY uint8 tensors with fresh ids above every id of the trace.
  // Errors are TraceBuilder::Finish's (a bug here: the source was valid).
  // `stats` (optional) receives what was done.
  absl::StatusOr<Trace> Build(const Trace& trace, int32_t iteration,
                              EnvelopeStats* stats = nullptr) const;

  const EnvelopeOptions& options() const { return options_; }

 private:
  struct Range {
    int64_t lo = 0;
    int64_t hi = 0;
  };
  EnvelopeOptions options_;
  int32_t observations_ = 0;
  absl::flat_hash_map<uint64_t, Range> tensor_bytes_;  // by tensor role
  absl::flat_hash_map<uint64_t, Range> op_bytes_;      // by op role
};

}  // namespace swapplan

#endif  // SWAPPLAN_VARYING_ENVELOPE_H_
