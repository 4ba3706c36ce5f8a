// The --html FILE output of compare, advise and replay, and the page
// `swapplan report` writes: the HTML report (report/html_report.h) of a
// comparison, or of a replay (report/replay_report.h), with the header lines
// the text reports print (device, link, compute scale, warnings).
//
//   SWAPPLAN_RETURN_IF_ERROR(WriteHtmlReport("report.html", trace, c, device, {}));
//   SWAPPLAN_RETURN_IF_ERROR(WriteReplayHtmlReport("replay.html", trace, o, rows, s, device));
//
// O(ops x policies) (report/html_report.h); O(rows) for a replay.
#ifndef SWAPPLAN_CLI_HTML_OUTPUT_H_
#define SWAPPLAN_CLI_HTML_OUTPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "device_flags.h"
#include "swapplan/eval/compare.h"
#include "swapplan/eval/replay.h"
#include "swapplan/trace/trace.h"

namespace swapplan::cli {

// Writes the page for `c` (from ComparePlanners with keep_policies) to
// `path`; `featured_rows` as ReportOptions (empty: best and runner-up).
// The report's errors, or the write's (kIo).
absl::Status WriteHtmlReport(const std::string& path, const Trace& trace, const Comparison& c,
                             const ResolvedDevice& device,
                             const std::vector<int32_t>& featured_rows);

// Writes the replay page for `rows` and `summary` of RunReplay(trace,
// options) to `path`. The report's errors, or the write's (kIo).
absl::Status WriteReplayHtmlReport(const std::string& path, const Trace& trace,
                                   const ReplayOptions& options,
                                   const std::vector<ReplayRow>& rows,
                                   const ReplaySummary& summary, const ResolvedDevice& device);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_HTML_OUTPUT_H_
