// The Advisor's island transport over MPI (planners/advisor/islands.h), the
// only place swapplan uses MPI: `mpirun -np N swapplan search ... --islands`
// runs one population per rank. Built when meson finds MPI (Debian:
// libopenmpi-dev); otherwise Start says the binary was built without it.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<MpiIslands> mpi, MpiIslands::Start());
//   search.SetIslands(mpi.get(), options);     // rank(), size()
//   // MPI is finalized when `mpi` is destroyed.
//
// Threading model: MPI is initialised with MPI_THREAD_FUNNELED; only the
// thread that called Start may call the transport (the search calls it from
// its driving thread; its worker threads never touch MPI). Collectives are
// blocking: every rank makes the same calls in the same order.
#ifndef SWAPPLAN_CLI_MPI_ISLANDS_H_
#define SWAPPLAN_CLI_MPI_ISLANDS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "swapplan/planners/advisor/islands.h"

namespace swapplan::cli {

class MpiIslands : public IslandTransport {
 public:
  // Initialises MPI (a process started without mpirun is one rank).
  // FailedPrecondition when this build has no MPI (an optional dependency:
  // install libopenmpi-dev and reconfigure); Internal when MPI_Init fails.
  static absl::StatusOr<std::unique_ptr<MpiIslands>> Start();
  ~MpiIslands() override;

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  absl::StatusOr<std::string> Shift(std::string message) override;
  absl::StatusOr<int64_t> Min(int64_t value) override;
  absl::StatusOr<bool> Any(bool value) override;
  absl::StatusOr<std::string> Best(int64_t key, std::string message) override;

 private:
  MpiIslands() = default;
  int32_t rank_ = 0;
  int32_t size_ = 1;
};

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_MPI_ISLANDS_H_
