// DeviceModel: the one description of the machine a policy is planned for,
// checked against and executed on (SPEC §6, §7, §9). Every planner, the
// resolver, the checker, the evaluation simulator, the synthesizer's
// roofline, the CLI and the runtime take this struct; a policy records the
// model it was planned with, so the numbers a policy promises and the
// numbers the simulator reports come from the same model.
//
//   DeviceModel d;
//   d.capacity_bytes = int64_t{64} << 30;       // 64 GiB of HBM
//   d.reserve_bytes = int64_t{2} << 30;         // fragmentation, workspaces
//   d.h2d_bandwidth_bytes_per_s = 25e9;
//   d.d2h_bandwidth_bytes_per_s = 25e9;
//   SWAPPLAN_RETURN_IF_ERROR(d.Validate());
//   int64_t budget = d.BudgetBytes();                            // 62 GiB
//   int64_t ns = d.CopyNs(Direction::kDeviceToHost, 100);        // latency + 4 ns
//
// Memory tiers. The host (pinned memory, reached over the host link at
// h2d/d2h bandwidth and copy_latency_ns, no capacity limit) is always there.
// `tiers` adds further places a tensor may live while off the device
// (HyperOffload's remote pool, seed 003 §2.2.2 and §6): each with its own
// capacity, bandwidth per direction and latency, possibly shared by the
// ranks of a node. Tier 0 in policies is the host; tier i >= 1 is
// tiers[i - 1]. Every tier has its own copy streams, one per direction (one
// for both when half duplex), so copies to different tiers overlap.
//
// Shared tiers. A tier's capacity and bandwidths are the figures of the
// whole tier; `shared_by_ranks` ranks use it at once. One rank (the one a
// trace and a policy describe) gets capacity / shared_by_ranks bytes and
// bandwidth / shared_by_ranks bytes/s: data-parallel ranks run the same
// schedule, so they store and load at the same moments (the conservative
// reading; a pool whose links are per rank is described with
// shared_by_ranks = 1 and the per-rank figures). TierCapacityBytes and
// TierBandwidth give the per-rank figures; TierCopyNs uses them.
//
//   d.tiers.push_back({.name = "remote", .capacity_bytes = int64_t{1} << 40,
//                      .store_bandwidth_bytes_per_s = 400e9,
//                      .load_bandwidth_bytes_per_s = 400e9, .latency_ns = 2000,
//                      .shared_by_ranks = 8});
//   d.TierCapacityBytes(1);                        // 128 GiB for this rank
//   d.TierCopyNs(1, Direction::kHostToDevice, 50'000'000);  // 2000 + 1000000 ns
//
// Copy engines. 2 (the default): device→host and host→device copies run
// concurrently on their own streams (a duplex link). 1: one copy at a time
// in issue order (half duplex).
//
// All figures are per device (rank). Units are in the field names.
#ifndef SWAPPLAN_DEVICE_DEVICE_MODEL_H_
#define SWAPPLAN_DEVICE_DEVICE_MODEL_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace swapplan {

// "Unlimited" capacity: the ideal run, a tier without a cap.
inline constexpr int64_t kUnlimitedCapacityBytes = std::numeric_limits<int64_t>::max();

enum class Direction : uint8_t {
  kDeviceToHost = 0,  // swap-out / store
  kHostToDevice = 1,  // swap-in / prefetch
};

// A memory tier beyond the host (seed 003 §3: a node-level shared pool).
struct MemoryTier {
  // Name in reports and policies ("remote", "cxl-pool", ...).
  std::string name;
  // Bytes this rank may keep in the tier; kUnlimitedCapacityBytes = no cap.
  int64_t capacity_bytes = kUnlimitedCapacityBytes;
  // Device → tier (store) and tier → device (prefetch) bandwidth.
  double store_bandwidth_bytes_per_s = 0;
  double load_bandwidth_bytes_per_s = 0;
  // Fixed cost of every copy to or from the tier.
  int64_t latency_ns = 0;
  // Ranks of a node sharing the tier: the figures above are the tier's
  // totals and one rank gets 1 / shared_by_ranks of the capacity and of
  // each bandwidth (see "Shared tiers" above).
  int32_t shared_by_ranks = 1;

  // InvalidArgument naming the field (empty name, capacity <= 0, bandwidth
  // not positive and finite, negative latency, shared_by_ranks < 1).
  absl::Status Validate() const;
};

struct DeviceModel {
  // Preset name (device/presets.h) or "custom".
  std::string name = "custom";
  // Device memory capacity; kUnlimitedCapacityBytes for the ideal run.
  int64_t capacity_bytes = 0;
  // Kept free for the allocator's fragmentation, workspaces and
  // communication buffers: planners plan to capacity - reserve.
  int64_t reserve_bytes = 0;
  // Pinned host memory copies, per direction.
  double h2d_bandwidth_bytes_per_s = 0;
  double d2h_bandwidth_bytes_per_s = 0;
  // Fixed cost of every host copy (launch and DMA setup).
  int64_t copy_latency_ns = 0;
  // 2: D2H and H2D overlap (duplex); 1: one copy at a time (half duplex).
  int32_t copy_engines = 2;
  // Recorded op durations are multiplied by this (a trace recorded on a
  // slower device, planned for a faster one: < 1). 1 = as recorded.
  double compute_time_scale = 1.0;
  // Roofline figures for durations derived from shapes (synthesizer,
  // importers without timings); 0 = unknown.
  double peak_flops_per_s = 0;
  double memory_bandwidth_bytes_per_s = 0;
  // Device-to-device link per direction (NVLink, HCCS) for collectives;
  // 0 = unknown.
  double interconnect_bandwidth_bytes_per_s = 0;
  // Tiers beyond the host (tier i >= 1 in policies is tiers[i - 1]).
  std::vector<MemoryTier> tiers;

  // The budget: capacity - reserve, kUnlimitedCapacityBytes for an
  // unlimited capacity. The one place this is computed: planners
  // (PlanningProblem::budget_bytes), policies (Policy::BudgetBytes, the v1
  // device_budget_bytes), the checker, the simulator, replay and the
  // comparison all call it. Not positive when the reserve leaves nothing
  // (ValidateBudget says so).
  int64_t BudgetBytes() const;
  // InvalidArgument when the reserve is negative or not below the capacity
  // (an unlimited capacity gives an unlimited budget).
  absl::Status ValidateBudget() const;

  // Duration of one host copy of `bytes` in `dir`: TransferNs(bytes,
  // bandwidth of `dir`, copy_latency_ns). Requires a valid model and
  // bytes >= 0.
  int64_t CopyNs(Direction dir, int64_t bytes) const;
  // The same for tier `tier` (0 = host): TransferNs(bytes,
  // TierBandwidth(tier, dir), the tier's latency). Requires a valid model,
  // 0 <= tier < num_tiers() and bytes >= 0.
  int64_t TierCopyNs(int32_t tier, Direction dir, int64_t bytes) const;

  // Tiers a policy item may name: the host plus `tiers`.
  int32_t num_tiers() const { return static_cast<int32_t>(tiers.size()) + 1; }
  // "host" for tier 0, tiers[tier - 1].name otherwise. Requires a tier in
  // range.
  const std::string& TierName(int32_t tier) const;
  // The tier named `name` ("host" is 0), or -1. O(tiers).
  int32_t FindTier(absl::string_view name) const;
  // Bytes this rank may keep in `tier`: unlimited for the host and for an
  // unlimited tier, else capacity_bytes / shared_by_ranks (rounded down).
  int64_t TierCapacityBytes(int32_t tier) const;
  // This rank's bandwidth to (kDeviceToHost: store) or from (kHostToDevice:
  // load) `tier`: the host's d2h / h2d bandwidth, a tier's bandwidth /
  // shared_by_ranks.
  double TierBandwidth(int32_t tier, Direction dir) const;
  // Fixed cost of every copy to or from `tier`.
  int64_t TierLatencyNs(int32_t tier) const;

  // Both directions share one link (copy_engines == 1).
  bool half_duplex() const { return copy_engines == 1; }

  // InvalidArgument naming the field and the rule it breaks: capacity <= 0,
  // reserve < 0 or >= capacity, a bandwidth not positive and finite,
  // latency < 0, copy_engines not 1 or 2, compute_time_scale not positive
  // and finite, negative roofline figures, an invalid tier or two tiers with
  // one name.
  absl::Status Validate() const;
  // The same for a model whose capacity or bandwidths may be "not given"
  // (0): options resolved later from a trace or a policy, a v1 policy that
  // recorded no bandwidth. Everything else as Validate.
  absl::Status ValidatePartial() const;

  bool operator==(const DeviceModel& o) const;
};

// Upper bound of the bandwidth term of a copy's duration (about 3 years):
// absurd bandwidths cannot overflow a simulated clock.
inline constexpr int64_t kMaxCopyNs = 100'000'000'000'000'000;

// latency_ns + ceil(bytes / (bytes_per_s / 1e9)), the second term saturating
// at kMaxCopyNs. Requires bytes >= 0, bytes_per_s > 0, latency_ns >= 0.
int64_t TransferNs(int64_t bytes, double bytes_per_s, int64_t latency_ns);

}  // namespace swapplan

#endif  // SWAPPLAN_DEVICE_DEVICE_MODEL_H_
