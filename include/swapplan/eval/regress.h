// Policy-quality regression (SPEC §10 `regress`): a baseline file names
// traces, budgets and simulator settings and records, per planner, whether
// it reached the budget and its simulated iteration time; a run replans
// every entry (eval/compare.h) and flags each planner that lost feasibility
// or got slower than the tolerance allows. CI runs it on the bundled traces
// (quality.json at the repository root).
//
// Baseline format (JSON; sizes, bandwidths and durations as on the command
// line; trace paths relative to the baseline file's directory):
//
//   {"format": "swapplan-quality", "format_version": 1,
//    "entries": [
//      {"trace": "traces/llama2-7b-dp8-seq4096.trace.gz",
//       "oversubscription": 1.5,              // or "device_memory": "40GiB"
//                                             //    [+ "reserve": "2GiB"]
//       "iteration": 0, "bandwidth": "25GB/s", "h2d_bandwidth": ...,
//       "d2h_bandwidth": ..., "latency": "10us", "half_duplex": false,
//                                             // optional; default: the trace's
//       "planners": ["chameleon", "recompute"],  // optional; default: the
//                                             // recorded ones, else compare's
//       "default_set": true,                  // optional, no "planners":
//                                             // compare's default set as it
//                                             // is when run (not-run rows
//                                             // when it lost a recorded one)
//       "planner_options": ["chameleon.min-tensor-bytes=0"],  // optional,
//                                             // as compare --planner-option
//       "at_most": ["advisor<=chameleon"],    // optional: in this run, A's
//                                             // time must not exceed B's
//       // recorded by --update:
//       "trace_identity": {"op_sequence_hash": "0x…", "iteration_ops": 3172,
//                          "unswapped_peak_bytes": …, "persistent_bytes": …},
//       "budget_bytes": …,                  // > 0; compared, see below
//       "results": {"chameleon": {"feasible": true, "iteration_time_ns": …},
//                   "noswap": {"feasible": false}}}]}
//
// Verdict per (entry, planner), with tolerance t (relative):
//   ok               same feasibility, time within (1 ± t) × baseline
//   faster           time below (1 − t) × baseline (an improvement)
//   newly-feasible   infeasible in the baseline, feasible now
//   slower           time above (1 + t) × baseline          -> regression
//   lost-feasibility feasible in the baseline, not now      -> regression
//   no-baseline      nothing recorded for the planner       -> failure
//   trace-changed    the trace is not the one recorded      -> failure
//   budget-changed   same trace, but the entry's settings give another
//                    budget than the recorded budget_bytes  -> failure
//   not-run          recorded, but the entry no longer runs it (a
//                    "default_set" entry whose default set lost the
//                    planner)                               -> failure
// and per relation "A<=B" of the entry (a row named "A<=B", current = A's
// result, baseline = B's of the same run):
//   ok               A fits and is no slower than B, or B does not fit
//   order-broken     B fits and A does not, or A is slower   -> regression
// (infeasible in both: ok.) Update rewrites the recorded fields from the
// run, keeping every setting.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(QualityBaseline b, ReadQualityBaseline("quality.json"));
//   SWAPPLAN_ASSIGN_OR_RETURN(RegressReport r, RunRegression(b, {.tolerance = 0.01}));
//   r.failures;   // rows that fail the check
//
// Complexity: one trace read and one comparison per entry (compare.h).
#ifndef SWAPPLAN_EVAL_REGRESS_H_
#define SWAPPLAN_EVAL_REGRESS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace swapplan {

struct QualityResult {
  bool feasible = false;
  // Simulated iteration time; meaningful when feasible.
  int64_t iteration_time_ns = 0;
};

// What identifies the trace an entry was recorded on.
struct TraceIdentity {
  uint64_t op_sequence_hash = 0;
  int32_t iteration_ops = 0;
  int64_t unswapped_peak_bytes = 0;
  int64_t persistent_bytes = 0;

  bool operator==(const TraceIdentity& o) const {
    return op_sequence_hash == o.op_sequence_hash && iteration_ops == o.iteration_ops &&
           unswapped_peak_bytes == o.unswapped_peak_bytes &&
           persistent_bytes == o.persistent_bytes;
  }
};

struct QualityEntry {
  // Settings, as written (empty / 0 = not given).
  std::string trace;
  int32_t iteration = 0;
  double oversubscription = 0;
  std::string device_memory;
  std::string reserve;
  std::string bandwidth;
  std::string h2d_bandwidth;
  std::string d2h_bandwidth;
  std::string latency;
  bool half_duplex = false;
  std::vector<std::string> planners;
  // Run compare's default set as it is at run time (planners empty).
  bool default_set = false;
  // Planner options as "PLANNER.NAME=VALUE" (compare --planner-option).
  std::vector<std::string> planner_options;
  // Relations "A<=B": planner A no slower than planner B in the same run
  // (both run for the entry).
  std::vector<std::string> at_most;
  // Recorded.
  std::optional<TraceIdentity> identity;
  int64_t budget_bytes = 0;
  std::map<std::string, QualityResult> results;
};

struct QualityBaseline {
  // The file it was read from; trace paths are relative to its directory.
  std::string path;
  std::vector<QualityEntry> entries;
};

// Reads and validates a baseline. NotFound for a missing file;
// InvalidArgument naming the file, JSON path and rule otherwise (unknown
// field, wrong type, both or neither of oversubscription and
// device_memory, unknown planner, bad size/bandwidth/duration text).
absl::StatusOr<QualityBaseline> ReadQualityBaseline(const std::string& path);
absl::StatusOr<QualityBaseline> ParseQualityBaseline(absl::string_view json,
                                                     const std::string& path);
// The JSON form (settings as given, recorded fields, sorted keys).
std::string QualityBaselineToJson(const QualityBaseline& baseline);

struct RegressOptions {
  // Relative slack on iteration times (0.01 = 1%).
  double tolerance = 0.01;

  // InvalidArgument unless 0 <= tolerance < 1.
  absl::Status Validate() const;
};

enum class Verdict : uint8_t {
  kOk = 0,
  kFaster,
  kNewlyFeasible,
  kSlower,
  kLostFeasibility,
  kNoBaseline,
  kTraceChanged,
  kOrderBroken,
  // The entry's settings give another budget than the recorded
  // budget_bytes on the same trace (an edited or corrupt baseline, or a
  // changed budget rule): the recorded results were measured at another
  // budget, so none of them is compared.
  kBudgetChanged,
  // Recorded for the entry, but not run now (a default_set entry whose
  // default set lost the planner).
  kNotRun,
};
// "ok", "faster", "newly-feasible", "slower", "lost-feasibility",
// "no-baseline", "trace-changed", "order-broken", "budget-changed", "not-run".
absl::string_view VerdictName(Verdict v);
// True for the verdicts that fail the check.
bool IsFailure(Verdict v);

// The planners an entry is checked with: its list; with default_set,
// compare's default set without ideal; else the recorded ones (registry
// order), else that default set. O(registered planners).
std::vector<std::string> QualityEntryPlanners(const QualityEntry& e);

struct RegressRow {
  size_t entry = 0;
  std::string planner;
  std::optional<QualityResult> baseline;
  QualityResult current;
  Verdict verdict = Verdict::kOk;
  // current / baseline − 1 when both are feasible.
  std::optional<double> change;
};

struct RegressReport {
  std::vector<RegressRow> rows;
  int32_t failures = 0;
  // The baseline with every recorded field replaced by this run's (what
  // --update writes).
  QualityBaseline updated;
};

// Called after each entry is replanned: entry index and seconds so far.
using RegressProgress = std::function<void(size_t entry, double elapsed_s)>;

// Replans every entry. Errors: bad options, unreadable traces, planner
// errors other than ResourceExhausted (naming the entry's trace).
absl::StatusOr<RegressReport> RunRegression(const QualityBaseline& baseline,
                                            const RegressOptions& options,
                                            const RegressProgress& progress = {});

}  // namespace swapplan

#endif  // SWAPPLAN_EVAL_REGRESS_H_
