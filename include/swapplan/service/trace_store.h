// TraceStore: the traces a planner service holds, by trace id (the
// SHA-256 of the uploaded bytes), parsed once and shared by requests.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<TraceStore> store, TraceStore::Open({}));
//   SWAPPLAN_ASSIGN_OR_RETURN(auto t, store->Add("run.trace", bytes, Sha256Hex(bytes)));
//   ... store->Find(t->id) ...   // NotFound once evicted: upload again
//
// Memory: parsed traces in an LRU list bounded by max_memory_bytes, each
// weighed by its uploaded size (a parsed trace takes a few times its binary
// size; a trace in use by a request stays alive through its shared_ptr even
// when evicted). With a directory, the uploaded bytes are also kept there
// (a BlobCache under `<dir>/traces`, bounded by max_disk_bytes), so a
// restarted server, or another replica sharing the directory, finds a trace
// uploaded before (parsed again on first use).
//
// Parsing: JSON when the first non-blank byte is '{', else the binary form,
// gzip-compressed or not (trace/io.h).
//
// Threading model: every method may be called from any thread at once (one
// mutex guards the index; parsing and file I/O happen outside it).
//
// Complexity: Add and a disk Find parse the trace (O(bytes)); a memory Find
// is O(1).
#ifndef SWAPPLAN_SERVICE_TRACE_STORE_H_
#define SWAPPLAN_SERVICE_TRACE_STORE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/service/cache.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct TraceStoreOptions {
  // Directory for uploaded bytes ("" = memory only): `<dir>/traces`.
  std::string dir;
  // Most uploaded bytes whose parsed traces stay in memory.
  int64_t max_memory_bytes = int64_t{4} << 30;
  // Most uploaded bytes kept in the directory.
  int64_t max_disk_bytes = int64_t{16} << 30;

  // InvalidArgument (kUsage) naming the field when a bound is < 1.
  absl::Status Validate() const;
};

struct StoredTrace {
  // Hex SHA-256 of the uploaded bytes.
  std::string id;
  int64_t size_bytes = 0;
  Trace trace;
  // Each iteration's fingerprint (policy/policy_io.h), computed once when
  // the trace is added: O(ops) per iteration.
  std::vector<PolicyFingerprint> fingerprints;
};

class TraceStore {
 public:
  // InvalidArgument for bad options; Internal when the directory cannot be
  // created.
  static absl::StatusOr<std::unique_ptr<TraceStore>> Open(const TraceStoreOptions& options);

  // Parses `bytes` (named `name` in messages), fingerprints its iterations
  // and keeps it under `id`
  // (which must be Sha256Hex(bytes); an id already held returns the entry
  // held). Errors of the trace readers (kMalformedInput naming the record,
  // kResourceLimit).
  absl::StatusOr<std::shared_ptr<const StoredTrace>> Add(const std::string& name,
                                                         absl::string_view bytes,
                                                         const std::string& id);

  // The trace `id`: from memory, else from the directory (parsed again).
  // NotFound (kNotFound) saying to upload it again when neither holds it.
  absl::StatusOr<std::shared_ptr<const StoredTrace>> Find(const std::string& id);

  // Parses a trace held in memory (the format sniffing above).
  static absl::StatusOr<Trace> Parse(absl::string_view bytes, const std::string& name);

  explicit TraceStore(TraceStoreOptions options) : options_(std::move(options)) {}

 private:
  struct Entry {
    std::shared_ptr<const StoredTrace> trace;
    std::list<std::string>::iterator lru;
  };
  void RememberLocked(std::shared_ptr<const StoredTrace> t);

  const TraceStoreOptions options_;
  std::unique_ptr<BlobCache> disk_;  // null without a dir
  std::mutex mu_;
  std::list<std::string> lru_;  // front = most recent
  absl::flat_hash_map<std::string, Entry> entries_;
  int64_t memory_bytes_ = 0;
};

}  // namespace swapplan

#endif  // SWAPPLAN_SERVICE_TRACE_STORE_H_
