// Format dispatch for trace files: sniffing on read, atomic writes.
#include <functional>
#include <new>
#include <string>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

namespace internal {
absl::StatusOr<Trace> ReadBinaryFromStream(google::protobuf::io::ZeroCopyInputStream* in,
                                           const std::string& source,
                                           std::function<absl::Status()> stream_error);
bool WriteBinaryToStream(const Trace& trace, google::protobuf::io::ZeroCopyOutputStream* out,
                         const TraceWriteOptions& options);
}  // namespace internal

absl::Status TraceReadOptions::Validate() const {
  if (max_decompressed_bytes < 1 || max_json_bytes < 1) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("trace read options: max_decompressed_bytes (",
                              max_decompressed_bytes, ") and max_json_bytes (", max_json_bytes,
                              ") must be >= 1"));
  }
  return absl::OkStatus();
}

absl::Status TraceWriteOptions::Validate() const {
  if (ops_per_chunk < 1 || tensors_per_chunk < 1 || events_per_chunk < 1) {
    return absl::InvalidArgumentError("trace write options: chunk sizes must be >= 1");
  }
  return absl::OkStatus();
}

TraceFormat TraceFormatForPath(absl::string_view path) {
  if (absl::EndsWith(path, ".json") || absl::EndsWith(path, ".json.gz")) return TraceFormat::kJson;
  return TraceFormat::kBinary;
}

namespace {

absl::StatusOr<Trace> ReadTraceFile(const std::string& path, const TraceReadOptions& options) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> in,
                            InputFile::Open(path, options.max_decompressed_bytes));
  google::protobuf::io::ZeroCopyInputStream* s = in->stream();
  // Peek at the first non-empty buffer to tell binary from JSON.
  const void* data = nullptr;
  int size = 0;
  bool have = false;
  while (s->Next(&data, &size)) {
    if (size > 0) {
      have = true;
      break;
    }
  }
  if (!have) {
    SWAPPLAN_RETURN_IF_ERROR(in->StreamError());
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty file [bad-magic]"));
  }
  absl::string_view head(static_cast<const char*>(data), static_cast<size_t>(size));
  s->BackUp(size);
  if (absl::StartsWith(head, kTraceMagic.substr(0, std::min(head.size(), kTraceMagic.size())))) {
    return internal::ReadBinaryFromStream(s, path, [&] { return in->StreamError(); });
  }
  absl::string_view stripped = absl::StripLeadingAsciiWhitespace(head);
  // JSON may start with any amount of whitespace (the first buffer can be
  // all whitespace): the JSON parser decides then.
  if (stripped.empty() || stripped.front() == '{') {
    SWAPPLAN_ASSIGN_OR_RETURN(std::string text, in->ReadAll(options.max_json_bytes));
    return ParseTraceJson(text, path);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": neither a swapplan binary trace (magic \"SWPLTRC1\") nor a JSON trace [bad-magic]"));
}

}  // namespace

absl::StatusOr<Trace> ReadTrace(const std::string& path, const TraceReadOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  // Memory is the one resource the checks above cannot bound (a valid trace
  // may simply be too large for this machine): running out is an input
  // error naming the file, not a crash.
  try {
    return ReadTraceFile(path, options);
  } catch (const std::bad_alloc&) {
    return WithRule(Error(ErrorKind::kResourceLimit,
                          absl::StrCat(path, ": out of memory while reading the trace "
                                             "[out-of-memory]")),
                    "out-of-memory");
  }
}

absl::Status WriteTrace(const Trace& trace, const std::string& path,
                        const TraceWriteOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  TraceFormat format = options.format_from_path ? TraceFormatForPath(path) : options.format;
  bool gzip = options.gzip_from_path ? HasGzipSuffix(path) : options.gzip;
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, OutputFile::Open(path, gzip));
  if (format == TraceFormat::kJson) {
    out->ostream() << TraceToJson(trace, options.json_pretty);
  } else if (!internal::WriteBinaryToStream(trace, out->stream(), options)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": write failed"));
  }
  return out->Commit();
}

}  // namespace swapplan
