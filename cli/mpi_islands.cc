// MPI transport of the island model (mpi_islands.h).
#include "mpi_islands.h"

#include "absl/strings/str_cat.h"

#ifdef SWAPPLAN_HAVE_MPI
#include <mpi.h>
#endif

namespace swapplan::cli {

#ifdef SWAPPLAN_HAVE_MPI

namespace {

absl::Status Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return absl::InternalError(absl::StrCat("islands: ", what, " failed: ", std::string(text, len)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<MpiIslands>> MpiIslands::Start() {
  int provided = 0;
  if (absl::Status st = Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
                              "MPI_Init_thread");
      !st.ok()) {
    return st;
  }
  std::unique_ptr<MpiIslands> m(new MpiIslands());
  MPI_Comm_rank(MPI_COMM_WORLD, &m->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &m->size_);
  return m;
}

MpiIslands::~MpiIslands() { MPI_Finalize(); }

absl::StatusOr<std::string> MpiIslands::Shift(std::string message) {
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  unsigned long long out_size = message.size(), in_size = 0;
  if (absl::Status st = Check(MPI_Sendrecv(&out_size, 1, MPI_UNSIGNED_LONG_LONG, next, 1, &in_size, 1,
                                           MPI_UNSIGNED_LONG_LONG, prev, 1, MPI_COMM_WORLD,
                                           MPI_STATUS_IGNORE),
                              "MPI_Sendrecv (size)");
      !st.ok()) {
    return st;
  }
  std::string in(in_size, '\0');
  if (absl::Status st = Check(MPI_Sendrecv(message.data(), static_cast<int>(out_size), MPI_BYTE, next,
                                           2, in.data(), static_cast<int>(in_size), MPI_BYTE, prev,
                                           2, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                              "MPI_Sendrecv (message)");
      !st.ok()) {
    return st;
  }
  return in;
}

absl::StatusOr<int64_t> MpiIslands::Min(int64_t value) {
  long long v = value, out = 0;
  if (absl::Status st = Check(MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD),
                              "MPI_Allreduce (min)");
      !st.ok()) {
    return st;
  }
  return static_cast<int64_t>(out);
}

absl::StatusOr<bool> MpiIslands::Any(bool value) {
  int v = value ? 1 : 0, out = 0;
  if (absl::Status st = Check(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD),
                              "MPI_Allreduce (or)");
      !st.ok()) {
    return st;
  }
  return out != 0;
}

absl::StatusOr<std::string> MpiIslands::Best(int64_t key, std::string message) {
  struct {
    long value;
    int rank;
  } in{static_cast<long>(key), rank_}, out{0, 0};
  if (absl::Status st = Check(MPI_Allreduce(&in, &out, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD),
                              "MPI_Allreduce (minloc)");
      !st.ok()) {
    return st;
  }
  unsigned long long size = rank_ == out.rank ? message.size() : 0;
  if (absl::Status st = Check(MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, out.rank, MPI_COMM_WORLD),
                              "MPI_Bcast (size)");
      !st.ok()) {
    return st;
  }
  std::string got = rank_ == out.rank ? std::move(message) : std::string(size, '\0');
  if (absl::Status st = Check(MPI_Bcast(got.data(), static_cast<int>(size), MPI_BYTE, out.rank,
                                        MPI_COMM_WORLD),
                              "MPI_Bcast (message)");
      !st.ok()) {
    return st;
  }
  return got;
}

#else  // !SWAPPLAN_HAVE_MPI

absl::StatusOr<std::unique_ptr<MpiIslands>> MpiIslands::Start() {
  return absl::FailedPreconditionError(
      "--islands: this swapplan was built without MPI (install libopenmpi-dev and reconfigure)");
}
MpiIslands::~MpiIslands() = default;
absl::StatusOr<std::string> MpiIslands::Shift(std::string message) { return message; }
absl::StatusOr<int64_t> MpiIslands::Min(int64_t value) { return value; }
absl::StatusOr<bool> MpiIslands::Any(bool value) { return value; }
absl::StatusOr<std::string> MpiIslands::Best(int64_t, std::string message) { return message; }

#endif  // SWAPPLAN_HAVE_MPI

}  // namespace swapplan::cli
