// Internal pieces of the evaluation simulator shared by simulator.cc (setup,
// policy resolution) and simulator_run.cc (the replay). Not installed.
#ifndef SWAPPLAN_SRC_SIM_SIMULATOR_INTERNAL_H_
#define SWAPPLAN_SRC_SIM_SIMULATOR_INTERNAL_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "swapplan/sim/simulator.h"

namespace swapplan::internal_sim {

// A policy item resolved to schedule positions.
struct Item {
  int64_t size = 0;
  bool swap = true;  // false: RECOMPUTE
  int64_t recompute_ns = 0;
  int32_t out = 0, release = 0, in = 0, use = 0;  // positions
  int64_t out_ns = 0, in_ns = 0;                  // copy durations (SWAP)
  int32_t slot = 0;                               // index into the simulator's tensors
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

struct Prepared {
  // Position of each local op when a schedule is given (else empty).
  std::vector<int32_t> pos;
  // Bytes resident before the first op; allocated at / freed after each
  // position: the simulator's arrays for the recorded order (pointers set),
  // own_* under a schedule (pointers null).
  int64_t initial_bytes = 0;
  const std::vector<int64_t>* alloc_at = nullptr;
  const std::vector<int64_t>* free_after = nullptr;
  std::vector<int64_t> own_alloc_at, own_free_after;
  std::vector<int32_t> tensor_alloc, tensor_free;  // per simulator tensor, schedule only
  std::vector<Item> items;
  Buckets by_out, by_release, by_in, by_use;
  double h2d_bw = 0, d2h_bw = 0;
  int64_t ideal_time_ns = 0;
};

// Ideal iteration time: no copies, unlimited memory, the host model only.
int64_t IdealTime(const std::vector<int64_t>& durations, absl::Span<const int32_t> schedule,
                  const SimulatorOptions& options);

// The one-pass replay (simulator_run.cc).
SimulationResult Replay(const Simulator& sim, const Prepared& pr, const Policy& policy,
                        absl::Span<const int32_t> schedule);

}  // namespace swapplan::internal_sim

#endif  // SWAPPLAN_SRC_SIM_SIMULATOR_INTERNAL_H_
