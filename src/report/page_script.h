// The inline stylesheet and script of the HTML report page
// (report/html_report.h); private to src/report.
#ifndef SWAPPLAN_SRC_REPORT_PAGE_SCRIPT_H_
#define SWAPPLAN_SRC_REPORT_PAGE_SCRIPT_H_

namespace swapplan::internal_report {

// CSS of the page.
extern const char kPageStyle[];
// JavaScript that reads the swapplan-data element and draws the page.
extern const char kPageScript[];

}  // namespace swapplan::internal_report

#endif  // SWAPPLAN_SRC_REPORT_PAGE_SCRIPT_H_
