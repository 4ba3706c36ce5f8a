// The host backend's device arena. See arena.h.
#include "runtime/arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::internal {

namespace {

std::string Ptr(const void* p) {
  return absl::StrCat("0x", absl::Hex(reinterpret_cast<uintptr_t>(p)));
}

constexpr int64_t kMaxCapacityBytes = int64_t{1} << 40;

int64_t RoundUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, static_cast<size_t>(range_));
}

absl::Status Arena::Init(int64_t capacity_bytes) {
  if (capacity_bytes <= 0 || capacity_bytes > kMaxCapacityBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host backend: device capacity ", capacity_bytes, " bytes is outside (0, 1 TiB]"));
  }
  capacity_ = capacity_bytes;
  range_ = RoundUp(2 * capacity_bytes + (int64_t{1} << 20), 4096);
  void* p = mmap(nullptr, static_cast<size_t>(range_), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Error(ErrorKind::kResourceLimit,
                 absl::StrCat("host backend: cannot reserve ", range_,
                              " bytes of address space for the device arena: ",
                              std::strerror(errno)));
  }
  base_ = static_cast<std::byte*>(p);
  InsertFree(0, range_);
  return absl::OkStatus();
}

void Arena::InsertFree(int64_t offset, int64_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void Arena::EraseFree(std::map<int64_t, int64_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_offset_.erase(it);
}

absl::StatusOr<void*> Arena::Allocate(int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("host backend: allocation of ", bytes, " bytes"));
  }
  if (in_use_ + bytes > capacity_) {
    return WithRule(
        Error(ErrorKind::kResourceLimit,
              absl::StrCat("device out of memory: ", bytes, " bytes requested, ", in_use_,
                           " of ", capacity_, " bytes in use (", capacity_ - in_use_, " free)")),
        "out-of-memory");
  }
  const int64_t size = RoundUp(bytes == 0 ? 1 : bytes, kArenaAlignment);
  auto fit = free_by_size_.lower_bound({size, -1});
  if (fit == free_by_size_.end()) {
    return WithRule(Error(ErrorKind::kResourceLimit,
                          absl::StrCat("device out of memory: no free range of ", size,
                                       " bytes in the arena (fragmentation; ", in_use_, " of ",
                                       capacity_, " bytes in use)")),
                    "out-of-memory");
  }
  const int64_t offset = fit->second;
  const int64_t free_size = fit->first;
  EraseFree(free_by_offset_.find(offset));
  if (free_size > size) InsertFree(offset + size, free_size - size);
  allocated_.emplace(offset, std::make_pair(size, bytes));
  allocated_by_offset_.emplace(offset, bytes);
  in_use_ += bytes;
  if (in_use_ > peak_) peak_ = in_use_;
  return static_cast<void*>(base_ + offset);
}

absl::Status Arena::Free(void* ptr) {
  const int64_t offset = static_cast<std::byte*>(ptr) - base_;
  auto a = ptr == nullptr || offset < 0 || offset >= range_ ? allocated_.end()
                                                            : allocated_.find(offset);
  if (a == allocated_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host backend: free of ", Ptr(ptr), ", which is not a device block"));
  }
  int64_t begin = offset;
  int64_t size = a->second.first;
  in_use_ -= a->second.second;
  allocated_.erase(a);
  allocated_by_offset_.erase(offset);
  // Coalesce with the neighbours.
  auto next = free_by_offset_.lower_bound(begin);
  if (next != free_by_offset_.end() && next->first == begin + size) {
    size += next->second;
    EraseFree(next);
  }
  auto prev = free_by_offset_.lower_bound(begin);
  if (prev != free_by_offset_.begin()) {
    --prev;
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      size += prev->second;
      EraseFree(prev);
    }
  }
  InsertFree(begin, size);
  return absl::OkStatus();
}

bool Arena::ContainsAllocated(const void* ptr, int64_t bytes) const {
  const int64_t offset = static_cast<const std::byte*>(ptr) - base_;
  if (base_ == nullptr || offset < 0 || offset >= range_) return false;
  auto it = allocated_by_offset_.upper_bound(offset);
  if (it == allocated_by_offset_.begin()) return false;
  --it;
  return offset + bytes <= it->first + std::max<int64_t>(it->second, 1);
}

}  // namespace swapplan::runtime::internal
