// GunzipStream: a protobuf ZeroCopyInputStream that inflates gzip data (one
// or several concatenated members) from another stream, and — unlike
// protobuf's GzipInputStream, which reports a cut-off input as a clean end —
// tells truncation and corruption apart from the end of data. Internal to
// libswapplan (used by util/file.cc and the trace readers).
#ifndef SWAPPLAN_SRC_UTIL_GUNZIP_STREAM_H_
#define SWAPPLAN_SRC_UTIL_GUNZIP_STREAM_H_

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/status/status.h"

namespace swapplan::internal {

class GunzipStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  // `name` is used in error messages. `sub` must outlive this stream. At
  // most `max_output_bytes` are inflated: the stream ends there with a
  // kResourceLimit status (rule decompressed-limit), a guard against
  // decompression bombs (a 12 MB file can inflate to 12 GiB).
  GunzipStream(google::protobuf::io::ZeroCopyInputStream* sub, std::string name,
               int64_t max_output_bytes = INT64_MAX, int buffer_bytes = 1 << 20);
  ~GunzipStream() override;

  bool Next(const void** data, int* size) override;
  void BackUp(int count) override;
  bool Skip(int count) override;
  int64_t ByteCount() const override { return byte_count_ - backed_up_; }

  // OK at a clean end of data; DataLoss (rule corrupt-gzip, naming the
  // compressed byte) when the input was corrupt or ended inside a gzip
  // member; kResourceLimit (ResourceExhausted, rule
  // decompressed-limit) when it inflates to more than max_output_bytes.
  absl::Status status() const { return status_; }

 private:
  // Inflates into buffer_; returns the number of bytes produced (0 at end
  // or on error).
  int Fill();

  google::protobuf::io::ZeroCopyInputStream* sub_;
  std::string name_;
  z_stream z_{};
  std::vector<unsigned char> buffer_;
  bool initialized_ = false;
  bool in_member_ = false;  // inside a gzip member (header seen, end not yet)
  bool done_ = false;
  int last_size_ = 0;
  int backed_up_ = 0;
  int64_t byte_count_ = 0;
  int64_t max_output_bytes_;
  absl::Status status_;
};

}  // namespace swapplan::internal

#endif  // SWAPPLAN_SRC_UTIL_GUNZIP_STREAM_H_
