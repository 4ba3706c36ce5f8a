// Format dispatch for trace files: sniffing on read, atomic writes.
#include <functional>
#include <string>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "swapplan/trace/io.h"
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

absl::StatusOr<Trace> ReadTrace(const std::string& path) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> in, InputFile::Open(path));
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
  if (!stripped.empty() && stripped.front() == '{') {
    SWAPPLAN_ASSIGN_OR_RETURN(std::string text, in->ReadAll());
    return ParseTraceJson(text, path);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": neither a swapplan binary trace (magic \"SWPLTRC1\") nor a JSON trace [bad-magic]"));
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
