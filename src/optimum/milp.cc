// MilpProblem and its solution with CBC's C interface (Cbc_C_Interface.h:
// CbcMain1 with its default cuts and heuristics, the same driver as the
// `cbc` command).
#include "swapplan/optimum/milp.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

namespace swapplan {

int32_t MilpProblem::AddColumn(double lower, double upper, double objective, bool integer) {
  col_lower_.push_back(lower);
  col_upper_.push_back(upper);
  objective_.push_back(objective);
  integer_.push_back(integer ? 1 : 0);
  return static_cast<int32_t>(objective_.size()) - 1;
}

void MilpProblem::AddRow(absl::Span<const MilpTerm> terms, double lower, double upper) {
  for (const MilpTerm& t : terms) {
    if (t.coefficient == 0) continue;
    index_.push_back(t.column);
    value_.push_back(t.coefficient);
  }
  row_start_.push_back(static_cast<int64_t>(index_.size()));
  row_lower_.push_back(lower);
  row_upper_.push_back(upper);
}

int32_t MilpProblem::num_integer() const {
  return static_cast<int32_t>(std::count(integer_.begin(), integer_.end(), 1));
}

double MilpProblem::MaxViolation(absl::Span<const double> x) const {
  double worst = 0;
  for (int32_t c = 0; c < num_columns(); ++c) {
    worst = std::max({worst, col_lower_[c] - x[c], x[c] - col_upper_[c]});
    if (integer_[c]) worst = std::max(worst, std::abs(x[c] - std::round(x[c])));
  }
  for (int32_t r = 0; r < num_rows(); ++r) {
    double a = 0;
    for (int64_t k = row_start_[r]; k < row_start_[r + 1]; ++k) a += value_[k] * x[index_[k]];
    worst = std::max({worst, row_lower_[r] - a, a - row_upper_[r]});
  }
  return worst;
}

double MilpProblem::ObjectiveOf(absl::Span<const double> x) const {
  double v = 0;
  for (int32_t c = 0; c < num_columns(); ++c) v += objective_[c] * x[c];
  return v;
}

absl::Status MilpOptions::Validate() const {
  if (time_limit_ns < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("milp options: time_limit_ns is ", time_limit_ns, "; must be >= 0"));
  }
  if (!(relative_gap >= 0 && relative_gap < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("milp options: relative_gap is ", relative_gap, "; must be in [0, 1)"));
  }
  if (threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("milp options: threads is ", threads, "; must be >= 1"));
  }
  return absl::OkStatus();
}

absl::string_view MilpStatusName(MilpStatus s) {
  switch (s) {
    case MilpStatus::kOptimal:
      return "optimal";
    case MilpStatus::kFeasible:
      return "time limit (incumbent)";
    case MilpStatus::kInfeasible:
      return "infeasible";
    case MilpStatus::kNoSolution:
      break;
  }
  return "time limit (no incumbent)";
}

namespace {

struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};

// CBC reads +-1e30 and beyond as infinite.
double Finite(double v) { return std::isinf(v) ? (v > 0 ? 1e30 : -1e30) : v; }

}  // namespace

absl::StatusOr<MilpSolution> SolveMilp(const MilpProblem& problem, const MilpOptions& options) {
  if (absl::Status st = options.Validate(); !st.ok()) return st;
  const int32_t nc = problem.num_columns();
  const int32_t nr = problem.num_rows();
  for (const auto& [col, v] : options.start) {
    if (col < 0 || col >= nc) {
      return absl::InvalidArgumentError(
          absl::StrCat("milp: start column ", col, " is out of range (", nc, " columns)"));
    }
  }
  // Rows -> columns (CBC loads a column-major matrix).
  std::vector<CoinBigIndex> start(nc + 1, 0);
  for (int32_t c : problem.index()) ++start[c + 1];
  for (int32_t c = 0; c < nc; ++c) start[c + 1] += start[c];
  std::vector<int> rows(problem.index().size());
  std::vector<double> vals(problem.index().size());
  {
    std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
    for (int32_t r = 0; r < nr; ++r) {
      for (int64_t k = problem.row_start()[r]; k < problem.row_start()[r + 1]; ++k) {
        const CoinBigIndex at = fill[problem.index()[k]]++;
        rows[at] = r;
        vals[at] = problem.value()[k];
      }
    }
  }
  std::vector<double> cl(nc), cu(nc), rl(nr), ru(nr);
  for (int32_t c = 0; c < nc; ++c) {
    cl[c] = Finite(problem.column_lower()[c]);
    cu[c] = Finite(problem.column_upper()[c]);
  }
  for (int32_t r = 0; r < nr; ++r) {
    rl[r] = Finite(problem.row_lower()[r]);
    ru[r] = Finite(problem.row_upper()[r]);
  }
  std::unique_ptr<Cbc_Model, CbcDeleter> model(Cbc_newModel());
  Cbc_loadProblem(model.get(), nc, nr, start.data(), rows.data(), vals.data(), cl.data(),
                  cu.data(), problem.objective().data(), rl.data(), ru.data());
  for (int32_t c = 0; c < nc; ++c) {
    if (problem.integer()[c]) Cbc_setInteger(model.get(), c);
  }
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setParameter(model.get(), "log", "0");
  Cbc_setParameter(model.get(), "slog", "0");
  if (options.time_limit_ns > 0) {
    // Wall-clock seconds (CBC counts CPU time by default).
    Cbc_setParameter(model.get(), "timeMode", "elapsed");
    const std::string sec = absl::StrCat(static_cast<double>(options.time_limit_ns) / 1e9);
    Cbc_setParameter(model.get(), "sec", sec.c_str());
  }
  Cbc_setParameter(model.get(), "ratio", absl::StrCat(options.relative_gap).c_str());
  // Tight integrality: rows with a big M (swap_model.h) turn an integrality
  // error e into e * M of slack.
  Cbc_setParameter(model.get(), "integerT", "1e-9");
  if (options.threads > 1) {
    Cbc_setParameter(model.get(), "threads", absl::StrCat(options.threads).c_str());
  }
  if (!options.start.empty()) {
    std::vector<int> idx;
    std::vector<double> v;
    for (const auto& [col, value] : options.start) {
      idx.push_back(col);
      v.push_back(value);
    }
    Cbc_setMIPStartI(model.get(), static_cast<int>(idx.size()), idx.data(), v.data());
  }
  const auto t0 = std::chrono::steady_clock::now();
  Cbc_solve(model.get());
  MilpSolution sol;
  sol.solve_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
  sol.nodes = Cbc_getNodeCount(model.get());
  const int status = Cbc_status(model.get());
  if (status == 2) {
    return absl::InternalError("milp: CBC abandoned the solve (numerical difficulties)");
  }
  const double* best = Cbc_bestSolution(model.get());
  if (Cbc_isProvenInfeasible(model.get()) && best == nullptr) {
    sol.status = MilpStatus::kInfeasible;
    sol.best_bound = kMilpInfinity;
    return sol;
  }
  if (best != nullptr) {
    sol.values.assign(best, best + nc);
    sol.objective = problem.ObjectiveOf(sol.values);
  }
  sol.best_bound = Cbc_getBestPossibleObjValue(model.get());
  if (sol.best_bound <= -1e29) sol.best_bound = -kMilpInfinity;
  if (best != nullptr) {
    const bool proven = Cbc_isProvenOptimal(model.get());
    sol.status = proven ? MilpStatus::kOptimal : MilpStatus::kFeasible;
    // The bound never exceeds the incumbent; a proof with no gap allowed
    // closes it.
    sol.best_bound = proven && options.relative_gap == 0 ? sol.objective
                                                         : std::min(sol.best_bound, sol.objective);
  } else {
    sol.status = MilpStatus::kNoSolution;
  }
  return sol;
}

}  // namespace swapplan
