// Island model for the Advisor's search (issue 20): one population per
// process — an island — and islands in a ring. Every `migration_interval`
// generations each island sends copies of its `migrants` best chromosomes
// and its elite policy to the next island, which replaces its slowest
// individuals with the chromosomes and adopts the elite when it is faster
// than its own. At the end every island returns the fastest elite of all.
//
//   island r:   gen 1 .. 5 | send best -> r+1, receive from r-1 | gen 6 .. 10 | ...
//   ring:       0 -> 1 -> 2 -> ... -> N-1 -> 0
//
// The transport is an interface, so that the library does not depend on
// MPI: cli/mpi_islands.cc implements it over MPI (only the swapplan binary
// links MPI; `mpirun -np N swapplan search ... --islands`), LocalIslands
// below runs N islands as threads of one process (tests, and machines
// without MPI).
//
//   LocalIslands ring(2);
//   // thread r:
//   GeneticSearch search(*problem, options);
//   search.SetIslands(ring.island(r), IslandOptions{});
//   SWAPPLAN_ASSIGN_OR_RETURN(SearchResult res, search.Run());
//
// Determinism: island r draws its stream from (seed, r) — island 0 from the
// seed itself, so one island is the plain search — and migration happens at
// fixed generations, so a generation-limited run gives the same result for
// the same seed and island count. Stopping is collective: every generation
// the islands agree (logical OR) on whether any reached a limit, so all
// stop at the same generation; with a time limit that generation depends on
// the machines' speed.
//
// Threading model: every method of a transport is collective — each island
// calls the same sequence of methods, from one thread per island; a call
// returns when every island has made it. LocalIslands uses a barrier; MPI
// blocking collectives and MPI_Sendrecv.
// Complexity: per migration O(migrants x (ops + sizes) + elite items) bytes
// sent; per generation two reductions of one integer.
#ifndef SWAPPLAN_PLANNERS_ADVISOR_ISLANDS_H_
#define SWAPPLAN_PLANNERS_ADVISOR_ISLANDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/advisor/chromosome.h"

namespace swapplan {

class IslandTransport {
 public:
  virtual ~IslandTransport() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  // Sends `message` to island rank+1 (mod size); returns island rank-1's.
  virtual absl::StatusOr<std::string> Shift(std::string message) = 0;
  // The smallest `value` over all islands.
  virtual absl::StatusOr<int64_t> Min(int64_t value) = 0;
  // True when `value` is true on some island.
  virtual absl::StatusOr<bool> Any(bool value) = 0;
  // The `message` of the island with the smallest `key` (ties: the lowest
  // rank), on every island.
  virtual absl::StatusOr<std::string> Best(int64_t key, std::string message) = 0;
};

struct IslandOptions {
  // Generations between migrations (>= 1).
  int32_t migration_interval = 5;
  // Best chromosomes each island sends per migration (>= 0; at most the
  // population).
  int32_t migrants = 2;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

// The seed of island `rank` for the search seed `seed`: `seed` itself for
// island 0, a SplitMix64 mix of both otherwise.
uint64_t IslandSeed(uint64_t seed, int32_t rank);

// Migrants on the wire: chromosomes with their simulated times, and an
// elite policy (PolicyToBinary) with its time.
struct Migration {
  std::vector<Chromosome> chromosomes;
  std::vector<int64_t> times_ns;
  std::string elite;  // empty: none
  int64_t elite_ns = -1;
};
std::string EncodeMigration(const Migration& m);
// InvalidArgument (DataLoss) for a truncated or malformed message.
absl::StatusOr<Migration> DecodeMigration(absl::string_view bytes);

// N islands in one process, one thread each.
class LocalIslands {
 public:
  explicit LocalIslands(int32_t n);
  ~LocalIslands();
  LocalIslands(const LocalIslands&) = delete;
  LocalIslands& operator=(const LocalIslands&) = delete;
  // The transport of island `rank` (owned by this object).
  IslandTransport* island(int32_t rank);

 private:
  class Island;
  struct Shared;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Island>> islands_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_ADVISOR_ISLANDS_H_
