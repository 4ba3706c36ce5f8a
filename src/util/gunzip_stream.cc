#include "util/gunzip_stream.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"
#include "swapplan/util/units.h"

namespace swapplan::internal {

GunzipStream::GunzipStream(google::protobuf::io::ZeroCopyInputStream* sub, std::string name,
                           int64_t max_output_bytes, int buffer_bytes)
    : sub_(sub),
      name_(std::move(name)),
      buffer_(static_cast<size_t>(buffer_bytes)),
      max_output_bytes_(max_output_bytes) {
  // 15 + 16: zlib window with gzip header/trailer decoding.
  initialized_ = inflateInit2(&z_, 15 + 16) == Z_OK;
  if (!initialized_) status_ = absl::InternalError(absl::StrCat(name_, ": zlib init failed"));
}

GunzipStream::~GunzipStream() {
  if (initialized_) {
    // Give unread compressed input back to the underlying stream.
    if (z_.avail_in > 0) sub_->BackUp(static_cast<int>(z_.avail_in));
    inflateEnd(&z_);
  }
}

int GunzipStream::Fill() {
  if (done_ || !status_.ok()) return 0;
  z_.next_out = buffer_.data();
  z_.avail_out = static_cast<uInt>(buffer_.size());
  while (z_.avail_out == buffer_.size()) {
    if (z_.avail_in == 0) {
      const void* in = nullptr;
      int in_size = 0;
      bool got = false;
      while ((got = sub_->Next(&in, &in_size)) && in_size == 0) {
      }
      if (!got) {
        done_ = true;
        if (in_member_) {
          status_ = WithRule(
              absl::DataLossError(absl::StrCat(
                  name_, ": corrupt or truncated gzip stream (input ends inside a gzip member "
                         "at compressed byte ", sub_->ByteCount(), ") [corrupt-gzip]")),
              "corrupt-gzip");
        }
        break;
      }
      z_.next_in = static_cast<Bytef*>(const_cast<void*>(in));
      z_.avail_in = static_cast<uInt>(in_size);
    }
    in_member_ = true;
    int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      in_member_ = false;
      // Another member may follow (concatenated gzip files).
      inflateReset(&z_);
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status_ = WithRule(
          absl::DataLossError(absl::StrCat(
              name_, ": corrupt or truncated gzip stream (",
              z_.msg != nullptr ? z_.msg : "zlib error", " near compressed byte ",
              sub_->ByteCount() - static_cast<int64_t>(z_.avail_in), ") [corrupt-gzip]")),
          "corrupt-gzip");
      done_ = true;
      break;
    }
  }
  return static_cast<int>(buffer_.size() - z_.avail_out);
}

bool GunzipStream::Next(const void** data, int* size) {
  if (backed_up_ > 0) {
    *data = buffer_.data() + (last_size_ - backed_up_);
    *size = backed_up_;
    backed_up_ = 0;
    return true;
  }
  int n = Fill();
  if (n == 0) {
    last_size_ = 0;
    return false;
  }
  if (n > max_output_bytes_ - byte_count_) {  // byte_count_ <= max_output_bytes_ here
    status_ = WithRule(
        Error(ErrorKind::kResourceLimit,
              absl::StrCat(name_, ": gzip data inflates to more than ",
                           FormatBytes(max_output_bytes_),
                           ", the limit on decompressed input (--max-decompressed-bytes) "
                           "[decompressed-limit]")),
        "decompressed-limit");
    done_ = true;
    last_size_ = 0;
    return false;
  }
  last_size_ = n;
  byte_count_ += n;
  *data = buffer_.data();
  *size = n;
  return true;
}

void GunzipStream::BackUp(int count) { backed_up_ = std::min(count, last_size_); }

bool GunzipStream::Skip(int count) {
  const void* data = nullptr;
  int size = 0;
  while (count > 0) {
    if (!Next(&data, &size)) return false;
    if (size > count) {
      BackUp(size - count);
      return true;
    }
    count -= size;
  }
  return true;
}

}  // namespace swapplan::internal
