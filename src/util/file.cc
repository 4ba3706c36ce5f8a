#include "swapplan/util/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"
#include "swapplan/util/units.h"
#include "util/gunzip_stream.h"

namespace swapplan {

namespace pbio = google::protobuf::io;

bool HasGzipSuffix(absl::string_view path) { return absl::EndsWith(path, ".gz"); }

// --- InputFile ---------------------------------------------------------------

absl::StatusOr<std::unique_ptr<InputFile>> InputFile::Open(const std::string& path,
                                                           int64_t max_decompressed_bytes) {
  if (max_decompressed_bytes <= 0) {
    return Error(ErrorKind::kUsage, absl::StrCat("the decompressed-size limit is ",
                                                 max_decompressed_bytes, "; must be > 0"));
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  std::unique_ptr<InputFile> in(new InputFile());  // private constructor
  in->path_ = path;
  in->fd_ = fd;
  in->file_ = std::make_unique<pbio::FileInputStream>(fd, 1 << 20);
  // Sniff the gzip magic from the first buffer, then give it back.
  const void* data = nullptr;
  int size = 0;
  bool gz = false;
  while (in->file_->Next(&data, &size)) {
    if (size == 0) continue;
    const auto* bytes = static_cast<const unsigned char*>(data);
    gz = size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
    in->file_->BackUp(size);
    break;
  }
  if (in->file_->GetErrno() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": read error: ", std::strerror(in->file_->GetErrno())));
  }
  if (gz) {
    in->gzip_ = std::make_unique<internal::GunzipStream>(in->file_.get(), path,
                                                         max_decompressed_bytes);
  }
  return in;
}

InputFile::~InputFile() {
  gzip_.reset();
  file_.reset();
  if (fd_ >= 0) ::close(fd_);
}

pbio::ZeroCopyInputStream* InputFile::stream() {
  if (gzip_) return gzip_.get();
  return file_.get();
}

absl::Status InputFile::StreamError() const {
  if (file_->GetErrno() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": read error: ", std::strerror(file_->GetErrno())));
  }
  if (gzip_) return gzip_->status();
  return absl::OkStatus();
}

absl::StatusOr<std::string> InputFile::ReadAll(int64_t max_bytes) {
  std::string out;
  const void* data = nullptr;
  int size = 0;
  pbio::ZeroCopyInputStream* s = stream();
  while (s->Next(&data, &size)) {
    if (static_cast<int64_t>(size) > max_bytes - static_cast<int64_t>(out.size())) {
      return WithRule(
          Error(ErrorKind::kResourceLimit,
                absl::StrCat(path_, ": ", gzip() ? "the decompressed content" : "the file",
                             " exceeds ", FormatBytes(max_bytes),
                             ", the limit for inputs read whole (JSON traces, policies, "
                             "baselines) [read-limit]")),
          "read-limit");
    }
    out.append(static_cast<const char*>(data), size);
  }
  absl::Status st = StreamError();
  if (!st.ok()) return st;
  return out;
}

// --- OutputFile --------------------------------------------------------------

// std::streambuf over a ZeroCopyOutputStream: each buffer the stream hands
// out becomes the put area; unused space is returned with BackUp on sync.
class OutputFile::StreamBuf : public std::streambuf {
 public:
  explicit StreamBuf(pbio::ZeroCopyOutputStream* out) : out_(out) {}
  bool failed() const { return failed_; }

  // Returns the unused tail of the current buffer to the stream.
  void Release() {
    if (pbase() != nullptr) {
      out_->BackUp(static_cast<int>(epptr() - pptr()));
      setp(nullptr, nullptr);
    }
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!NextBuffer()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override {
    Release();
    return failed_ ? -1 : 0;
  }

 private:
  bool NextBuffer() {
    void* data = nullptr;
    int size = 0;
    do {
      if (!out_->Next(&data, &size)) {
        failed_ = true;
        setp(nullptr, nullptr);
        return false;
      }
    } while (size == 0);
    char* p = static_cast<char*>(data);
    setp(p, p + size);
    return true;
  }
  pbio::ZeroCopyOutputStream* out_;
  bool failed_ = false;
};

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path,
                                                             bool gzip) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot create output file: ", std::strerror(errno)));
  }
  std::unique_ptr<OutputFile> out(new OutputFile());  // private constructor
  out->path_ = path;
  out->tmp_path_ = tmp;
  out->fd_ = fd;
  out->file_ = std::make_unique<pbio::FileOutputStream>(fd, 1 << 20);
  if (gzip) {
    pbio::GzipOutputStream::Options opts;
    opts.format = pbio::GzipOutputStream::GZIP;
    opts.compression_level = 6;
    opts.buffer_size = 1 << 20;
    out->gzip_ = std::make_unique<pbio::GzipOutputStream>(out->file_.get(), opts);
  }
  out->buf_ = std::make_unique<StreamBuf>(out->stream());
  out->os_ = std::make_unique<std::ostream>(out->buf_.get());
  return out;
}

OutputFile::~OutputFile() {
  if (!committed_) {
    if (os_) os_->flush();
    buf_.reset();
    gzip_.reset();
    file_.reset();
    if (fd_ >= 0) ::close(fd_);
    ::unlink(tmp_path_.c_str());
  }
}

pbio::ZeroCopyOutputStream* OutputFile::stream() {
  if (gzip_) return gzip_.get();
  return file_.get();
}

std::ostream& OutputFile::ostream() { return *os_; }

absl::Status OutputFile::Commit() {
  os_->flush();
  buf_->Release();
  bool ok = !buf_->failed() && !os_->fail();
  if (gzip_) ok = gzip_->Close() && ok;
  ok = file_->Close() && ok;
  int err = file_->GetErrno();
  fd_ = -1;  // closed by FileOutputStream::Close
  if (!ok) {
    ::unlink(tmp_path_.c_str());
    committed_ = true;  // nothing left to clean up
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": write failed", err != 0 ? absl::StrCat(": ", std::strerror(err)) : ""));
  }
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    int rerr = errno;
    ::unlink(tmp_path_.c_str());
    committed_ = true;
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": cannot rename temporary into place: ", std::strerror(rerr)));
  }
  committed_ = true;
  return absl::OkStatus();
}

absl::Status WriteStringToFile(const std::string& path, absl::string_view content) {
  absl::StatusOr<std::unique_ptr<OutputFile>> out = OutputFile::Open(path, HasGzipSuffix(path));
  if (!out.ok()) return out.status();
  (*out)->ostream().write(content.data(), static_cast<std::streamsize>(content.size()));
  return (*out)->Commit();
}

}  // namespace swapplan
