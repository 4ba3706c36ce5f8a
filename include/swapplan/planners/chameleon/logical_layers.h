// Logical layers (seed 001 §5.1, Eq. (1)): the op sequence of one iteration
// cut into groups of equal op count, each with an estimated execution time,
// so that swaps can be timed without per-op durations.
//
// The iteration is first cut into segments — maximal runs of ops with the
// same (phase, micro-batch). Ops of phase OTHER join the segment they sit
// in (the one before them; leading ones the first real segment), so a loss
// or communication op marked OTHER does not split a forward pass. Then:
//
//   FORWARD / BACKWARD segment  -> L layers (one micro-batch's pass each:
//                                  gradient accumulation and 1F1B pipeline
//                                  stages give every micro-batch its own)
//   OPTIMIZER segment           -> optimizer_layers layers
//   all-OTHER iteration         -> 1 layer
//
// Each segment of n ops splits into G = min(groups, n) layers, layer g
// holding ops [floor(g n / G), floor((g + 1) n / G)). A layer's time is
// the sum of its ops' times on the OpTimeline — with Eq. (1) op times that
// is T_iter / N_iter × N_group.
//
//   ops    F F F F F F | B B B B B B | O O
//   layers [ F0 ][ F1 ]  [ B0 ][ B1 ]  [O0]      L = 2, optimizer_layers = 1
//
//   LogicalLayers ll = BuildLogicalLayers(trace, 0, timeline, 32, 1);
//   const LogicalLayer& l = ll.layers[ll.layer_of_op[op]];
//
// Complexity: O(ops of the iteration) time and memory.
#ifndef SWAPPLAN_PLANNERS_CHAMELEON_LOGICAL_LAYERS_H_
#define SWAPPLAN_PLANNERS_CHAMELEON_LOGICAL_LAYERS_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class LayerType : uint8_t { kForward = 0, kBackward = 1, kOptimizer = 2, kOther = 3 };
// "FWD", "BWD", "OPT", "OTHER".
absl::string_view LayerTypeName(LayerType t);

struct LogicalLayer {
  // Local ops [begin_op, end_op) of the iteration.
  int32_t begin_op = 0;
  int32_t end_op = 0;
  LayerType type = LayerType::kOther;
  // Micro-batch hint of the segment (-1: none; always -1 for the optimizer).
  int32_t micro_batch = -1;
  int32_t segment = 0;
  int32_t index_in_segment = 0;
  // Estimated start and duration (Eq. (1)).
  double start_ns = 0;
  double time_ns = 0;

  int32_t num_ops() const { return end_op - begin_op; }
};

enum class LayerCountSource : uint8_t { kOption = 0, kLayerHints = 1, kMetadata = 2, kDefault = 3 };
// "option", "layer hints", "trace metadata", "default".
absl::string_view LayerCountSourceName(LayerCountSource s);

struct LogicalLayers {
  std::vector<LogicalLayer> layers;
  // Per local op: index of its layer, and its effective type (OTHER ops take
  // their segment's).
  std::vector<int32_t> layer_of_op;
  std::vector<LayerType> op_type;
  int32_t num_segments = 0;
};

// L per forward/backward segment: `option` when > 0, else the number of
// distinct layer hints on FORWARD ops of the iteration, else the metadata's
// model_layers, else kDefaultLogicalLayers (options.h). Sets *source.
// O(ops of the iteration).
int32_t ResolveLayerCount(const Trace& trace, int32_t iteration, int32_t option,
                          LayerCountSource* source);

// Builds the layers of iteration `iteration` (which `timeline` was built
// for). Requires layers_per_segment >= 1 and optimizer_layers >= 1.
LogicalLayers BuildLogicalLayers(const Trace& trace, int32_t iteration, const OpTimeline& timeline,
                                 int32_t layers_per_segment, int32_t optimizer_layers);

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_CHAMELEON_LOGICAL_LAYERS_H_
