// TensorLabeler: the one way reports name a tensor — as people know it when
// the trace carries a name (the recorder's producing module path, the
// synthesizer's layer path, an importer's parameter name), by its file id
// only as a fallback.
//
//   TensorLabeler names(trace);
//   names.Label(1246)                     // trace id 1246, named:
//     // "layers.3.attn.softmax → [8,32,1024,1024] bfloat16 ACTIVATION 256.00 MiB"
//   names.Label(7)                        // unnamed: "tensor 7"
//   names.Label(7, LabelForm::kCell)      // unnamed, in a table's tensor column: "7"
//
// Every CLI report (simulate's top stalls, compare's notes, check's
// violations, plan --explain, replay, the Chrome timeline) goes through this
// class, so a name shows wherever one is known.
//
// Complexity: construction O(tensors) (a hash map from file id to dense id,
// skipped when the ids are dense 0..n-1); Label O(name + rank).
// Thread-safety: const methods may be called from any thread.
#ifndef SWAPPLAN_TRACE_TENSOR_LABEL_H_
#define SWAPPLAN_TRACE_TENSOR_LABEL_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class LabelForm : uint8_t {
  // Inside a sentence: "tensor 7" when unnamed.
  kSentence = 0,
  // In a table column headed "tensor": "7" when unnamed.
  kCell = 1,
};

// The label of dense tensor `t` (0 <= t < trace.num_tensors()): "NAME →
// [d0,d1,...] DTYPE KIND SIZE" when the trace names it (the shape and dtype
// only where recorded), otherwise "tensor ID" (kSentence) or "ID" (kCell),
// ID being the file's id. The one naming function: TensorLabeler only maps
// file ids to dense ones before calling it. O(name + rank).
std::string TensorLabel(const Trace& trace, TensorId t, LabelForm form = LabelForm::kSentence);

// Labels by file id (policies, simulator stall sites and replay reports
// carry file ids).
class TensorLabeler {
 public:
  // Requires: `trace` outlives the labeler.
  explicit TensorLabeler(const Trace& trace);

  // TensorLabel of the tensor with file id `trace_id`; an id the trace does
  // not hold gets the fallback ("tensor ID" / "ID").
  std::string Label(uint64_t trace_id, LabelForm form = LabelForm::kSentence) const;
  // TensorLabel(trace, t, form) for dense index `t`.
  std::string LabelOf(TensorId t, LabelForm form = LabelForm::kSentence) const {
    return TensorLabel(trace_, t, form);
  }

 private:
  const Trace& trace_;
  bool dense_ = true;  // trace_id == dense index for every tensor
  absl::flat_hash_map<uint64_t, TensorId> dense_of_id_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_TENSOR_LABEL_H_
