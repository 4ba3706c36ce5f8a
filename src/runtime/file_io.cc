// zlib-only file I/O for the runtime shim. See file_io.h.
#include "runtime/file_io.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/trace_wire.h"
#include "swapplan/policy/policy_wire.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime {

absl::StatusOr<std::string> ReadFileContent(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (f == nullptr) {
    const int e = errno;
    if (e == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return Error(ErrorKind::kUnavailable, absl::StrCat(path, ": cannot open: ", std::strerror(e)));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      const std::string msg = gzerror(f, &code);
      gzclose(f);
      return absl::DataLossError(absl::StrCat(path, ": read failed: ", msg));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  gzclose(f);
  return out;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view content, bool gzip) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  bool ok = false;
  if (gzip) {
    gzFile f = gzopen(tmp.c_str(), "wb");
    if (f != nullptr) {
      ok = content.empty() ||
           gzwrite(f, content.data(), static_cast<unsigned>(content.size())) ==
               static_cast<int>(content.size());
      ok = gzclose(f) == Z_OK && ok;
    }
  } else {
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f != nullptr) {
      ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
      ok = std::fclose(f) == 0 && ok;
    }
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return absl::OkStatus();
  const int e = errno;
  std::remove(tmp.c_str());
  return Error(ErrorKind::kUnavailable,
               absl::StrCat(path, ": cannot write: ", std::strerror(e)));
}

absl::Status WriteTraceFile(const Trace& trace, const std::string& path) {
  const bool gzip = absl::EndsWith(path, ".gz");
  if (absl::EndsWith(path, ".json") || absl::EndsWith(path, ".json.gz")) {
    return WriteFileAtomically(path, TraceToJson(trace), gzip);
  }
  absl::StatusOr<std::string> bytes = EncodeTraceBinary(trace);
  if (!bytes.ok()) return bytes.status();
  return WriteFileAtomically(path, *bytes, gzip);
}

absl::StatusOr<Trace> ReadTraceFile(const std::string& path) {
  absl::StatusOr<std::string> content = ReadFileContent(path);
  if (!content.ok()) return content.status();
  if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(*content), "{")) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the runtime reads the JSON trace form (this looks like the binary one; "
              "convert it or record the JSON form)"));
  }
  return ParseTraceJson(*content, path);
}

absl::StatusOr<Policy> ReadPolicyFile(const std::string& path) {
  absl::StatusOr<std::string> content = ReadFileContent(path);
  if (!content.ok()) return content.status();
  if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(*content), "{")) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the runtime reads the binary policy form (this is the JSON one); write it "
              "with `swapplan plan ... -o FILE.pb`"));
  }
  return ParsePolicyWire(*content, path);
}

}  // namespace swapplan::runtime
