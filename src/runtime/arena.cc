// The host backend's device arena. See arena.h.
#include "runtime/arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::internal {

namespace {

std::string Ptr(const void* p) {
  return absl::StrCat("0x", absl::Hex(reinterpret_cast<uintptr_t>(p)));
}

constexpr int64_t kMaxCapacityBytes = int64_t{1} << 40;

int64_t RoundUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

absl::Status OutOfMemory(std::string message) {
  return WithRule(Error(ErrorKind::kResourceLimit, std::move(message)), "out-of-memory");
}

}  // namespace

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, static_cast<size_t>(range_));
}

absl::Status Arena::Init(int64_t capacity_bytes,
                         const std::optional<AllocatorOptions>& reserved_model) {
  if (capacity_bytes <= 0 || capacity_bytes > kMaxCapacityBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host backend: device capacity ", capacity_bytes, " bytes is outside (0, 1 TiB]"));
  }
  if (reserved_model) {
    AllocatorOptions o = *reserved_model;
    o.capacity_bytes = capacity_bytes;
    if (o.kind != AllocatorKind::kCudaCaching) {
      return absl::InvalidArgumentError(
          "host backend: the reserved-bytes model must be cuda-caching (best-fit is the arena "
          "itself)");
    }
    if (absl::Status s = o.Validate(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("host backend: ", s.message()));
    }
    reserved_ = MakeAllocatorModel(o);
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
  AllocatorOptions placement;
  placement.kind = AllocatorKind::kBestFitArena;
  placement.alignment_bytes = kArenaAlignment;
  placement.capacity_bytes = range_;
  placement_ = MakeAllocatorModel(placement);
  return absl::OkStatus();
}

absl::StatusOr<void*> Arena::Allocate(int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("host backend: allocation of ", bytes, " bytes"));
  }
  Block b;
  b.requested = bytes;
  if (reserved_ != nullptr) {
    const MallocResult r = reserved_->Malloc(std::min(bytes, kMaxAllocatorRequestBytes), 0);
    if (r.oom) {
      // PyTorch raises here with its cache already released: undo the
      // segment the model took past the capacity.
      reserved_->Free(r.block);
      reserved_->EmptyCache();
      return OutOfMemory(absl::StrCat(
          "device out of memory: ", bytes, " bytes requested; the caching allocator model "
          "cannot place them within ", capacity_, " reserved bytes (", reserved_->stats().reserved_bytes,
          " reserved after releasing its cache, ", in_use_, " bytes in use)"));
    }
    b.reserved = r.block;
  } else if (in_use_ + bytes > capacity_) {
    return OutOfMemory(absl::StrCat("device out of memory: ", bytes, " bytes requested, ",
                                    in_use_, " of ", capacity_, " bytes in use (",
                                    capacity_ - in_use_, " free)"));
  }
  const MallocResult placed = placement_->Malloc(bytes, 0);
  if (placed.oom) {
    placement_->Free(placed.block);
    if (b.reserved >= 0) reserved_->Free(b.reserved);
    return OutOfMemory(absl::StrCat("device out of memory: no free range of ", placed.block_bytes,
                                    " bytes in the arena (fragmentation; ", in_use_, " of ",
                                    capacity_, " bytes in use)"));
  }
  b.placed = placed.block;
  allocated_.emplace(placed.address, b);
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  peak_reserved_ = std::max(peak_reserved_, reserved_bytes());
  return static_cast<void*>(base_ + placed.address);
}

absl::Status Arena::Free(void* ptr) {
  const int64_t offset = static_cast<std::byte*>(ptr) - base_;
  auto a = ptr == nullptr || offset < 0 || offset >= range_ ? allocated_.end()
                                                            : allocated_.find(offset);
  if (a == allocated_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host backend: free of ", Ptr(ptr), ", which is not a device block"));
  }
  placement_->Free(a->second.placed);
  if (a->second.reserved >= 0) reserved_->Free(a->second.reserved);
  in_use_ -= a->second.requested;
  allocated_.erase(a);
  return absl::OkStatus();
}

bool Arena::ContainsAllocated(const void* ptr, int64_t bytes) const {
  const int64_t offset = static_cast<const std::byte*>(ptr) - base_;
  if (base_ == nullptr || offset < 0 || offset >= range_) return false;
  auto it = allocated_.upper_bound(offset);
  if (it == allocated_.begin()) return false;
  --it;
  return offset + bytes <= it->first + std::max<int64_t>(it->second.requested, 1);
}

int64_t Arena::reserved_bytes() const {
  if (placement_ == nullptr) return 0;
  return (reserved_ != nullptr ? reserved_ : placement_)->stats().reserved_bytes;
}


}  // namespace swapplan::runtime::internal
