// The inline stylesheet, scripts and page skeleton of the HTML reports
// (report/html_report.h, report/replay_report.h); private to src/report.
//
// A page's script is kPageHelpers followed by the page's own script, both
// inside one "'use strict'; (function () { ... })();" wrapper that
// RenderPage writes: the helpers define `body`, fail(), el(), fmtBytes(),
// fmtNs(), fmtPct(), niceStep(), table(), start() (a page's start-up:
// draw, then data-report-status "ok"), the palette and `data` (the parsed
// swapplan-data element) for the script after them.
#ifndef SWAPPLAN_SRC_REPORT_PAGE_SCRIPT_H_
#define SWAPPLAN_SRC_REPORT_PAGE_SCRIPT_H_

#include <string>

#include <nlohmann/json.hpp>

namespace swapplan::internal_report {

// CSS of the pages.
extern const char kPageStyle[];
// JavaScript shared by the pages (above).
extern const char kPageHelpers[];
// The comparison report: its sections and its script (page_script.cc).
extern const char kReportPageBody[];
extern const char kPageScript[];
// The replay report: its sections and its script (replay_script.cc).
extern const char kReplayPageBody[];
extern const char kReplayScript[];

// The whole page: head with the title (data["title"]) and kPageStyle, the
// title heading, an error box, `sections` (HTML), `footer` (text), the data
// element (every "</" escaped so that no string closes the script element)
// and the script wrapper around kPageHelpers + `script`. O(size of data).
std::string RenderPage(const nlohmann::json& data, const char* sections, const char* script,
                       const std::string& footer);

}  // namespace swapplan::internal_report

#endif  // SWAPPLAN_SRC_REPORT_PAGE_SCRIPT_H_
