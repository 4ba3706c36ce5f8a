// Progress on stderr for the CLI's long-running commands (advise, report,
// compare, search, whatif, synth, import, replay, regress): one line redrawn
// in place,
//
//   compare [##########..........]  50%  3/6  00:04 ETA 00:04
//
// shown only when stderr is a terminal, the global --quiet flag is off, and
// the work has run for more than a second; cleared when done. The library
// reports progress through its callbacks (ComparePlanners, RunWhatIf,
// AdvisorPlanner::set_progress, RunReplay's row callback, ...); this is the
// only place that draws it.
//
//   ProgressBar bar("compare");            // drawn when ProgressEnabled()
//   for (int i = 0; i < n; ++i) { ...; bar.Update(i + 1, n); }
//   bar.Finish();                          // or the destructor
//
// Threading: a ProgressBar is used from one thread (the command's); the
// callbacks that drive it are called on that thread by the library.
#ifndef SWAPPLAN_CLI_PROGRESS_H_
#define SWAPPLAN_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"
#include "swapplan/eval/compare.h"

namespace swapplan::cli {

// The global --quiet flag (main.cc): no progress on stderr.
bool& GlobalQuiet();

// True when progress may be drawn on `stream`: it is a terminal and
// GlobalQuiet() is off.
bool ProgressEnabled(std::FILE* stream = stderr);

// What Update's `done` and `total` count: shown as "done/total" (kCount),
// as byte sizes (kBytes: "1.00 MiB/4.00 MiB"), or not at all (kFraction:
// only the percentage means something).
enum class ProgressUnit : uint8_t { kCount, kBytes, kFraction };

// The line for `done` of `total` units after `elapsed_ns` (pure; no escape
// codes): LABEL, a bar of `width` cells ('#' done, '.' to do; a cell is done
// when its whole share is), the percentage (floored), "done/total" per
// `unit`, the elapsed time and the ETA — elapsed × (total − done) / done,
// "--:--" while done is 0 — as MM:SS (H:MM:SS from an hour). Requires
// 0 <= done <= total (clamped otherwise; total < 1 counts as 1), width >= 1.
// O(width).
std::string FormatProgress(absl::string_view label, int64_t done, int64_t total,
                           int64_t elapsed_ns, ProgressUnit unit = ProgressUnit::kCount,
                           int width = 20);

// MM:SS, or H:MM:SS from an hour on (seconds floored; negative -> 00:00).
std::string FormatClock(int64_t ns);

class ProgressBar {
 public:
  // Draws on `stream` when `enabled` (default: ProgressEnabled(stream)).
  explicit ProgressBar(std::string label, ProgressUnit unit = ProgressUnit::kCount);
  ProgressBar(std::string label, bool enabled, ProgressUnit unit = ProgressUnit::kCount,
              std::FILE* stream = stderr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Records progress; redraws at most every 100 ms and only once the bar
  // has existed for more than a second.
  void Update(int64_t done, int64_t total);
  // Clears the line (if anything was drawn). Idempotent.
  void Finish();

 private:
  std::string label_;
  ProgressUnit unit_;
  std::FILE* stream_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// A ComparePlanners progress callback advancing `bar` one step per planner
// row, of as many rows as `options` asks for (its planners, or the
// registry's default set). `bar` must outlive the callback.
CompareProgress CompareBar(ProgressBar* bar, const CompareOptions& options);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_PROGRESS_H_
