// TensorLabel / TensorLabeler: the one way reports, tables, messages and
// timelines name a tensor — as people know it when the trace carries a name
// (the recorder's producing module path, the synthesizer's layer path, an
// importer's parameter name), by its file id only as a fallback.
//
//   TensorLabeler names(trace);
//   names.Label(1246)                      // full form, named tensor 1246:
//     // "layers.3.attn.softmax → [8,32,1024,1024] bf16 ACTIVATION 256 MiB"
//   names.Label(1246, LabelForm::kShort)   // in a sentence or message:
//     // "tensor 1246 'layers.3.attn.softmax'"
//   names.Label(1246, LabelForm::kCell)    // in a table's tensor column:
//     // "layers.3.attn.softmax (1246)"
//   names.Label(7)                         // unnamed, kFull and kShort: "tensor 7"
//   names.Label(7, LabelForm::kCell)       // unnamed, kCell: "7"
//
// Every CLI report and --json output that lists tensors (plan, check,
// simulate, compare, replay, whatif, advise, inspect, report), the
// resolver's and checker's messages and the Chrome timeline go through this
// component, so a name shows wherever one is known (tests/cli/
// names_cli_test.cc scans every command's output for bare ids).
//
// The full form: NAME, " → ", the shape "[d0,d1,...]" and the short dtype
// name (bf16, f32, ...; DTypeShortName) where recorded, the kind, and the
// size (FormatBytesShort: "256 MiB" for a whole number of units, else
// FormatBytes' "1.50 MiB").
//
// Complexity: TensorLabeler construction O(tensors) (a hash map from file id
// to dense id, skipped when the ids are dense 0..n-1); Label O(name + rank).
// Thread-safety: const methods may be called from any thread.
#ifndef SWAPPLAN_TRACE_TENSOR_LABEL_H_
#define SWAPPLAN_TRACE_TENSOR_LABEL_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class LabelForm : uint8_t {
  // Everything known: "NAME → [d0,...] DTYPE KIND SIZE"; "tensor ID" when
  // unnamed.
  kFull = 0,
  // Inside a sentence or an error message: "tensor ID 'NAME'"; "tensor ID"
  // when unnamed.
  kShort = 1,
  // In a table column headed "tensor" (bytes, kind have their own columns):
  // "NAME (ID)"; "ID" when unnamed.
  kCell = 2,
};

// "bf16", "f16", "f32", "f64", "i64", "i32", "i16", "i8", "u8", "bool",
// "f8e4m3", "f8e5m2", "c64"; "?" for kUnknown. O(1).
absl::string_view DTypeShortName(DType d);

// "256 MiB" when `bytes` is a whole number of its binary unit (KiB, MiB,
// GiB, TiB), else FormatBytes (util/units.h): "1.50 MiB", "100 B". O(1).
std::string FormatBytesShort(int64_t bytes);

// The label of dense tensor `t` in `form` (above); ID is the file's id.
// Requires 0 <= t < trace.num_tensors(). O(name + rank).
std::string TensorLabel(const Trace& trace, TensorId t, LabelForm form = LabelForm::kFull);

// Labels by file id (policies, simulator stall sites and replay reports
// carry file ids).
class TensorLabeler {
 public:
  // Requires: `trace` outlives the labeler.
  explicit TensorLabeler(const Trace& trace);

  // TensorLabel of the tensor with file id `trace_id`; an id the trace does
  // not hold gets the unnamed fallback ("tensor ID" / "ID").
  std::string Label(uint64_t trace_id, LabelForm form = LabelForm::kFull) const;
  // TensorLabel(trace, t, form) for dense index `t`.
  std::string LabelOf(TensorId t, LabelForm form = LabelForm::kFull) const {
    return TensorLabel(trace_, t, form);
  }
  // The recorded name of file id `trace_id`, "" when unnamed or unknown
  // (JSON outputs carry it as "name" beside the id).
  absl::string_view Name(uint64_t trace_id) const;
  // The dense index of file id `trace_id`, or kNoTensor. O(1).
  TensorId DenseOf(uint64_t trace_id) const;

 private:
  const Trace& trace_;
  bool dense_ = true;  // trace_id == dense index for every tensor
  absl::flat_hash_map<uint64_t, TensorId> dense_of_id_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_TENSOR_LABEL_H_
