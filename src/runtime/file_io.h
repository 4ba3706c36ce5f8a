// Files for the runtime shim without the protobuf runtime (core's util/file.h
// reads and writes through protobuf's streams; libswapplan_runtime.so carries
// no protobuf, see swapplan_runtime.h): whole-file reads that undo gzip, and
// atomic writes (temporary file renamed into place), gzip for *.gz — zlib
// only; traces in either form (the binary one through trace_wire.h).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::string bytes, ReadFileContent("p.pb"));
//   SWAPPLAN_RETURN_IF_ERROR(WriteTraceFile(trace, "run.trace.gz"));  // or run.json
//
// Thread-compatible. O(file size).
#ifndef SWAPPLAN_SRC_RUNTIME_FILE_IO_H_
#define SWAPPLAN_SRC_RUNTIME_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/trace.h"

namespace swapplan::runtime {

// The file's bytes, gunzipped when it is gzip. NotFound / Unavailable
// naming the file.
absl::StatusOr<std::string> ReadFileContent(const std::string& path);

// Writes `content` to `path` atomically (gzip-compressed when `gzip`).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view content, bool gzip);

// A trace in the form its name asks for, as swapplan::WriteTrace picks it:
// JSON for *.json and *.json.gz, the binary form (trace_wire.h, no
// protobuf) for any other name (run.trace, run.trace.gz); gzip for *.gz.
// Unavailable naming the file when it cannot be written.
absl::Status WriteTraceFile(const Trace& trace, const std::string& path);
// A JSON trace (gzip or not). InvalidArgument for a binary trace.
absl::StatusOr<Trace> ReadTraceFile(const std::string& path);
// A binary policy (gzip or not), validated. InvalidArgument for the JSON
// form (it is read through protobuf; write policies for the runtime with
// -o FILE.pb).
absl::StatusOr<Policy> ReadPolicyFile(const std::string& path);

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_SRC_RUNTIME_FILE_IO_H_
