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
// place, so a failure never leaves a partial output. Every input error names
// the file and the record (binary) or JSON path, and ends in a rule tag:
// bad-magic, truncated-record, corrupt-record, bad-record-order, json-syntax,
// json-schema, plus the model rules of TraceBuilder::Finish().
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

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/trace/trace.h"

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

// Reads a trace in either form, gzip or not. NotFound for a missing file;
// InvalidArgument or DataLoss (truncated/corrupt input) naming the file and
// location otherwise.
absl::StatusOr<Trace> ReadTrace(const std::string& path);

// Parses the JSON form from memory; `source` names it in messages.
absl::StatusOr<Trace> ParseTraceJson(absl::string_view json, const std::string& source);
// Parses the binary form from memory (for tests and fuzzing).
absl::StatusOr<Trace> ParseTraceBinary(absl::string_view bytes, const std::string& source);

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
