// Importers: read the traces users already have — PyTorch execution traces
// (ET JSON and Chakra .et protobuf), Kineto traces with memory events,
// torch.cuda memory snapshots (pickle or JSON) and torch.profiler memory
// timelines — as well as swapplan's own binary and JSON traces, detected from
// the content (gzip and tar wrappers, magic bytes, JSON top-level keys). Each
// importer streams its input: memory grows with the trace model it builds
// (ops, live tensors), never with the file. The mapping rules of every format
// are in docs/importers.md.
//
//   ImportOptions opts;                    // detect the format
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace t, ReadAnyTrace("resnet_et.json.gz", opts));
//   opts.kineto_path = "resnet_kineto.json.gz";   // op durations and memory
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace paired, ReadAnyTrace("resnet_et.json.gz", opts));
//
// What an importer could not measure it says in the trace metadata:
// attributes "import.format", "import.durations" (recorded / roofline / ...),
// "import.note.*", and for traces with allocator figures
// "import.allocator_peak_bytes" (the source's own peak) and
// "import.allocator_max_diff_bytes" (rebuilt curve vs the source, after each
// op).
//
// Errors: NotFound for a missing file; otherwise InvalidArgument (exit 2)
// naming the file, the position (byte offset, JSON path, record or pickle
// opcode offset) and a rule tag: unknown-format, json-syntax, json-schema,
// json-limit, tar-header, et-schema, kineto-schema, kineto-pairing (an
// execution trace and a Kineto trace that are not of one run),
// snapshot-schema, timeline-schema, pickle-opcode, pickle-truncated,
// pickle-schema, chakra-record, declared-size (a size or count larger than
// the input could hold), no-ops, plus the model rules of
// TraceBuilder::Finish(). A cap on decompressed bytes gives
// ResourceExhausted with kind kResourceLimit [resource-limit]; usage errors
// (an unknown format name, --kineto with a format it does not pair with)
// have kind kUsage.
//
// Threading: every function may be called from several threads at once on
// different inputs.
#ifndef SWAPPLAN_IMPORT_IMPORT_H_
#define SWAPPLAN_IMPORT_IMPORT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/device/device_model.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// Format names accepted by ImportOptions::format and `--trace-format`.
inline constexpr absl::string_view kFormatSwapplan = "swapplan";
inline constexpr absl::string_view kFormatEtJson = "et-json";
inline constexpr absl::string_view kFormatChakraEt = "chakra-et";
inline constexpr absl::string_view kFormatKineto = "kineto";
inline constexpr absl::string_view kFormatSnapshot = "memory-snapshot";
inline constexpr absl::string_view kFormatTimeline = "memory-timeline";

struct ImportOptions {
  // Force a format (one of the names above); empty: detect from content.
  std::string format;
  // A Kineto trace of the same run as an execution trace (ET JSON or Chakra
  // .et): op durations and allocator figures are taken from it, paired by
  // record-function id. Empty: durations from the roofline below.
  std::string kineto_path;
  // Which nodes of an execution trace are ops. kLeaves: the leaf operators
  // plus operators with work of their own (every call a kernel makes is an
  // op). kDispatch: the ops a TorchDispatchMode sees (swapplan's recorder and
  // runtime): every operator whole, except CompositeImplicitAutograd ones,
  // whose decomposition is seen instead (docs/importers.md).
  enum class EtOps : uint8_t { kLeaves, kDispatch };
  EtOps et_ops = EtOps::kLeaves;
  // Roofline for op durations a trace does not record (ET without Kineto):
  // duration = max(FLOPs / peak_flops_per_s, bytes / memory_bandwidth_bytes_per_s).
  // Only these two fields are read. Defaults: an A100-class device.
  DeviceModel roofline_device = DefaultRooflineDevice();
  // Refuse inputs that inflate (gzip) to more than this many bytes.
  int64_t max_decompressed_bytes = int64_t{64} << 30;
  // JSON strings and numbers longer than this are refused (json-limit).
  int64_t max_json_token_bytes = int64_t{64} << 20;
  // Called as the input file is read, with the bytes read so far and the
  // file's size (both as stored, before decompression), on the calling
  // thread; for progress reports. Empty: none. Not called for in-memory
  // inputs.
  std::function<void(int64_t read_bytes, int64_t file_bytes)> progress;

  // InvalidArgument naming the field: an unknown format name, roofline
  // figures not positive and finite, limits < 1.
  absl::Status Validate() const;

  static DeviceModel DefaultRooflineDevice();
};

struct FormatInfo {
  std::string name;
  std::string description;
};

// Every supported format, in detection order.
const std::vector<FormatInfo>& SupportedFormats();

// What detection found in a file: the wrappers peeled off ("gzip",
// "tar member x.json") and the format ("" when unknown), with a short
// description of the evidence ("JSON object with keys nodes, schema").
struct Detection {
  std::vector<std::string> wrappers;
  std::string format;
  std::string evidence;
};

// Detects the format of `path` (reads at most the wrappers' headers and the
// first 64 KiB of content). NotFound / InvalidArgument on read errors; an
// unknown format is not an error here (format is empty).
absl::StatusOr<Detection> DetectTraceFormat(const std::string& path,
                                            const ImportOptions& options = {});

// Reads a trace of any supported format (see the file comment). The one
// function commands use to load a trace.
absl::StatusOr<Trace> ReadAnyTrace(const std::string& path, const ImportOptions& options = {});

// The same from memory (tests, fuzzing); `source` names the input in
// messages. kineto_path, when set, is still read from disk.
absl::StatusOr<Trace> ImportFromMemory(absl::string_view bytes, const std::string& source,
                                       const ImportOptions& options = {});

}  // namespace swapplan

#endif  // SWAPPLAN_IMPORT_IMPORT_H_
