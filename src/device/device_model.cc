#include "swapplan/device/device_model.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace swapplan {
namespace {

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }
bool NonNegativeFinite(double v) { return std::isfinite(v) && v >= 0; }

absl::Status Invalid(absl::string_view where, absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, " ", rule));
}

}  // namespace

int64_t TransferNs(int64_t bytes, double bytes_per_s, int64_t latency_ns) {
  const double bytes_per_ns = bytes_per_s / 1e9;
  const double ns = std::ceil(static_cast<double>(bytes) / bytes_per_ns);
  // Both terms are <= kMaxCopyNs (1e17) for a valid model's latency
  // (Validate caps it), so the sum cannot overflow.
  return latency_ns + (ns < static_cast<double>(kMaxCopyNs) ? static_cast<int64_t>(ns) : kMaxCopyNs);
}

absl::Status MemoryTier::Validate() const {
  const std::string where = absl::StrCat("memory tier \"", name, "\"");
  if (name.empty()) return absl::InvalidArgumentError("memory tier: name is empty");
  if (name == "host" || name == "device") {
    return Invalid(where, "name", "is reserved (the host tier is always tier 0)");
  }
  if (capacity_bytes <= 0) return Invalid(where, "capacity_bytes", "must be positive");
  if (!PositiveFinite(store_bandwidth_bytes_per_s)) {
    return Invalid(where, "store_bandwidth_bytes_per_s", "must be positive and finite");
  }
  if (!PositiveFinite(load_bandwidth_bytes_per_s)) {
    return Invalid(where, "load_bandwidth_bytes_per_s", "must be positive and finite");
  }
  if (latency_ns < 0 || latency_ns > kMaxCopyNs) {
    return Invalid(where, "latency_ns", "must be in [0, 1e17]");
  }
  if (shared_by_ranks < 1) return Invalid(where, "shared_by_ranks", "must be at least 1");
  return absl::OkStatus();
}

int64_t DeviceModel::BudgetBytes() const {
  if (capacity_bytes == kUnlimitedCapacityBytes) return kUnlimitedCapacityBytes;
  return capacity_bytes - reserve_bytes;
}

absl::Status DeviceModel::ValidateBudget() const {
  if (reserve_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device model: reserve_bytes ", reserve_bytes, " is negative"));
  }
  if (capacity_bytes != kUnlimitedCapacityBytes && reserve_bytes >= capacity_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("device model: reserve_bytes ", reserve_bytes,
                                                   " leaves no memory of capacity_bytes ",
                                                   capacity_bytes));
  }
  return absl::OkStatus();
}

int64_t DeviceModel::CopyNs(Direction dir, int64_t bytes) const {
  return TransferNs(bytes,
                    dir == Direction::kDeviceToHost ? d2h_bandwidth_bytes_per_s
                                                    : h2d_bandwidth_bytes_per_s,
                    copy_latency_ns);
}

int64_t DeviceModel::TierCopyNs(int32_t tier, Direction dir, int64_t bytes) const {
  if (tier == 0) return CopyNs(dir, bytes);
  return TransferNs(bytes, TierBandwidth(tier, dir), TierLatencyNs(tier));
}

const std::string& DeviceModel::TierName(int32_t tier) const {
  static const std::string kHost = "host";
  return tier == 0 ? kHost : tiers[static_cast<size_t>(tier - 1)].name;
}

int32_t DeviceModel::FindTier(absl::string_view name) const {
  if (name == "host") return 0;
  for (size_t i = 0; i < tiers.size(); ++i) {
    if (tiers[i].name == name) return static_cast<int32_t>(i) + 1;
  }
  return -1;
}

int64_t DeviceModel::TierCapacityBytes(int32_t tier) const {
  if (tier == 0) return kUnlimitedCapacityBytes;
  const MemoryTier& t = tiers[static_cast<size_t>(tier - 1)];
  if (t.capacity_bytes == kUnlimitedCapacityBytes) return kUnlimitedCapacityBytes;
  return t.capacity_bytes / std::max<int32_t>(t.shared_by_ranks, 1);
}

double DeviceModel::TierBandwidth(int32_t tier, Direction dir) const {
  const bool store = dir == Direction::kDeviceToHost;
  if (tier == 0) return store ? d2h_bandwidth_bytes_per_s : h2d_bandwidth_bytes_per_s;
  const MemoryTier& t = tiers[static_cast<size_t>(tier - 1)];
  return (store ? t.store_bandwidth_bytes_per_s : t.load_bandwidth_bytes_per_s) /
         std::max<int32_t>(t.shared_by_ranks, 1);
}

int64_t DeviceModel::TierLatencyNs(int32_t tier) const {
  return tier == 0 ? copy_latency_ns : tiers[static_cast<size_t>(tier - 1)].latency_ns;
}

absl::Status DeviceModel::Validate() const {
  const std::string where = absl::StrCat("device model \"", name, "\"");
  if (capacity_bytes <= 0) return Invalid(where, "capacity_bytes", "must be positive");
  if (reserve_bytes < 0) return Invalid(where, "reserve_bytes", "must not be negative");
  if (capacity_bytes != kUnlimitedCapacityBytes && reserve_bytes >= capacity_bytes) {
    return Invalid(where, "reserve_bytes", "must be below capacity_bytes");
  }
  if (!PositiveFinite(h2d_bandwidth_bytes_per_s)) {
    return Invalid(where, "h2d_bandwidth_bytes_per_s", "must be positive and finite");
  }
  if (!PositiveFinite(d2h_bandwidth_bytes_per_s)) {
    return Invalid(where, "d2h_bandwidth_bytes_per_s", "must be positive and finite");
  }
  if (copy_latency_ns < 0 || copy_latency_ns > kMaxCopyNs) {
    return Invalid(where, "copy_latency_ns", "must be in [0, 1e17]");
  }
  if (copy_engines != 1 && copy_engines != 2) {
    return Invalid(where, "copy_engines", "must be 1 (half duplex) or 2 (duplex)");
  }
  if (!PositiveFinite(compute_time_scale)) {
    return Invalid(where, "compute_time_scale", "must be positive and finite");
  }
  if (!NonNegativeFinite(peak_flops_per_s)) {
    return Invalid(where, "peak_flops_per_s", "must be finite and not negative");
  }
  if (!NonNegativeFinite(memory_bandwidth_bytes_per_s)) {
    return Invalid(where, "memory_bandwidth_bytes_per_s", "must be finite and not negative");
  }
  if (!NonNegativeFinite(interconnect_bandwidth_bytes_per_s)) {
    return Invalid(where, "interconnect_bandwidth_bytes_per_s", "must be finite and not negative");
  }
  absl::flat_hash_set<std::string> names;
  for (const MemoryTier& t : tiers) {
    if (absl::Status s = t.Validate(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.message()));
    }
    if (!names.insert(t.name).second) {
      return Invalid(where, absl::StrCat("tier \"", t.name, "\""), "appears twice");
    }
  }
  return absl::OkStatus();
}

absl::Status DeviceModel::ValidatePartial() const {
  DeviceModel given = *this;
  if (given.capacity_bytes == 0) given.capacity_bytes = kUnlimitedCapacityBytes;
  if (given.h2d_bandwidth_bytes_per_s == 0) given.h2d_bandwidth_bytes_per_s = 1;
  if (given.d2h_bandwidth_bytes_per_s == 0) given.d2h_bandwidth_bytes_per_s = 1;
  return given.Validate();
}

bool DeviceModel::operator==(const DeviceModel& o) const {
  if (tiers.size() != o.tiers.size()) return false;
  for (size_t i = 0; i < tiers.size(); ++i) {
    const MemoryTier& a = tiers[i];
    const MemoryTier& b = o.tiers[i];
    if (a.name != b.name || a.capacity_bytes != b.capacity_bytes ||
        a.store_bandwidth_bytes_per_s != b.store_bandwidth_bytes_per_s ||
        a.load_bandwidth_bytes_per_s != b.load_bandwidth_bytes_per_s ||
        a.latency_ns != b.latency_ns || a.shared_by_ranks != b.shared_by_ranks) {
      return false;
    }
  }
  return name == o.name && capacity_bytes == o.capacity_bytes &&
         reserve_bytes == o.reserve_bytes &&
         h2d_bandwidth_bytes_per_s == o.h2d_bandwidth_bytes_per_s &&
         d2h_bandwidth_bytes_per_s == o.d2h_bandwidth_bytes_per_s &&
         copy_latency_ns == o.copy_latency_ns && copy_engines == o.copy_engines &&
         compute_time_scale == o.compute_time_scale && peak_flops_per_s == o.peak_flops_per_s &&
         memory_bandwidth_bytes_per_s == o.memory_bandwidth_bytes_per_s &&
         interconnect_bandwidth_bytes_per_s == o.interconnect_bandwidth_bytes_per_s;
}

}  // namespace swapplan
