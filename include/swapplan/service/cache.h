// BlobCache: the planner service's cache of answers (serialized
// swapplan.v1.PlanResponse messages) by key, in memory and optionally in a
// directory shared by restarts and replicas, with single-flight computing.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<BlobCache> cache,
//                             BlobCache::Open({.dir = "/var/cache/swapplan"}));
//   bool hit = false;
//   absl::StatusOr<std::string> v = cache->GetOrCompute(key, [&] { return Plan(); }, &hit);
//
// Memory: an LRU list bounded by max_memory_bytes (sum of value sizes).
// Directory: one file per key (`<key>.blob`), written to a temporary and
// renamed into place (a reader never sees half a file, a crash leaves at
// most a stray `.tmp-*` that Open removes), bounded by max_disk_bytes with
// LRU eviction (Open orders the files it finds by modification time; a hit
// touches its file, so the order survives restarts). Replicas sharing the
// directory each keep their own index of it: a file another replica added
// is found on a miss (read, then indexed), a file another replica evicted
// is a miss.
//
// Single flight: concurrent GetOrCompute calls with one key run `compute`
// once; the others wait for its result. A result that is an error is not
// cached; waiters of a leader that was cancelled or ran past its deadline
// (ErrorKind kCancelled / kDeadlineExceeded) compute themselves instead of
// inheriting the leader's error.
//
// Threading model: every method may be called from any thread at once (one
// mutex guards the index; file reads and writes happen outside it; compute
// runs outside it on the caller's thread).
//
// Complexity: Get / Put O(1) index work plus the value's I/O; Open
// O(files in dir log files).
#ifndef SWAPPLAN_SERVICE_CACHE_H_
#define SWAPPLAN_SERVICE_CACHE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace swapplan {

struct BlobCacheOptions {
  // Directory of the persistent cache; created when missing. "" = memory
  // only.
  std::string dir;
  // Most bytes of values kept in memory (least recently used evicted).
  int64_t max_memory_bytes = int64_t{256} << 20;
  // Most bytes of values kept in `dir` (least recently used evicted).
  int64_t max_disk_bytes = int64_t{4} << 30;

  // InvalidArgument (kUsage) naming the field when a bound is < 1.
  absl::Status Validate() const;
};

struct BlobCacheStats {
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t misses = 0;
  // GetOrCompute calls that waited for another caller's computation.
  int64_t shared_flights = 0;
  int64_t memory_bytes = 0;
  int64_t disk_bytes = 0;
  int64_t disk_evictions = 0;
};

class BlobCache {
 public:
  // Opens (creating `dir` when needed) and indexes the files already there.
  // InvalidArgument for bad options; Internal when the directory cannot be
  // created or listed.
  static absl::StatusOr<std::unique_ptr<BlobCache>> Open(const BlobCacheOptions& options);

  // The value of `key`, from memory or the directory (a disk hit is also
  // kept in memory); nullopt when absent. Keys are [0-9a-zA-Z_-]+.
  std::optional<std::string> Get(const std::string& key);

  // Stores `value` under `key` in memory and (with a dir) on disk, evicting
  // the least recently used entries beyond the bounds. Internal when the
  // file cannot be written (the memory copy is kept).
  absl::Status Put(const std::string& key, const std::string& value);

  // What a computation gives GetOrCompute.
  struct Computed {
    std::string value;
    // False: handed to the waiting callers but not stored (e.g. a search
    // cut short by its caller's deadline).
    bool cacheable = true;
  };
  // Get, else `compute` (once among concurrent callers with `key`), Put of
  // its cacheable OK result, and that result. *hit (optional) tells whether
  // the value came from the cache (or from another caller's computation).
  // A Put failure is not an error of the call (the value is returned).
  // A caller waiting for another's computation asks `give_up` (optional)
  // every 20 ms and, when it says true, stops waiting: kCancelled.
  absl::StatusOr<std::string> GetOrCompute(
      const std::string& key, const std::function<absl::StatusOr<Computed>()>& compute,
      bool* hit = nullptr, const std::function<bool()>& give_up = nullptr);

  BlobCacheStats stats() const;

  // Use Open (it validates the options and indexes the directory).
  explicit BlobCache(BlobCacheOptions options) : options_(std::move(options)) {}

 private:
  struct MemoryEntry {
    std::string value;
    std::list<std::string>::iterator lru;
  };
  struct DiskEntry {
    int64_t size_bytes = 0;
    std::list<std::string>::iterator lru;
  };
  struct Flight {
    bool done = false;
    absl::StatusOr<std::string> result = absl::UnknownError("not done");
  };
  std::string PathOf(const std::string& key) const;
  // Requires mu_. Inserts or refreshes the memory copy; evicts beyond the bound.
  void RememberLocked(const std::string& key, std::string value);
  // Requires mu_. Records a file of `size` for key; returns the keys whose
  // files must be removed to stay within the bound.
  std::vector<std::string> IndexFileLocked(const std::string& key, int64_t size);

  const BlobCacheOptions options_;
  mutable std::mutex mu_;
  std::condition_variable flight_done_;
  std::list<std::string> memory_lru_;  // front = most recent
  absl::flat_hash_map<std::string, MemoryEntry> memory_;
  std::list<std::string> disk_lru_;
  absl::flat_hash_map<std::string, DiskEntry> disk_;
  absl::flat_hash_map<std::string, std::shared_ptr<Flight>> flights_;
  BlobCacheStats stats_;
};

// Writes `content` to `path` through a unique temporary in the same
// directory (mkstemp) renamed into place: concurrent writers of one path
// (threads or processes) never interleave. Internal naming the path on
// failure.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view content);

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

// Incremental SHA-256 (uploads are hashed chunk by chunk).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(absl::string_view data);
  // Lowercase hex digest; the object must not be updated afterwards.
  std::string HexDigest();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_SERVICE_CACHE_H_
