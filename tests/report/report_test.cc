// The HTML report's data and page (report/html_report.h) on the two-layer
// toy (tests/data/traces/two_layers.json: 12 ops of 100 ns, 100-byte
// tensors, 1 byte/ns links) with a 450-byte budget, where only lru fits.
//
// Unswapped curve: forward op k (0..5) holds the input and the k+1
// activations made so far: 200, 300, ..., 700 B; b12 (op 6) adds its
// gradient: 800 B; each later backward op ends one activation and one
// gradient and makes one gradient: 700, 600, ..., 300 B.
#include <string>

#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/eval/compare.h"
#include "swapplan/report/html_report.h"

namespace swapplan {
namespace {

using nlohmann::json;

Comparison ToyComparison(const Trace& t) {
  CompareOptions o;
  o.simulator.device.capacity_bytes = 450;
  o.keep_policies = true;
  // The planners this test was written for (compare's default set before
  // issue 23 added selective, te-offload and save-on-cpu).
  o.planners = {"ideal", "noswap", "chameleon", "recompute", "vdnn", "lru", "bucket"};
  absl::StatusOr<Comparison> c = ComparePlanners(t, o);
  REQUIRE(c.ok());
  return *std::move(c);
}

TEST_CASE("report data: curves, advice, timeline and swapped tensors of the toy", "[report]") {
  const Trace t = testing::DataTrace("traces/two_layers.json");
  const Comparison c = ToyComparison(t);
  absl::StatusOr<json> d = BuildReportData(t, c, {});
  REQUIRE(d.ok());
  const json& j = *d;
  CHECK(j["schema"] == "swapplan-report/1");
  CHECK(j["title"] == "swapplan report: " + t.source());
  CHECK(j["num_ops"] == 12);
  CHECK(j["budget_bytes"] == 450);
  CHECK(j["peak_unswapped_bytes"] == 800);
  CHECK(j["peak_unswapped_op"] == 6);
  CHECK(j["unswapped_bytes"] ==
        json({200, 300, 400, 500, 600, 700, 800, 700, 600, 500, 400, 300}));
  CHECK(j["op_names"][0] == "f00");
  CHECK(j["ops"]["name"].size() == 12);
  CHECK(j["advice"]["fits_without_swapping"] == false);
  CHECK(j["advice"]["headroom_bytes"] == -350);  // 450 - 800
  CHECK(j["advice"]["best"] == "lru");
  CHECK(j["advice"]["runner_up"].is_null());

  // One compare row per planner; ideal is the reference.
  REQUIRE(j["compare"].size() == c.rows.size());
  CHECK(j["compare"][0]["planner"] == "ideal");
  CHECK(j["compare"][0]["status"] == "reference");

  // lru is the only valid policy with a curve: it keeps 4 activations of
  // 100 B off the device, so 400 B from op 2 to op 10.
  REQUIRE(j["policies"].size() == 1);
  const json& p = j["policies"][0];
  CHECK(p["name"] == "lru");
  CHECK(p["featured"] == true);
  CHECK(p["bytes_in_use"] == json({200, 300, 400, 400, 400, 400, 400, 400, 400, 400, 400, 300}));
  CHECK(p["peak_bytes"] == 400);
  // 12 ops of 100 ns + 8 stalls of 100 ns = 2000 ns.
  CHECK(p["iteration_time_ns"] == 2000);
  CHECK(p["timeline"]["op"].size() == 36);     // 12 spans x (start, end, op)
  CHECK(p["timeline"]["stall"].size() == 24);  // 8 stalls
  CHECK(p["timeline"]["d2h"].size() == 12);    // 4 copies out
  CHECK(p["timeline"]["h2d"].size() == 12);    // 4 copies in
  // The first copy out (item 3, a00) starts when f02 ends: 300 ns, and
  // takes 100 B / 1 B/ns = 100 ns.
  CHECK(p["timeline"]["d2h"][0] == 300);
  CHECK(p["timeline"]["d2h"][1] == 400);
  CHECK(p["timeline"]["d2h"][2] == 3);
  // Every item caused 2 stalls of 100 ns (8 x 100 ns in all).
  REQUIRE(p["swapped"].size() == 4);
  int64_t stall = 0;
  for (const json& s : p["swapped"]) {
    CHECK(s["size_bytes"] == 100);
    CHECK(s["action"] == "SWAP");
    CHECK(s["stall_ns"] == 200);
    stall += s["stall_ns"].get<int64_t>();
  }
  CHECK(stall == 800);
  CHECK(p["swapped"][3]["name"] == "a00 \xE2\x86\x92 ACTIVATION 100 B");
  CHECK(p["swapped"][3]["tensor_id"] == 1);
}

TEST_CASE("report data: featured rows and their errors", "[report]") {
  const Trace t = testing::DataTrace("traces/two_layers.json");
  const Comparison c = ToyComparison(t);
  ReportOptions o;
  o.featured_rows = {static_cast<int32_t>(c.rows.size())};
  absl::StatusOr<json> d = BuildReportData(t, c, o);
  CHECK(d.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(d.status().message() == "featured_rows: row 7 of 7 rows");
  o.featured_rows = {-1};
  d = BuildReportData(t, c, o);
  CHECK(d.status().message() == "featured_rows: row -1 is negative");
  // A featured row without a policy: the page has no timeline for it.
  o.featured_rows = {1};  // noswap did not plan at 450 B
  d = BuildReportData(t, c, o);
  REQUIRE(d.ok());
  CHECK((*d)["policies"][0]["featured"] == false);
  CHECK_FALSE((*d)["policies"][0].contains("timeline"));
}

TEST_CASE("report page: the data survives the page, no string closes the script", "[report]") {
  json d = {{"schema", "swapplan-report/1"},
            {"title", "a </script><b>bold</b> & <!-- title"},
            {"values", {1, 2, 3}}};
  const std::string html = RenderReportHtml(d);
  // The title is escaped in <title> and <h1>; the data has no "</".
  CHECK(html.find("<title>a &lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp; &lt;!-- title</title>") !=
        std::string::npos);
  const size_t data = html.find("id=\"swapplan-data\">");
  REQUIRE(data != std::string::npos);
  const size_t end = html.find("</script>", data);
  CHECK(html.substr(data, end - data).find("</") == std::string::npos);
  absl::StatusOr<json> back = ExtractReportData(html);
  REQUIRE(back.ok());
  CHECK(*back == d);
  // Self-contained: no external resource.
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));
  CHECK(html.find("https://") == std::string::npos);

  absl::StatusOr<json> none = ExtractReportData("<html></html>");
  CHECK(none.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(none.status().message() == "report: the page has no swapplan-data script element");
}

}  // namespace
}  // namespace swapplan
