// Runtime iterations: where a runtime hooked into the framework sees one
// training iteration end and the next begin, and each such iteration as a
// standalone one-iteration Trace that planners, the checker and the
// evaluation simulator take as they are.
//
// A recorder (or the synthesizer) decides where a trace's iterations end;
// a runtime decides for itself. Eager-mode PyTorch has one universal
// iteration marker, `optimizer.step()`, so a runtime counts an iteration
// from one optimizer step to the next: a validation pass that the training
// loop runs after step K (Megatron's evaluate()) is, to the runtime, the
// *start* of iteration K+1 and shifts the positions of all its training ops
// — which is what breaks position-based matching (seed 001 §7.4: Capuchin
// crashes in round 201 with validation every 200 steps).
//
//   trace iteration K:    [fwd bwd opt | val]   K+1: [fwd bwd opt]
//   kTrace:               [fwd bwd opt   val]        [fwd bwd opt]
//   kOptimizerEnd:        [fwd bwd opt]  [val        fwd bwd opt]
//
//   std::vector<OpRange> r = RuntimeIterations(trace, IterationBoundary::kOptimizerEnd);
//   SegmentExtractor x(trace, r);
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace one, x.Extract(5));   // runtime iteration 5
//
// An extracted trace has one iteration: the ops of the range (names, phases,
// hints, durations as recorded), every tensor occupying the device during
// some op of it — with its original file id, so policies name the same ids
// — an explicit ALLOC / FREE where its lifetime starts / ends inside the
// range and `persistent` where it starts before or ends after it (the
// format's rules then give the same occupancy as in the whole trace). The
// op-name table is copied whole, so NameIds are the same in every
// extracted trace. Recorded SWAP_OUT / SWAP_IN events are dropped (a replay
// replaces them; the memory curve ignores them anyway). Wall time: the
// source iterations' wall times shared in proportion to the ops taken.
//
// Complexity: the constructor O(tensors of the trace + ranges); Extract
// O(ops + uses + events of the range + tensors crossing a range boundary),
// plus TraceBuilder::Finish on the result.
#ifndef SWAPPLAN_VARYING_SEGMENT_H_
#define SWAPPLAN_VARYING_SEGMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class IterationBoundary : uint8_t {
  kTrace = 0,         // the trace's own iterations
  kOptimizerEnd = 1,  // after the last OPTIMIZER op of each trace iteration
};
// "trace", "optimizer"; the parser returns false for anything else.
absl::string_view IterationBoundaryName(IterationBoundary b);
bool ParseIterationBoundary(absl::string_view name, IterationBoundary* out);

// Global op range [begin, end).
struct OpRange {
  OpIndex begin = 0;
  OpIndex end = 0;
  int32_t num_ops() const { return end - begin; }
};

// The runtime iterations of `trace`, in order, covering every op once.
// kOptimizerEnd: each trace iteration with OPTIMIZER ops ends after the last
// of them; the ops after it join the next runtime iteration (after the last
// trace iteration they stay in the last one). A trace iteration without
// OPTIMIZER ops (a step skipped before the optimizer ran) ends where the
// trace says. No range is empty. O(ops).
std::vector<OpRange> RuntimeIterations(const Trace& trace, IterationBoundary boundary);

class SegmentExtractor {
 public:
  // `trace` must outlive the extractor; `ranges` are disjoint, ascending and
  // non-empty (as RuntimeIterations returns them).
  SegmentExtractor(const Trace& trace, std::vector<OpRange> ranges);

  int32_t num_segments() const { return static_cast<int32_t>(ranges_.size()); }
  const OpRange& range(int32_t i) const { return ranges_[i]; }

  // Runtime iteration `i` as a one-iteration trace named
  // "<source> (runtime iteration i)". Errors are TraceBuilder::Finish's
  // (they would mean a bug here: the source trace was valid). Not
  // thread-safe (scratch state).
  absl::StatusOr<Trace> Extract(int32_t i);

 private:
  const Trace* trace_;
  std::vector<OpRange> ranges_;
  // Tensors whose lifetime crosses a range boundary, by alloc op.
  std::vector<TensorId> crossing_;
  std::vector<int32_t> stamp_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_VARYING_SEGMENT_H_
