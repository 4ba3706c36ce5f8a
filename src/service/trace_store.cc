#include "swapplan/service/trace_store.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"

namespace swapplan {

absl::Status TraceStoreOptions::Validate() const {
  if (max_memory_bytes < 1) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("trace store: max_memory_bytes ", max_memory_bytes, " must be >= 1"));
  }
  if (max_disk_bytes < 1) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("trace store: max_disk_bytes ", max_disk_bytes, " must be >= 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TraceStore>> TraceStore::Open(const TraceStoreOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto store = std::make_unique<TraceStore>(options);
  if (!options.dir.empty()) {
    // Bytes only on disk: a memory bound of 1 byte keeps no value in memory
    // (the parsed trace is what memory holds).
    absl::StatusOr<std::unique_ptr<BlobCache>> disk =
        BlobCache::Open({.dir = (std::filesystem::path(options.dir) / "traces").string(),
                         .max_memory_bytes = 1,
                         .max_disk_bytes = options.max_disk_bytes});
    if (!disk.ok()) return disk.status();
    store->disk_ = *std::move(disk);
  }
  return store;
}

absl::StatusOr<Trace> TraceStore::Parse(absl::string_view bytes, const std::string& name) {
  size_t i = 0;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\t' ||
                              bytes[i] == '\r')) {
    ++i;
  }
  if (i < bytes.size() && bytes[i] == '{') return ParseTraceJson(bytes, name);
  return ParseTraceBinary(bytes, name);
}

void TraceStore::RememberLocked(std::shared_ptr<const StoredTrace> t) {
  if (auto it = entries_.find(t->id); it != entries_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  const std::string id = t->id;
  lru_.push_front(id);
  memory_bytes_ += t->size_bytes;
  entries_[id] = Entry{std::move(t), lru_.begin()};
  // The newest entry stays even when it alone passes the bound.
  while (memory_bytes_ > options_.max_memory_bytes && lru_.size() > 1) {
    auto it = entries_.find(lru_.back());
    memory_bytes_ -= it->second.trace->size_bytes;
    entries_.erase(it);
    lru_.pop_back();
  }
}

absl::StatusOr<std::shared_ptr<const StoredTrace>> TraceStore::Add(const std::string& name,
                                                                   absl::string_view bytes,
                                                                   const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = entries_.find(id); it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.trace;
    }
  }
  absl::StatusOr<Trace> trace = Parse(bytes, name);
  if (!trace.ok()) return trace.status();
  auto stored = std::make_shared<StoredTrace>();
  stored->id = id;
  stored->size_bytes = static_cast<int64_t>(bytes.size());
  stored->trace = *std::move(trace);
  for (int32_t i = 0; i < stored->trace.num_iterations(); ++i) {
    stored->fingerprints.push_back(ComputeFingerprint(stored->trace, i));
  }
  if (disk_ != nullptr) {
    // A failed write costs only persistence (the trace is held in memory).
    disk_->Put(id, std::string(bytes)).IgnoreError();
  }
  std::lock_guard<std::mutex> lock(mu_);
  RememberLocked(stored);
  return std::shared_ptr<const StoredTrace>(stored);
}

absl::StatusOr<std::shared_ptr<const StoredTrace>> TraceStore::Find(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = entries_.find(id); it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.trace;
    }
  }
  if (disk_ != nullptr) {
    if (std::optional<std::string> bytes = disk_->Get(id)) {
      return Add(id, *bytes, id);
    }
  }
  return Error(ErrorKind::kNotFound,
               absl::StrCat("trace ", id, " is not held by this server (evicted, or uploaded to "
                            "another replica): upload it again"));
}

}  // namespace swapplan
