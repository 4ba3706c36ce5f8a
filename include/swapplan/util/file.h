// File helpers shared by every reader and writer.
//
// InputFile: a streaming reader that transparently decompresses gzip (sniffed
// from the magic bytes, not the name). OutputFile: an atomic writer — bytes go
// to a temporary next to the destination and are renamed over it only on
// Commit(); a writer destroyed without Commit() removes the temporary, so a
// failed run never leaves a partial output file. Both expose protobuf
// zero-copy streams (for length-delimited records) and std streams.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(auto in, InputFile::Open(path));
//   google::protobuf::io::ZeroCopyInputStream* zin = in->stream();
//
//   SWAPPLAN_ASSIGN_OR_RETURN(auto out, OutputFile::Open("curve.csv"));
//   out->ostream() << "op,bytes\n";
//   SWAPPLAN_RETURN_IF_ERROR(out->Commit());
#ifndef SWAPPLAN_UTIL_FILE_H_
#define SWAPPLAN_UTIL_FILE_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace google::protobuf::io {
class ZeroCopyInputStream;
class ZeroCopyOutputStream;
class FileInputStream;
class FileOutputStream;
class GzipOutputStream;
}  // namespace google::protobuf::io

namespace swapplan {
namespace internal {
class GunzipStream;
}  // namespace internal

// True when `path` ends in ".gz".
bool HasGzipSuffix(absl::string_view path);

// Default limit on the bytes a gzip-compressed input may inflate to: a
// generous multiple of the largest trace swapplan reads (a few GiB of binary
// records), small enough to stop a decompression bomb.
inline constexpr int64_t kDefaultMaxDecompressedBytes = int64_t{64} << 30;  // 64 GiB
// Default limit of InputFile::ReadAll: inputs read whole into memory (JSON
// traces, policies, baselines) are parsed into documents several times
// their size, so anything larger is refused before it is buffered.
inline constexpr int64_t kDefaultMaxReadAllBytes = int64_t{1} << 30;  // 1 GiB

class InputFile {
 public:
  // Opens `path` for streaming reads. NotFound when it does not exist,
  // InvalidArgument when it cannot be opened. A gzip-compressed file
  // inflates to at most `max_decompressed_bytes` (> 0): past that the stream
  // ends and StreamError() is kResourceLimit (rule decompressed-limit).
  static absl::StatusOr<std::unique_ptr<InputFile>> Open(
      const std::string& path, int64_t max_decompressed_bytes = kDefaultMaxDecompressedBytes);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The (decompressed) content as a zero-copy stream.
  google::protobuf::io::ZeroCopyInputStream* stream();
  bool gzip() const { return gzip_ != nullptr; }
  const std::string& path() const { return path_; }

  // Reads everything that is left. DataLoss when the gzip stream is corrupt
  // or truncated, InvalidArgument on a read error, kResourceLimit (rule
  // read-limit) as soon as the content exceeds `max_bytes` — before it is
  // buffered beyond that — or when the gzip stream passes its limit.
  absl::StatusOr<std::string> ReadAll(int64_t max_bytes = kDefaultMaxReadAllBytes);
  // Error of the underlying file or gzip stream, if any (OK otherwise). Call
  // after a read returned false to tell end of data from corruption.
  absl::Status StreamError() const;

 private:
  InputFile() = default;
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<google::protobuf::io::FileInputStream> file_;
  std::unique_ptr<internal::GunzipStream> gzip_;
};

class OutputFile {
 public:
  // Creates a temporary next to `path`. When `gzip` is true the content is
  // compressed. InvalidArgument when the directory is not writable.
  static absl::StatusOr<std::unique_ptr<OutputFile>> Open(const std::string& path,
                                                          bool gzip = false);
  // Removes the temporary unless Commit() succeeded.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Zero-copy stream onto the (possibly compressed) temporary.
  google::protobuf::io::ZeroCopyOutputStream* stream();
  // A std::ostream writing to the same stream. Do not interleave with direct
  // use of stream() without flushing the ostream first.
  std::ostream& ostream();

  // Flushes, closes and renames the temporary over the destination. Returns
  // the first write error instead when any write failed.
  absl::Status Commit();

 private:
  class StreamBuf;
  OutputFile() = default;
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  bool committed_ = false;
  std::unique_ptr<google::protobuf::io::FileOutputStream> file_;
  std::unique_ptr<google::protobuf::io::GzipOutputStream> gzip_;
  std::unique_ptr<StreamBuf> buf_;
  std::unique_ptr<std::ostream> os_;
};

// Convenience: writes `content` to `path` atomically (gzip when it ends in .gz).
absl::Status WriteStringToFile(const std::string& path, absl::string_view content);

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_FILE_H_
