// Internal pieces of the evaluation simulator shared by simulator.cc (setup,
// policy resolution) and simulator_run.cc (the replay). Not installed.
#ifndef SWAPPLAN_SRC_SIM_SIMULATOR_INTERNAL_H_
#define SWAPPLAN_SRC_SIM_SIMULATOR_INTERNAL_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/sim/simulator.h"

namespace swapplan::internal_sim {

// A policy item resolved to schedule positions.
struct Item {
  int64_t size = 0;
  bool swap = true;  // false: RECOMPUTE
  int64_t recompute_ns = 0;
  int32_t out = 0, release = 0, in = 0, use = 0;  // positions
  int64_t out_ns = 0, in_ns = 0;                  // copy durations (SWAP)
  int32_t slot = 0;                               // index into resolved.tensors
  bool wraps = false;  // window wraps around the iteration (policy.h)
  bool clean = false;  // no copy out: the tier's copy is current
  int32_t tier = 0;    // 0 = host; its copies run on the tier's streams
};

// Items grouped by one of their positions: items[begin[p] .. begin[p+1]).
struct Buckets {
  std::vector<int32_t> begin;
  std::vector<int32_t> items;
  absl::Span<const int32_t> at(int32_t p) const {
    if (begin.empty()) return {};
    return absl::MakeConstSpan(items).subspan(begin[p], begin[p + 1] - begin[p]);
  }
};

// Size-class memory pool of the policy (pool.cc): objects per class, in use
// before the first op, and per position the classes whose objects are taken
// at its dispatch (tensors allocated there, swap-in / recompute blocks) and
// given back after it (tensor frees, RECOMPUTE and clean releases). SWAP
// items give theirs back when their block is released (item_class).
struct PoolPlan {
  bool enabled = false;
  int64_t pool_bytes = 0;
  std::vector<int32_t> capacity;
  std::vector<int32_t> initial;
  Buckets alloc, free;
  std::vector<int32_t> item_class;
};

// Per-run pool state: objects in use and requested at the current dispatch.
struct PoolState {
  std::vector<int32_t> in_use;
  std::vector<int32_t> request;
};

struct Prepared {
  // The resolver's view of the policy (policy/resolver.h): positions, the
  // tensors occupying the device with their positions, the bytes allocated
  // at / freed after each position.
  ResolvedPolicy resolved;
  // Position of each local op when a schedule is given (else empty).
  const std::vector<int32_t>& pos() const { return resolved.pos; }
  // Bytes resident before the first op (wrapping items' tensors excluded).
  int64_t initial_bytes = 0;
  std::vector<Item> items;
  Buckets by_out, by_release, by_in, by_use;
  double h2d_bw = 0, d2h_bw = 0;
  // The device model the copies run on: host bandwidths resolved, the tiers
  // the items name (the options', else the policy's).
  DeviceModel device;
  int64_t ideal_time_ns = 0;
  PoolPlan pool;
};

// Ideal iteration time: no copies, unlimited memory, the host model only.
int64_t IdealTime(const std::vector<int64_t>& durations, absl::Span<const int32_t> schedule,
                  const SimulatorOptions& options);

// Pool steps of the replay (pool.cc). PoolStart sizes `state`; PoolAllocate
// takes the objects of position p at its dispatch and records the first
// class that runs out (or the pool itself not fitting the capacity, at
// p == 0) as the OOM; PoolFree gives back those freed after p.
void PoolStart(const PoolPlan& plan, PoolState* state);
void PoolAllocate(const PoolPlan& plan, int32_t p, int32_t op, int64_t capacity_bytes,
                  PoolState* state, SimulationResult* r);
void PoolFree(const PoolPlan& plan, int32_t p, PoolState* state);

// The one-pass replay (simulator_run.cc).
SimulationResult Replay(const Simulator& sim, const Prepared& pr, const Policy& policy,
                        absl::Span<const int32_t> schedule);

}  // namespace swapplan::internal_sim

#endif  // SWAPPLAN_SRC_SIM_SIMULATOR_INTERNAL_H_
