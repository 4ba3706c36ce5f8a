#include "html_output.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli.h"
#include "common.h"
#include "swapplan/report/html_report.h"
#include "swapplan/report/replay_report.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::cli {

absl::Status WriteHtmlReport(const std::string& path, const Trace& trace, const Comparison& c,
                             const ResolvedDevice& device,
                             const std::vector<int32_t>& featured_rows) {
  ReportOptions o;
  o.title = absl::StrCat("swapplan report: ", trace.source(), " on ", device.model.name);
  o.device_text = DeviceText(device.model);
  o.link_text = LinkText(device.model);
  o.compute_text = ComputeScaleText(device);
  o.warnings = device.warnings;
  o.featured_rows = featured_rows;
  SWAPPLAN_ASSIGN_OR_RETURN(nlohmann::json data, BuildReportData(trace, c, o));
  return WriteOutput(path, RenderReportHtml(data));
}

absl::Status WriteReplayHtmlReport(const std::string& path, const Trace& trace,
                                   const ReplayOptions& options,
                                   const std::vector<ReplayRow>& rows,
                                   const ReplaySummary& summary, const ResolvedDevice& device) {
  ReplayReportOptions o;
  o.title = absl::StrCat("swapplan replay: ", trace.source(), " on ", device.model.name);
  o.device_text = DeviceText(device.model);
  o.link_text = LinkText(device.model);
  o.compute_text = ComputeScaleText(device);
  o.warnings = device.warnings;
  SWAPPLAN_ASSIGN_OR_RETURN(nlohmann::json data,
                            BuildReplayReportData(trace, options, rows, summary, o));
  return WriteOutput(path, RenderReplayReportHtml(data));
}

}  // namespace swapplan::cli
