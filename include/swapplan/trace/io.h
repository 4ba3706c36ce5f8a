// Reading and writing traces: the binary form (magic "SWPLTRC1" followed by
// length-delimited TraceRecord messages, see proto/trace.proto) and the JSON
// form (same content, for hand-written tests and for people). Either may be
// gzip-compressed; readers sniff format and compression from the content.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace t, ReadTrace("run.trace.gz"));
//   SWAPPLAN_RETURN_IF_ERROR(WriteTrace(t, "run.json", {}));   // format from name
//
// Reading streams record by record (memory stays proportional to the trace
// model, not the file); writing goes through a temporary file renamed into
// place, so a failure never leaves a partial output. Every input error is one
// line naming the file and the record index and byte offset (binary) or the
// JSON path, and ends in a rule tag: bad-magic, truncated-record,
// corrupt-record, bad-record-order, count-mismatch (the end record's counts
// differ from the records read), bad-enum (an enum value the schema does not
// define, never clamped), json-syntax, json-number (a number a double cannot
// hold, e.g. 1e400), json-schema, decompressed-limit, read-limit (see
// TraceReadOptions), out-of-memory, plus the model rules of
// TraceBuilder::Finish() (no-iterations, bad-shape, overflow, ...).
//
// Nothing is sized from a count read from the input: records (<= 1 GiB) are
// parsed from the stream, not buffered by their announced length (a length
// past the data is truncated-record, garbage is corrupt-record at its first
// bad field), and containers grow only with records actually read.
//
// JSON form:
//   {"format": "swapplan-trace", "format_version": 1,
//    "metadata": {"device_name": "a100", "device_memory_bytes": 80000000000,
//                 "h2d_bandwidth_bytes_per_s": 2.5e10, ...},
//    "op_names": ["aten::mm", ...],                          (optional)
//    "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION",
//                 "dtype": "float32", "shape": [5, 5]}, ...],
//    "iterations": [{"wall_time_ns": 1000,
//                    "ops": [{"name": "aten::mm", "phase": "FORWARD",
//                             "inputs": [1], "outputs": [2]}, ...],
//                    "memory_events": [{"op": 0, "kind": "ALLOC",
//                                       "tensor": 2}, ...]}]}
// Unknown fields are errors (they are usually typos).
#ifndef SWAPPLAN_TRACE_IO_H_
#define SWAPPLAN_TRACE_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/trace/trace.h"
#include "swapplan/util/file.h"

namespace swapplan {

inline constexpr absl::string_view kTraceMagic = "SWPLTRC1";
inline constexpr int kTraceFormatVersion = 1;

enum class TraceFormat { kBinary, kJson };

struct TraceWriteOptions {
  // Binary unless the path ends in .json or .json.gz.
  bool format_from_path = true;
  TraceFormat format = TraceFormat::kBinary;
  // Gzip when the path ends in .gz.
  bool gzip_from_path = true;
  bool gzip = false;
  // Records per chunk in the binary form.
  int ops_per_chunk = 8192;
  int tensors_per_chunk = 8192;
  int events_per_chunk = 16384;
  // Pretty-print JSON (indent 1) instead of one line per op.
  bool json_pretty = false;

  // InvalidArgument when a chunk size is < 1.
  absl::Status Validate() const;
};

// Limits of the trace readers (resource guards; both exits 2 when hit).
struct TraceReadOptions {
  // Most bytes a gzip-compressed trace may inflate to; reading stops there
  // with rule decompressed-limit. Default 64 GiB, a generous multiple of the
  // largest trace swapplan handles. The CLI flag --max-decompressed-bytes
  // sets it.
  int64_t max_decompressed_bytes = kDefaultMaxDecompressedBytes;
  // Most bytes of JSON text read: the JSON form is parsed whole into a
  // document about ten times its size, so it is refused (rule read-limit)
  // before more than this is buffered. Default 1 GiB; larger traces belong
  // in the binary form.
  int64_t max_json_bytes = kDefaultMaxReadAllBytes;

  // InvalidArgument (kUsage) when a limit is < 1.
  absl::Status Validate() const;
};

// Reads a trace in either form, gzip or not. NotFound for a missing file;
// InvalidArgument or DataLoss (truncated/corrupt input) naming the file and
// location otherwise; kResourceLimit when a limit of `options` is hit or
// memory runs out (rule out-of-memory).
absl::StatusOr<Trace> ReadTrace(const std::string& path, const TraceReadOptions& options = {});

// Parses the JSON form from memory; `source` names it in messages.
absl::StatusOr<Trace> ParseTraceJson(absl::string_view json, const std::string& source);
// Parses the binary form (optionally gzip) from memory, for tests and
// fuzzing; options.max_decompressed_bytes applies to gzip input.
absl::StatusOr<Trace> ParseTraceBinary(absl::string_view bytes, const std::string& source,
                                       const TraceReadOptions& options = {});

// Serializations of a whole trace.
std::string TraceToJson(const Trace& trace, bool pretty = false);
std::string TraceToBinary(const Trace& trace, const TraceWriteOptions& options = {});

// Writes `trace` to `path` atomically.
absl::Status WriteTrace(const Trace& trace, const std::string& path,
                        const TraceWriteOptions& options = {});

// The format WriteTrace picks for `path` (JSON for *.json and *.json.gz).
TraceFormat TraceFormatForPath(absl::string_view path);

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_IO_H_
