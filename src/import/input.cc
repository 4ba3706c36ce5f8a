#include "import/input.h"

#include "import/json_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "util/gunzip_stream.h"

namespace swapplan::import_internal {

namespace pbio = google::protobuf::io;

namespace {

// Passes a stream through, reporting the bytes it has handed out
// (ImportOptions::progress).
class CountingInputStream : public pbio::ZeroCopyInputStream {
 public:
  CountingInputStream(std::unique_ptr<pbio::ZeroCopyInputStream> in, int64_t total_bytes,
                      std::function<void(int64_t, int64_t)> progress)
      : in_(std::move(in)), total_(total_bytes), progress_(std::move(progress)) {}
  bool Next(const void** data, int* size) override {
    if (!in_->Next(data, size)) return false;
    progress_(in_->ByteCount(), total_);
    return true;
  }
  void BackUp(int count) override { in_->BackUp(count); }
  bool Skip(int count) override { return in_->Skip(count); }
  int64_t ByteCount() const override { return in_->ByteCount(); }

 private:
  std::unique_ptr<pbio::ZeroCopyInputStream> in_;
  int64_t total_;
  std::function<void(int64_t, int64_t)> progress_;
};

constexpr int kTarBlock = 512;
// Members whose names say they are not the trace (macOS resource forks).
bool IgnoredTarMember(absl::string_view name) {
  size_t slash = name.rfind('/');
  absl::string_view base = slash == absl::string_view::npos ? name : name.substr(slash + 1);
  return absl::StartsWith(base, "._") || base.empty();
}

// Reads exactly `n` bytes; false at the end of input.
bool ReadExact(pbio::ZeroCopyInputStream* s, size_t n, std::string* out) {
  out->clear();
  while (out->size() < n) {
    const void* data = nullptr;
    int size = 0;
    if (!s->Next(&data, &size)) return false;
    size_t take = std::min(n - out->size(), static_cast<size_t>(size));
    out->append(static_cast<const char*>(data), take);
    if (take < static_cast<size_t>(size)) s->BackUp(size - static_cast<int>(take));
  }
  return true;
}

bool SkipExact(pbio::ZeroCopyInputStream* s, int64_t n) {
  while (n > 0) {
    int step = static_cast<int>(std::min<int64_t>(n, 1 << 30));
    if (!s->Skip(step)) return false;
    n -= step;
  }
  return true;
}

// Octal (or GNU base-256) number field of a tar header; -1 when malformed.
int64_t TarNumber(absl::string_view f) {
  if (!f.empty() && (static_cast<unsigned char>(f[0]) & 0x80)) {
    int64_t v = 0;
    for (size_t i = 1; i < f.size(); ++i) {
      if (v > (int64_t{1} << 54)) return -1;
      v = v * 256 + static_cast<unsigned char>(f[i]);
    }
    return (static_cast<unsigned char>(f[0]) & 0x7F) != 0 ? -1 : v;
  }
  int64_t v = 0;
  bool any = false;
  for (char c : f) {
    if (c == ' ' || c == '\0') {
      if (any) break;
      continue;
    }
    if (c < '0' || c > '7') return -1;
    if (v > (int64_t{1} << 58)) return -1;
    v = v * 8 + (c - '0');
    any = true;
  }
  return v;
}

absl::string_view CString(absl::string_view f) {
  size_t z = f.find('\0');
  return z == absl::string_view::npos ? f : f.substr(0, z);
}

// ZeroCopyInputStream::Skip through the stream's own Next and BackUp (so a
// wrapper's bookkeeping sees the skipped bytes): false at the end of the
// stream or an error.
bool SkipByNext(pbio::ZeroCopyInputStream* s, int count) {
  while (count > 0) {
    const void* data = nullptr;
    int size = 0;
    if (!s->Next(&data, &size)) return false;
    if (size > count) {
      s->BackUp(size - count);
      return true;
    }
    count -= size;
  }
  return true;
}

}  // namespace

class ImportInput::HeadStream : public pbio::ZeroCopyInputStream {
 public:
  explicit HeadStream(pbio::ZeroCopyInputStream* sub) : sub_(sub) {}
  // Reads up to kHeadBytes; returns false on a read error (see the errors).
  void Fill() {
    head_.reserve(kHeadBytes);
    while (head_.size() < kHeadBytes) {
      const void* data = nullptr;
      int size = 0;
      if (!sub_->Next(&data, &size)) {
        all_ = true;
        return;
      }
      size_t take = std::min(kHeadBytes - head_.size(), static_cast<size_t>(size));
      head_.append(static_cast<const char*>(data), take);
      if (take < static_cast<size_t>(size)) sub_->BackUp(size - static_cast<int>(take));
    }
  }
  const std::string& head() const { return head_; }
  bool all() const { return all_; }

  bool Next(const void** data, int* size) override {
    if (pos_ < head_.size()) {
      *data = head_.data() + pos_;
      *size = static_cast<int>(head_.size() - pos_);
      pos_ = head_.size();
      last_from_head_ = true;
      count_ += *size;
      return true;
    }
    last_from_head_ = false;
    if (!sub_->Next(data, size)) return false;
    count_ += *size;
    return true;
  }
  void BackUp(int count) override {
    if (last_from_head_) {
      pos_ -= static_cast<size_t>(count);
    } else {
      sub_->BackUp(count);
    }
    count_ -= count;
  }
  bool Skip(int count) override { return SkipByNext(this, count); }
  int64_t ByteCount() const override { return count_; }

 private:
  pbio::ZeroCopyInputStream* sub_;
  std::string head_;
  size_t pos_ = 0;
  bool all_ = false;
  bool last_from_head_ = false;
  int64_t count_ = 0;
};

// Counts decompressed bytes and stops at the cap.
class ImportInput::CountingStream : public pbio::ZeroCopyInputStream {
 public:
  CountingStream(pbio::ZeroCopyInputStream* sub, int64_t cap, std::string source)
      : sub_(sub), cap_(cap), source_(std::move(source)) {}
  bool Next(const void** data, int* size) override {
    if (!error_.ok()) return false;
    if (!sub_->Next(data, size)) return false;
    count_ += *size;
    if (count_ > cap_) {
      error_ = Error(ErrorKind::kResourceLimit,
                     absl::StrCat(source_, ": decompresses to more than ", cap_,
                                  " bytes, the limit on decompressed input (raise it with --max-decompressed-bytes) "
                                  "[resource-limit]"));
      return false;
    }
    return true;
  }
  void BackUp(int count) override {
    sub_->BackUp(count);
    count_ -= count;
  }
  bool Skip(int count) override { return SkipByNext(this, count); }
  int64_t ByteCount() const override { return count_; }
  const absl::Status& error() const { return error_; }

 private:
  pbio::ZeroCopyInputStream* sub_;
  int64_t cap_;
  std::string source_;
  int64_t count_ = 0;
  absl::Status error_;
};

ImportInput::ImportInput(Token) {}

ImportInput::~ImportInput() {
  head_stream_.reset();
  // Destroy from the top: a gzip layer gives unread input back to the one
  // below it.
  while (!layers_.empty()) layers_.pop_back();
  if (fd_ >= 0) ::close(fd_);
}

pbio::ZeroCopyInputStream* ImportInput::top() { return layers_.back().get(); }

pbio::ZeroCopyInputStream* ImportInput::stream() { return head_stream_.get(); }

absl::Status ImportInput::StreamError() const {
  for (const auto& e : errors_) {
    absl::Status s = e();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ImportInput::PushGzipIfNeeded() {
  pbio::ZeroCopyInputStream* s = top();
  const void* data = nullptr;
  int size = 0;
  bool gz = false;
  while (s->Next(&data, &size)) {
    if (size == 0) continue;
    const auto* b = static_cast<const unsigned char*>(data);
    // A gzip member needs at least its two magic bytes; a first buffer of
    // one byte is too short to tell, and is not gzip.
    gz = size >= 2 && b[0] == 0x1f && b[1] == 0x8b;
    s->BackUp(size);
    break;
  }
  SWAPPLAN_RETURN_IF_ERROR(StreamError());
  if (!gz) return absl::OkStatus();
  auto gunzip = std::make_unique<internal::GunzipStream>(s, source_);
  internal::GunzipStream* raw = gunzip.get();
  errors_.push_back([raw] { return raw->status(); });
  layers_.push_back(std::move(gunzip));
  wrappers_.push_back("gzip");
  return absl::OkStatus();
}

absl::Status ImportInput::Peel(const ImportOptions& options, const ContentProbe& probe) {
  SWAPPLAN_RETURN_IF_ERROR(PushGzipIfNeeded());
  {
    auto counting = std::make_unique<CountingStream>(top(), options.max_decompressed_bytes, source_);
    CountingStream* raw = counting.get();
    errors_.push_back([raw] { return raw->error(); });
    layers_.push_back(std::move(counting));
  }
  auto head = std::make_unique<HeadStream>(top());
  head->Fill();
  SWAPPLAN_RETURN_IF_ERROR(StreamError());
  const std::string& h = head->head();
  bool tar = h.size() >= kTarBlock && h.compare(257, 5, "ustar") == 0;
  if (!tar) {
    head_stream_ = std::move(head);
    head_ = head_stream_->head();
    head_is_all_ = head_stream_->all();
    return absl::OkStatus();
  }
  // A tar archive: walk the members, take the first that `probe` accepts.
  pbio::ZeroCopyInputStream* tar_stream = head.get();
  layers_.push_back(std::move(head));
  std::string block;
  std::string long_name;
  int64_t offset = 0;
  std::vector<std::string> skipped;
  for (;;) {
    if (!ReadExact(tar_stream, kTarBlock, &block)) {
      SWAPPLAN_RETURN_IF_ERROR(StreamError());
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ": tar archive ends at byte ", offset, " without an end marker [tar-header]"));
    }
    if (block.find_first_not_of('\0') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ": tar archive has no member in a supported trace format",
          skipped.empty() ? "" : absl::StrCat(" (members: ", absl::StrJoin(skipped, ", "), ")"),
          " [unknown-format]"));
    }
    absl::string_view b(block);
    int64_t checksum = TarNumber(b.substr(148, 8));
    int64_t sum = 0;
    for (int i = 0; i < kTarBlock; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
    }
    int64_t size = TarNumber(b.substr(124, 12));
    if (checksum != sum || size < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ": tar header at byte ", offset,
          checksum != sum ? " has a bad checksum" : " has a malformed size field", " [tar-header]"));
    }
    char type = block[156];
    std::string name = long_name;
    if (name.empty()) {
      absl::string_view prefix = CString(b.substr(345, 155));
      name = absl::StrCat(prefix, prefix.empty() ? "" : "/", CString(b.substr(0, 100)));
    }
    name = PrintableText(name, 200);
    long_name.clear();
    offset += kTarBlock;
    const int64_t padded = (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    if (type == 'L') {  // GNU long name: the next member's name
      if (size > 4096 || !ReadExact(tar_stream, static_cast<size_t>(size), &long_name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            source_, ": tar long-name record at byte ", offset, " is truncated or too long [tar-header]"));
      }
      long_name = std::string(CString(long_name));
      if (!SkipExact(tar_stream, padded - size)) break;
      offset += padded;
      continue;
    }
    const bool regular = type == '0' || type == '\0' || type == '7';
    if (!regular || IgnoredTarMember(name) || size == 0) {
      if (!SkipExact(tar_stream, padded)) break;
      offset += padded;
      continue;
    }
    // Probe the member's content.
    auto limit = std::make_unique<pbio::LimitingInputStream>(tar_stream, size);
    pbio::LimitingInputStream* limit_raw = limit.get();
    layers_.push_back(std::move(limit));
    const size_t layers_before = layers_.size();
    const size_t errors_before = errors_.size();
    const size_t wrappers_before = wrappers_.size();
    SWAPPLAN_RETURN_IF_ERROR(PushGzipIfNeeded());
    if (layers_.size() > layers_before) {
      auto counting =
          std::make_unique<CountingStream>(top(), options.max_decompressed_bytes, source_);
      CountingStream* raw = counting.get();
      errors_.push_back([raw] { return raw->error(); });
      layers_.push_back(std::move(counting));
    }
    auto member_head = std::make_unique<HeadStream>(top());
    member_head->Fill();
    SWAPPLAN_RETURN_IF_ERROR(StreamError());
    if (probe(member_head->head(), member_head->all())) {
      wrappers_.insert(wrappers_.begin() + static_cast<long>(wrappers_before),
                       absl::StrCat("tar member ", name));
      head_stream_ = std::move(member_head);
      head_ = head_stream_->head();
      head_is_all_ = head_stream_->all();
      return absl::OkStatus();
    }
    skipped.push_back(name);
    member_head.reset();
    while (layers_.size() > layers_before) layers_.pop_back();
    errors_.resize(errors_before);
    wrappers_.resize(wrappers_before);
    const int64_t used = limit_raw->ByteCount();
    layers_.pop_back();  // the limit; gives back what it read past the member
    if (!SkipExact(tar_stream, padded - used)) break;
    offset += padded;
  }
  SWAPPLAN_RETURN_IF_ERROR(StreamError());
  return absl::InvalidArgumentError(
      absl::StrCat(source_, ": tar archive is truncated after byte ", offset, " [tar-header]"));
}

absl::StatusOr<std::unique_ptr<ImportInput>> ImportInput::OpenFile(const std::string& path,
                                                                  const ImportOptions& options,
                                                                  const ContentProbe& probe) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  auto in = std::make_unique<ImportInput>(Token{});
  in->source_ = path;
  in->fd_ = fd;
  auto file = std::make_unique<pbio::FileInputStream>(fd, 1 << 20);
  pbio::FileInputStream* raw = file.get();
  in->errors_.push_back([raw, path]() -> absl::Status {
    if (raw->GetErrno() == 0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": read error: ", std::strerror(raw->GetErrno())));
  });
  if (options.progress) {
    struct stat st {};
    const int64_t total = ::fstat(fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
    in->layers_.push_back(
        std::make_unique<CountingInputStream>(std::move(file), total, options.progress));
  } else {
    in->layers_.push_back(std::move(file));
  }
  SWAPPLAN_RETURN_IF_ERROR(in->Peel(options, probe));
  return in;
}

absl::StatusOr<std::unique_ptr<ImportInput>> ImportInput::OpenMemory(
    absl::string_view bytes, const std::string& source, const ImportOptions& options,
    const ContentProbe& probe) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return Error(ErrorKind::kResourceLimit,
                 absl::StrCat(source, ": in-memory inputs are limited to 2 GiB; read it from a "
                                      "file instead [resource-limit]"));
  }
  auto in = std::make_unique<ImportInput>(Token{});
  in->source_ = source;
  in->layers_.push_back(std::make_unique<pbio::ArrayInputStream>(
      bytes.data(), static_cast<int>(bytes.size()), 1 << 20));
  SWAPPLAN_RETURN_IF_ERROR(in->Peel(options, probe));
  return in;
}

}  // namespace swapplan::import_internal
