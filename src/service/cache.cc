#include "swapplan/service/cache.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

constexpr absl::string_view kSuffix = ".blob";
constexpr absl::string_view kTempPrefix = ".tmp-";

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(s).str();
}

bool ValidKey(const std::string& key) {
  if (key.empty() || key.size() > 128) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '_' || c == '-';
  });
}

}  // namespace

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::Update(absl::string_view data) {
  EVP_DigestUpdate(state_->ctx, data.data(), data.size());
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(state_->ctx, md, &n);
  return Hex(md, n);
}

std::string Sha256Hex(absl::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view content) {
  const std::filesystem::path target(path);
  // mkstemp's template: six X characters it replaces with a unique suffix.
  std::string tmp =
      (target.parent_path() / absl::StrCat(kTempPrefix, std::string(6, 'X'))).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return Error(ErrorKind::kInternal,
                 absl::StrCat(path, ": cannot create a temporary: ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error(ErrorKind::kInternal, absl::StrCat(path, ": write failed: ", why));
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, 0644);
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error(ErrorKind::kInternal, absl::StrCat(path, ": cannot rename into place: ", why));
  }
  return absl::OkStatus();
}

absl::Status BlobCacheOptions::Validate() const {
  if (max_memory_bytes < 1) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("cache: max_memory_bytes ", max_memory_bytes, " must be >= 1"));
  }
  if (max_disk_bytes < 1) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("cache: max_disk_bytes ", max_disk_bytes, " must be >= 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BlobCache>> BlobCache::Open(const BlobCacheOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto cache = std::make_unique<BlobCache>(options);
  if (options.dir.empty()) return cache;
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return Error(ErrorKind::kInternal,
                 absl::StrCat(options.dir, ": cannot create the cache directory: ", ec.message()));
  }
  struct Found {
    std::filesystem::file_time_type mtime;
    std::string key;
    int64_t size;
  };
  std::vector<Found> found;
  for (const auto& e : std::filesystem::directory_iterator(options.dir, ec)) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, kTempPrefix)) {
      std::filesystem::remove(e.path(), ec);  // left by a crash
      continue;
    }
    if (!e.is_regular_file() || !absl::EndsWith(name, kSuffix)) continue;
    std::string key = name.substr(0, name.size() - kSuffix.size());
    if (!ValidKey(key)) continue;
    found.push_back({e.last_write_time(), std::move(key), static_cast<int64_t>(e.file_size())});
  }
  if (ec) {
    return Error(ErrorKind::kInternal,
                 absl::StrCat(options.dir, ": cannot list the cache directory: ", ec.message()));
  }
  // Oldest first, so that the newest ends at the front of the LRU list.
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  std::vector<std::string> evict;
  {
    std::lock_guard<std::mutex> lock(cache->mu_);
    for (const Found& f : found) {
      for (std::string& k : cache->IndexFileLocked(f.key, f.size)) evict.push_back(std::move(k));
    }
  }
  for (const std::string& k : evict) std::filesystem::remove(cache->PathOf(k), ec);
  return cache;
}

std::string BlobCache::PathOf(const std::string& key) const {
  return (std::filesystem::path(options_.dir) / absl::StrCat(key, kSuffix)).string();
}

void BlobCache::RememberLocked(const std::string& key, std::string value) {
  if (auto it = memory_.find(key); it != memory_.end()) {
    stats_.memory_bytes -= static_cast<int64_t>(it->second.value.size());
    memory_lru_.erase(it->second.lru);
    memory_.erase(it);
  }
  const int64_t size = static_cast<int64_t>(value.size());
  if (size > options_.max_memory_bytes) return;
  memory_lru_.push_front(key);
  memory_[key] = MemoryEntry{std::move(value), memory_lru_.begin()};
  stats_.memory_bytes += size;
  while (stats_.memory_bytes > options_.max_memory_bytes) {
    const std::string& victim = memory_lru_.back();
    auto it = memory_.find(victim);
    stats_.memory_bytes -= static_cast<int64_t>(it->second.value.size());
    memory_.erase(it);
    memory_lru_.pop_back();
  }
}

std::vector<std::string> BlobCache::IndexFileLocked(const std::string& key, int64_t size) {
  if (auto it = disk_.find(key); it != disk_.end()) {
    stats_.disk_bytes -= it->second.size_bytes;
    disk_lru_.erase(it->second.lru);
    disk_.erase(it);
  }
  disk_lru_.push_front(key);
  disk_[key] = DiskEntry{size, disk_lru_.begin()};
  stats_.disk_bytes += size;
  std::vector<std::string> evict;
  // The entry just added stays even when it alone passes the bound.
  while (stats_.disk_bytes > options_.max_disk_bytes && disk_lru_.size() > 1) {
    std::string victim = disk_lru_.back();
    auto it = disk_.find(victim);
    stats_.disk_bytes -= it->second.size_bytes;
    disk_.erase(it);
    disk_lru_.pop_back();
    ++stats_.disk_evictions;
    evict.push_back(std::move(victim));
  }
  return evict;
}

std::optional<std::string> BlobCache::Get(const std::string& key) {
  if (!ValidKey(key)) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      memory_lru_.splice(memory_lru_.begin(), memory_lru_, it->second.lru);
      if (auto d = disk_.find(key); d != disk_.end()) {
        disk_lru_.splice(disk_lru_.begin(), disk_lru_, d->second.lru);
      }
      ++stats_.memory_hits;
      return it->second.value;
    }
  }
  if (!options_.dir.empty()) {
    const std::string path = PathOf(key);
    if (std::optional<std::string> v = ReadWholeFile(path)) {
      std::error_code ec;
      // Touch: the LRU order survives a restart.
      std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
      std::vector<std::string> evict;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.disk_hits;
        evict = IndexFileLocked(key, static_cast<int64_t>(v->size()));
        RememberLocked(key, *v);
      }
      for (const std::string& k : evict) std::filesystem::remove(PathOf(k), ec);
      return v;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.misses;
  return std::nullopt;
}

absl::Status BlobCache::Put(const std::string& key, const std::string& value) {
  if (!ValidKey(key)) {
    return Error(ErrorKind::kInternal, absl::StrCat("cache: invalid key '", key, "'"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    RememberLocked(key, value);
  }
  if (options_.dir.empty()) return absl::OkStatus();
  const std::string path = PathOf(key);
  if (absl::Status s = WriteFileAtomically(path, value); !s.ok()) return s;
  std::vector<std::string> evict;
  {
    std::lock_guard<std::mutex> lock(mu_);
    evict = IndexFileLocked(key, static_cast<int64_t>(value.size()));
  }
  std::error_code ec;
  for (const std::string& k : evict) std::filesystem::remove(PathOf(k), ec);
  return absl::OkStatus();
}

absl::StatusOr<std::string> BlobCache::GetOrCompute(
    const std::string& key, const std::function<absl::StatusOr<Computed>()>& compute,
    bool* hit, const std::function<bool()>& give_up) {
  if (hit != nullptr) *hit = false;
  for (;;) {
    if (std::optional<std::string> v = Get(key)) {
      if (hit != nullptr) *hit = true;
      return *std::move(v);
    }
    std::shared_ptr<Flight> flight;
    bool leader = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto it = flights_.find(key);
      if (it == flights_.end()) {
        flight = std::make_shared<Flight>();
        flights_[key] = flight;
        leader = true;
      } else {
        flight = it->second;
        ++stats_.shared_flights;
        while (!flight_done_.wait_for(lock, std::chrono::milliseconds(20),
                                      [&] { return flight->done; })) {
          if (!give_up) continue;
          lock.unlock();  // give_up may take a while (it asks gRPC)
          const bool stop = give_up();
          lock.lock();
          if (stop && !flight->done) {
            return Error(ErrorKind::kCancelled,
                         "gave up waiting for an identical request's computation");
          }
        }
      }
    }
    if (!leader) {
      const ErrorKind kind = KindOf(flight->result.status());
      if (kind == ErrorKind::kCancelled || kind == ErrorKind::kDeadlineExceeded) continue;
      if (hit != nullptr) *hit = flight->result.ok();
      return flight->result;
    }
    absl::StatusOr<Computed> computed = compute();
    absl::StatusOr<std::string> result = absl::UnknownError("not computed");
    if (computed.ok()) {
      // A full disk costs only the cache.
      if (computed->cacheable) Put(key, computed->value).IgnoreError();
      result = std::move(computed->value);
    } else {
      result = computed.status();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      flight->result = result;
      flight->done = true;
      flights_.erase(key);
    }
    flight_done_.notify_all();
    return result;
  }
}

BlobCacheStats BlobCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace swapplan
