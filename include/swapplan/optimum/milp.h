// A mixed-integer linear program in a solver-neutral form, and its solution
// with COIN-OR CBC (the only place swapplan talks to a MILP solver; the swap
// model of swap_model.h only builds a MilpProblem).
//
//   MilpProblem p;
//   const int32_t x = p.AddColumn(0, 1, /*objective=*/-1, /*integer=*/true);
//   const int32_t y = p.AddColumn(0, 1, -1, true);
//   p.AddRow({{x, 1}, {y, 1}}, -kMilpInfinity, 1);          // x + y <= 1
//   SWAPPLAN_ASSIGN_OR_RETURN(MilpSolution s, SolveMilp(p, {.time_limit_ns = 1'000'000'000}));
//   s.status == MilpStatus::kOptimal; s.objective == -1; s.values[x] + s.values[y] == 1;
//
// Minimisation always. A solve stopped by the time limit reports its best
// bound (a valid lower bound on the optimum) and its incumbent, if any:
// MilpStatus::kFeasible / kNoSolution, never kOptimal.
//
// Threading: SolveMilp is reentrant (every call owns its CBC model); CBC
// itself runs single-threaded unless `threads` asks for more.
// Complexity: building O(nonzeros); solving is a branch and bound, bounded
// by the time limit.
#ifndef SWAPPLAN_OPTIMUM_MILP_H_
#define SWAPPLAN_OPTIMUM_MILP_H_

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace swapplan {

inline constexpr double kMilpInfinity = std::numeric_limits<double>::infinity();

struct MilpTerm {
  int32_t column = 0;
  double coefficient = 0;
};

class MilpProblem {
 public:
  // A new column lower <= x <= upper with `objective` as its cost; integer
  // columns are branched on. Returns its index. O(1).
  int32_t AddColumn(double lower, double upper, double objective, bool integer);
  // lower <= sum(terms) <= upper (either side may be infinite). Terms with a
  // zero coefficient are dropped; a column may appear more than once (the
  // coefficients add up when the solver reads the row). O(terms).
  void AddRow(absl::Span<const MilpTerm> terms, double lower, double upper);
  void AddRow(std::initializer_list<MilpTerm> terms, double lower, double upper) {
    AddRow(absl::MakeConstSpan(terms.begin(), terms.size()), lower, upper);
  }

  int32_t num_columns() const { return static_cast<int32_t>(objective_.size()); }
  int32_t num_rows() const { return static_cast<int32_t>(row_lower_.size()); }
  int64_t num_nonzeros() const { return static_cast<int64_t>(index_.size()); }
  int32_t num_integer() const;

  const std::vector<double>& column_lower() const { return col_lower_; }
  const std::vector<double>& column_upper() const { return col_upper_; }
  const std::vector<double>& objective() const { return objective_; }
  const std::vector<uint8_t>& integer() const { return integer_; }
  // Rows in compressed form: row r has entries [row_start[r], row_start[r+1]).
  const std::vector<int64_t>& row_start() const { return row_start_; }
  const std::vector<int32_t>& index() const { return index_; }
  const std::vector<double>& value() const { return value_; }
  const std::vector<double>& row_lower() const { return row_lower_; }
  const std::vector<double>& row_upper() const { return row_upper_; }

  // Largest violation of a bound, a row or integrality by `x` (one value
  // per column); 0 for a feasible point. O(nonzeros).
  double MaxViolation(absl::Span<const double> x) const;
  // Objective of `x`. O(columns).
  double ObjectiveOf(absl::Span<const double> x) const;

 private:
  std::vector<double> col_lower_, col_upper_, objective_;
  std::vector<uint8_t> integer_;
  std::vector<int64_t> row_start_ = {0};
  std::vector<int32_t> index_;
  std::vector<double> value_;
  std::vector<double> row_lower_, row_upper_;
};

struct MilpOptions {
  // Wall-clock limit of the branch and bound (ns); 0 = none.
  int64_t time_limit_ns = 60'000'000'000;
  // Stop when (incumbent - bound) <= this fraction of |incumbent| (0 =
  // prove optimality).
  double relative_gap = 0;
  // CBC threads (1 = deterministic).
  int32_t threads = 1;
  // A starting solution: values of some integer columns (CBC completes the
  // rest by solving the LP with them fixed). Empty = none.
  std::vector<std::pair<int32_t, double>> start;

  // InvalidArgument naming the field (negative limit, gap outside [0, 1),
  // threads < 1, a start column out of range is checked by SolveMilp).
  absl::Status Validate() const;
};

enum class MilpStatus : uint8_t {
  kOptimal = 0,     // proven optimal (within relative_gap)
  kFeasible = 1,    // stopped at the limit with an incumbent
  kNoSolution = 2,  // stopped at the limit before any incumbent
  kInfeasible = 3,  // proven infeasible
};
// "optimal", "time limit (incumbent)", "time limit (no incumbent)", "infeasible".
absl::string_view MilpStatusName(MilpStatus s);

struct MilpSolution {
  MilpStatus status = MilpStatus::kNoSolution;
  // Objective of the incumbent (kOptimal, kFeasible).
  double objective = kMilpInfinity;
  // Best lower bound proven (== objective when kOptimal up to the gap;
  // +infinity when kInfeasible).
  double best_bound = -kMilpInfinity;
  // Incumbent, one value per column (kOptimal, kFeasible; else empty).
  std::vector<double> values;
  int64_t solve_time_ns = 0;
  int64_t nodes = 0;
};

// Solves `problem` (minimise) with CBC. InvalidArgument for bad options or a
// start column out of range; Internal when CBC abandons the solve
// (numerical trouble).
absl::StatusOr<MilpSolution> SolveMilp(const MilpProblem& problem, const MilpOptions& options);

}  // namespace swapplan

#endif  // SWAPPLAN_OPTIMUM_MILP_H_
