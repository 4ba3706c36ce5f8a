// EtCapture: the compact form of a PyTorch execution trace, shared by the ET
// JSON reader and the Chakra .et reader. One EtNode per node of the file
// (about 60 bytes) and one EtTensorRef per tensor argument (about 40 bytes);
// the JSON text, op schemas and non-tensor arguments are not kept.
//
//   EtCapture cap;
//   ... reader fills cap.nodes / cap.refs ...
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace t, ConvertEt(std::move(cap), options, nullptr));
//
// Tensor arguments are recognised structurally: a list of exactly six
// values [tensor_id, storage_id, offset, numel, itemsize, "device"], alone
// or inside a list or tuple argument; the argument's type string
// ("Tensor(float)", "GenericList[Tensor(c10::Half),...]") gives the dtype.
#ifndef SWAPPLAN_SRC_IMPORT_ET_CAPTURE_H_
#define SWAPPLAN_SRC_IMPORT_ET_CAPTURE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include <google/protobuf/io/zero_copy_stream.h>
#include "import/value_tree.h"
#include "swapplan/import/import.h"
#include "swapplan/trace/trace.h"

namespace swapplan::import_internal {

struct EtTensorRef {
  int64_t storage_id = 0;
  int64_t extent_bytes = 0;  // (offset + numel) * itemsize: storage bytes it reaches
  int64_t view_bytes = 0;    // numel * itemsize
  uint32_t shape = 0;        // EtCapture::Shape index
  DType dtype = DType::kUnknown;
  uint16_t device = 0;       // EtCapture::devices index
};

struct EtNode {
  int64_t id = 0;
  int64_t parent = -1;       // parent node id (ctrl_deps / parent), -1 none
  int64_t rf_id = -1;        // record-function id (pairs with Kineto)
  int64_t duration_ns = -1;  // .et duration_micros, -1 none
  int32_t name = 0;          // EtCapture::names index
  int32_t tid = 0;
  int8_t scope = -1;         // RecordScope: 0 function, 1 backward function, 7 user scope
  bool fw_tid = false;       // fw_tid != 0 (a backward node)
  bool gpu = false;          // Chakra: a device kernel node, not a CPU op
  uint32_t refs_begin = 0;
  uint16_t num_inputs = 0;
  uint16_t num_outputs = 0;
};

struct EtCapture {
  std::string schema;
  int64_t pid = 0;
  std::string time;
  std::vector<EtNode> nodes;
  std::vector<EtTensorRef> refs;
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, int32_t> name_index;
  std::vector<std::string> devices;
  std::vector<int64_t> shape_dims;
  std::vector<uint32_t> shape_begin = {0, 0};  // shape 0 is the empty shape
  absl::flat_hash_map<std::string, uint32_t> shape_index;
  std::string shape_key_;  // reused lookup key
  std::vector<int64_t> dims_;  // reused scratch

  int32_t InternName(absl::string_view name);
  uint16_t InternDevice(absl::string_view device);
  uint32_t InternShape(const std::vector<int64_t>& dims);
  absl::Span<const int64_t> Shape(uint32_t s) const {
    return absl::MakeConstSpan(shape_dims).subspan(shape_begin[s], shape_begin[s + 1] - shape_begin[s]);
  }

  // Appends the tensor arguments found in `values` (with `shapes`, `types`
  // and `strides`, which may be kNoValue) of tree `t` to refs; returns how
  // many. With strides (ET schema 1.1), a tensor's storage reach is that of
  // its last element, offset + 1 + sum((size - 1) * stride): an expanded
  // view (stride 0, a bias broadcast over a batch) reaches its storage's
  // bytes, not numel * itemsize.
  // InvalidArgument [et-schema] naming `where()` for a tensor whose sizes
  // are negative or overflow int64 (`where` is called on errors only).
  absl::StatusOr<uint16_t> ExtractTensors(const ValueTree& t, uint32_t values, uint32_t shapes,
                                          uint32_t types, uint32_t strides,
                                          const std::function<std::string()>& where);
};

// Timing of a Kineto op, and of the ET node paired with it.
struct PairedTiming {
  int64_t duration_ns = -1;       // device time of the kernels it launched (or CPU time)
  int64_t allocator_bytes = -1;   // Total Allocated after the op
};

// A Kineto trace prepared for pairing with an execution trace.
struct EtPairing {
  struct KOpRecord {
    int32_t name = 0;  // names index
    int64_t rf_id = -1;
    int64_t external_id = -1;
    PairedTiming timing;
  };
  std::string path;
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, int32_t> name_index;
  std::vector<KOpRecord> ops;
  bool has_rf_ids = false;
  // Wall time of ProfilerStep#N by N.
  absl::flat_hash_map<int64_t, int64_t> step_wall_ns;
  std::string timing_source;   // what the durations are (device or host time)
  TraceMetadata device;        // device_name, device_memory_bytes
  int64_t allocator_peak_bytes = -1;

  // Filled by PairWithEt: per ET node (index into EtCapture::nodes).
  std::vector<PairedTiming> by_node;
  std::vector<uint8_t> paired;
  std::string method;          // how nodes were paired, for import.durations
};

// Pairs the nodes of `cap` with the Kineto ops by record-function id:
// Kineto's "Record function id" when it records one; otherwise "External
// id" equal to rf_id, or rf_id plus a constant offset (when the Kineto trace
// covers more iterations than the ET; every offset whose names agree is
// used and the median taken). A pairing is accepted only when at least 90 %
// of the paired names agree; otherwise InvalidArgument [kineto-pairing]
// with the figures.
absl::Status PairWithEt(const EtCapture& cap, const std::string& et_source, EtPairing* pairing);

// Builds the trace from a capture (rules in docs/importers.md): ops are the
// leaf operators plus operators doing work their children do not; iterations
// from ProfilerStep#N (else Optimizer.step#); phases from annotations and
// autograd evidence; tensor lifetimes from storage ids. `pairing` (may be
// null) supplies Kineto durations and allocator figures.
absl::StatusOr<Trace> ConvertEt(EtCapture&& cap, const std::string& source,
                                absl::string_view format, const ImportOptions& options,
                                const EtPairing* pairing);

// Reads ET JSON (schemas 1.0.1 - 1.1.x, with or without the -chakra suffix).
absl::Status ParseEtJson(google::protobuf::io::ZeroCopyInputStream* in, const std::string& source,
                         const ImportOptions& options, std::function<absl::Status()> stream_error,
                         EtCapture* cap);

// Reads Chakra .et protobuf (GlobalMetadata then Node records).
absl::Status ParseChakraEt(google::protobuf::io::ZeroCopyInputStream* in,
                           const std::string& source, std::function<absl::Status()> stream_error,
                           EtCapture* cap);

// DType of an ET type string such as "float", "c10::Half", "long int".
DType EtDType(absl::string_view scalar_type);

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_ET_CAPTURE_H_
