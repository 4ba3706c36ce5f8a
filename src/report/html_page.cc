// RenderReportHtml (report/html_report.h) and the page skeleton every report
// page shares (internal_report::RenderPage, page_script.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "report/page_script.h"
#include "swapplan/report/html_report.h"

namespace swapplan {
namespace internal_report {
namespace {

// Text for an HTML element or attribute.
std::string EscapeHtml(const std::string& s) {
  return absl::StrReplaceAll(
      s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

}  // namespace

const char kReportPageBody[] =
    "<section id=\"summary\"></section>\n"
    "<section><h2>Memory</h2><div id=\"legend\"></div><div id=\"memory\"></div></section>\n"
    "<section><h2>Streams</h2><div class=\"controls\">policy <select id=\"tl-policy\">"
    "</select> <button id=\"tl-in\">zoom in</button> <button id=\"tl-out\">zoom out"
    "</button> <button id=\"tl-reset\">reset</button> <span class=\"hint\">wheel: "
    "zoom, drag: pan</span> <span id=\"tl-range\"></span></div>"
    "<div id=\"timeline\"></div><div id=\"tl-info\">&nbsp;</div></section>\n"
    "<section><h2>Swapped tensors</h2><div id=\"swapped\"></div></section>\n"
    "<section><h2>Planners</h2><div id=\"compare\"></div></section>\n"
    "<section><h2>What limits each policy</h2><ul id=\"limits\"></ul></section>\n";

std::string RenderPage(const nlohmann::json& data, const char* sections, const char* script,
                       const std::string& footer) {
  // "<\/" is "</" in JSON and cannot end the script element; U+2028/9 are
  // escaped by dump's ensure_ascii.
  const std::string blob = absl::StrReplaceAll(
      data.dump(-1, ' ', /*ensure_ascii=*/true), {{"</", "<\\/"}, {"<!--", "<\\u0021--"}});
  const std::string title =
      EscapeHtml(data.contains("title") && data["title"].is_string() ? data["title"].get<std::string>()
                                                                     : "swapplan report");
  std::string out;
  absl::StrAppend(&out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
                  "<title>", title, "</title>\n<style>\n", kPageStyle,
                  "</style>\n</head>\n<body data-report-status=\"loading\">\n", "<h1>", title,
                  "</h1>\n",
                  "<noscript>This report draws its charts with JavaScript; the data is in the "
                  "swapplan-data element of the page source.</noscript>\n",
                  "<div id=\"error\" hidden></div>\n", sections, "<footer>", EscapeHtml(footer),
                  "</footer>\n",
                  "<script type=\"application/json\" id=\"swapplan-data\">", blob, "</script>\n",
                  "<script>\n'use strict';\n(function () {\n", kPageHelpers, script,
                  "})();\n</script>\n</body>\n</html>\n");
  return out;
}

}  // namespace internal_report

std::string RenderReportHtml(const nlohmann::json& data) {
  return internal_report::RenderPage(data, internal_report::kReportPageBody,
                                     internal_report::kPageScript,
                                     "swapplan report, data schema swapplan-report/1 (docs/report.md)");
}

}  // namespace swapplan
