// Quality baselines and the regression check (eval/regress.h). Traces: the
// two-layer toy of tests/planners/chameleon_test.cc at r = 2 (budget 700):
// noswap and recompute cannot fit, lru runs in 1550 ns (1300 ns of ops +
// 250 ns of stalls, tests/eval/compare_test.cc).
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

#include "support/test_traces.h"
#include "swapplan/eval/regress.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

std::string ToyEntry(const std::string& results, const std::string& extra = "") {
  return absl::StrCat(R"({"format": "swapplan-quality", "format_version": 1, "entries": [)",
                      R"({"trace": ")", testing::DataPath("traces/chameleon_toy.json"),
                      R"(", "oversubscription": 2, "planners": ["noswap", "recompute", "lru"])",
                      extra, results.empty() ? "" : ", \"results\": " + results, "}]}");
}

QualityBaseline Parse(const std::string& json) {
  absl::StatusOr<QualityBaseline> b = ParseQualityBaseline(json, "/tmp/q.json");
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  return *b;
}

std::vector<Verdict> Verdicts(const QualityBaseline& b, double tolerance) {
  absl::StatusOr<RegressReport> r = RunRegression(b, {.tolerance = tolerance});
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  std::vector<Verdict> v;
  for (const RegressRow& row : r->rows) v.push_back(row.verdict);
  return v;
}

constexpr char kRecorded[] =
    R"({"noswap": {"feasible": false}, "recompute": {"feasible": false},
        "lru": {"feasible": true, "iteration_time_ns": 1550}})";

TEST_CASE("regress: verdicts per planner", "[eval]") {
  using V = Verdict;
  // As recorded: all ok.
  CHECK(Verdicts(Parse(ToyEntry(kRecorded)), 0.01) == std::vector<V>{V::kOk, V::kOk, V::kOk});
  // Nothing recorded: every row fails until --update.
  CHECK(Verdicts(Parse(ToyEntry("")), 0.01) ==
        std::vector<V>{V::kNoBaseline, V::kNoBaseline, V::kNoBaseline});
  // The baseline claims lru ran in 1400 ns: 1550 / 1400 - 1 = +10.7% > 1%.
  const std::string faster_baseline =
      R"({"noswap": {"feasible": false}, "recompute": {"feasible": false},
          "lru": {"feasible": true, "iteration_time_ns": 1400}})";
  CHECK(Verdicts(Parse(ToyEntry(faster_baseline)), 0.01) ==
        std::vector<V>{V::kOk, V::kOk, V::kSlower});
  CHECK(Verdicts(Parse(ToyEntry(faster_baseline)), 0.11) == std::vector<V>{V::kOk, V::kOk, V::kOk});
  // Tolerance boundary: 1535 -> 1550 is +0.977%: within 1%, not within 0.5%.
  const std::string close =
      R"({"noswap": {"feasible": false}, "recompute": {"feasible": false},
          "lru": {"feasible": true, "iteration_time_ns": 1535}})";
  CHECK(Verdicts(Parse(ToyEntry(close)), 0.01)[2] == V::kOk);
  CHECK(Verdicts(Parse(ToyEntry(close)), 0.005)[2] == V::kSlower);
  // Slower baseline: an improvement, not a failure.
  const std::string slower_baseline =
      R"({"noswap": {"feasible": false}, "recompute": {"feasible": false},
          "lru": {"feasible": true, "iteration_time_ns": 2000}})";
  CHECK(Verdicts(Parse(ToyEntry(slower_baseline)), 0.01)[2] == V::kFaster);
  // The baseline says noswap fitted; lru did not.
  const std::string lost =
      R"({"noswap": {"feasible": true, "iteration_time_ns": 1300},
          "recompute": {"feasible": false}, "lru": {"feasible": false}})";
  CHECK(Verdicts(Parse(ToyEntry(lost)), 0.01) ==
        std::vector<V>{V::kLostFeasibility, V::kOk, V::kNewlyFeasible});
  // Recorded on another trace: every row fails.
  const std::string other_trace =
      R"(, "trace_identity": {"op_sequence_hash": "0x1", "iteration_ops": 13,
          "unswapped_peak_bytes": 1200, "persistent_bytes": 200})";
  CHECK(Verdicts(Parse(ToyEntry(kRecorded, other_trace)), 0.01) ==
        std::vector<V>{V::kTraceChanged, V::kTraceChanged, V::kTraceChanged});
  for (V v : {V::kSlower, V::kLostFeasibility, V::kNoBaseline, V::kTraceChanged}) {
    CHECK(IsFailure(v));
  }
  for (V v : {V::kOk, V::kFaster, V::kNewlyFeasible}) CHECK_FALSE(IsFailure(v));
}

TEST_CASE("regress: the report's rows and the updated baseline", "[eval]") {
  absl::StatusOr<RegressReport> r = RunRegression(Parse(ToyEntry("")), {});
  REQUIRE(r.ok());
  REQUIRE(r->rows.size() == 3);
  CHECK(r->failures == 3);
  CHECK(r->rows[2].planner == "lru");
  CHECK(r->rows[2].current.feasible);
  CHECK(r->rows[2].current.iteration_time_ns == 1550);
  const QualityEntry& u = r->updated.entries[0];
  CHECK(u.budget_bytes == 700);
  REQUIRE(u.identity.has_value());
  CHECK(u.identity->iteration_ops == 13);
  CHECK(u.identity->unswapped_peak_bytes == 1200);
  CHECK(u.identity->persistent_bytes == 200);
  // The update passes its own check, and survives a JSON round trip.
  const QualityBaseline back = Parse(QualityBaselineToJson(r->updated));
  CHECK(Verdicts(back, 0) == std::vector<Verdict>{Verdict::kOk, Verdict::kOk, Verdict::kOk});
  CHECK(back.entries[0].planners == u.planners);
  CHECK(back.entries[0].oversubscription == 2.0);
  CHECK(back.entries[0].identity == u.identity);
  CHECK(back.entries[0].results.at("lru").iteration_time_ns == 1550);
  CHECK_FALSE(back.entries[0].results.at("noswap").feasible);
  CHECK(QualityBaselineToJson(back) == QualityBaselineToJson(r->updated));
}

TEST_CASE("regress: planner options reach the planner and survive --update", "[eval]") {
  // Chameleon on the toy at budget 700: with its default 1 MiB minimum no
  // tensor is a candidate (infeasible); with min-tensor-bytes=0 it is the
  // plan worked out in tests/planners/chameleon_test.cc ("release waits
  // reach what the link cannot copy in time"): 1300 ns of ops + a 100 ns
  // release wait at op 3 = 1400 ns.
  const std::string entry = absl::StrCat(
      R"({"format": "swapplan-quality", "format_version": 1, "entries": [{"trace": ")",
      testing::DataPath("traces/chameleon_toy.json"),
      R"(", "device_memory": "700", "planners": ["chameleon"])");
  absl::StatusOr<RegressReport> plain = RunRegression(Parse(entry + "}]}"), {});
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->rows[0].current.feasible);
  absl::StatusOr<RegressReport> r = RunRegression(
      Parse(entry + R"(, "planner_options": ["chameleon.min-tensor-bytes=0"]}]})"), {});
  REQUIRE(r.ok());
  REQUIRE(r->rows.size() == 1);
  CHECK(r->rows[0].current.feasible);
  CHECK(r->rows[0].current.iteration_time_ns == 1400);
  const QualityBaseline back = Parse(QualityBaselineToJson(r->updated));
  CHECK(back.entries[0].planner_options ==
        std::vector<std::string>{"chameleon.min-tensor-bytes=0"});
  CHECK(Verdicts(back, 0) == std::vector<Verdict>{Verdict::kOk});
  // An option the planner does not know is refused when the baseline is
  // read (issue 19: before, only when the planner ran), naming it.
  absl::StatusOr<QualityBaseline> bad = ParseQualityBaseline(
      entry + R"(, "planner_options": ["chameleon.min-tensor=0"]}]})", "q.json");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.status().message()),
             Catch::StartsWith("q.json: $.entries[0].planner_options[0]: ") &&
                 Catch::Contains("chameleon has no option 'min-tensor'") &&
                 Catch::EndsWith("[bad-planner-option]"));
  CHECK(RuleOf(bad.status()) == "bad-planner-option");
}

// Issue 19: an option of a planner the entry does not run was ignored, and
// a bad value of one was never parsed; both are refused at read now.
TEST_CASE("regress: options of planners an entry does not run are refused", "[eval][robustness]") {
  auto err = [](const std::string& extra) {
    absl::StatusOr<QualityBaseline> b = ParseQualityBaseline(ToyEntry(kRecorded, extra), "q.json");
    CHECK(KindOf(b.status()) == ErrorKind::kMalformedInput);
    return std::string(b.status().message());
  };
  // The entry runs noswap, recompute and lru; vdnn's option reaches nothing.
  CHECK(err(R"(, "planner_options": ["vdnn.min-bytes=1MiB"])") ==
        "q.json: $.entries[0].planner_options[0]: planner 'vdnn' does not run for this entry "
        "(add it to \"planners\") [planner-not-run]");
  // An invalid value of a planner that does not run is still invalid.
  CHECK_THAT(err(R"(, "planner_options": ["chameleon.min-tensor-bytes=lots"])"),
             Catch::StartsWith("q.json: $.entries[0].planner_options[0]: ") &&
                 Catch::EndsWith(" [bad-planner-option]"));
  // An option of a planner that runs is fine.
  absl::StatusOr<QualityBaseline> fine = ParseQualityBaseline(
      ToyEntry(kRecorded, R"(, "planner_options": ["recompute.logical-layers=2"])"), "q.json");
  INFO(fine.status().ToString());
  CHECK(fine.ok());
}

// Issue 19: iteration_ops was cast to 32 bits (2^32 + 13 read as 13, so a
// changed trace matched); the recorded sizes could be negative.
TEST_CASE("regress: trace identity and budget values are range-checked", "[eval][robustness]") {
  auto err = [](const std::string& extra) {
    absl::StatusOr<QualityBaseline> b = ParseQualityBaseline(ToyEntry(kRecorded, extra), "q.json");
    CHECK(KindOf(b.status()) == ErrorKind::kMalformedInput);
    CHECK(RuleOf(b.status()) == "out-of-range");
    return std::string(b.status().message());
  };
  auto identity = [](const std::string& ops, const std::string& peak) {
    return absl::StrCat(R"(, "trace_identity": {"op_sequence_hash": "0x96504f34b6887a4f", )",
                        R"("iteration_ops": )", ops, R"(, "unswapped_peak_bytes": )", peak,
                        R"(, "persistent_bytes": 200})");
  };
  // 4294967309 = 2^32 + 13.
  CHECK(err(identity("4294967309", "1200")) ==
        "q.json: $.entries[0].trace_identity.iteration_ops: 4294967309 is out of range "
        "[0, 2147483647] [out-of-range]");
  CHECK(err(identity("-1", "1200")) ==
        "q.json: $.entries[0].trace_identity.iteration_ops: -1 is out of range "
        "[0, 2147483647] [out-of-range]");
  CHECK(err(identity("13", "-9223372036854775808")) ==
        "q.json: $.entries[0].trace_identity.unswapped_peak_bytes: -9223372036854775808 is "
        "negative; must be >= 0 [out-of-range]");
  CHECK(err(R"(, "budget_bytes": -1)") ==
        "q.json: $.entries[0].budget_bytes: -1 is negative; must be >= 0 [out-of-range]");
  // 0 is never recorded (--update writes budget_bytes only when positive);
  // read as "not recorded" it would skip the budget comparison below.
  CHECK(err(R"(, "budget_bytes": 0)") ==
        "q.json: $.entries[0].budget_bytes: 0 is not a recorded budget; must be > 0 (or absent) "
        "[out-of-range]");
  // The recorded value itself reads back.
  const QualityBaseline ok = Parse(ToyEntry(kRecorded, identity("13", "1200")));
  REQUIRE(ok.entries[0].identity.has_value());
  CHECK(ok.entries[0].identity->iteration_ops == 13);
}

// Issue 19 (silent acceptance): budget_bytes was read and never compared,
// so a baseline with an edited budget (9223372036854775807, 1) passed with
// results measured at 700 bytes. The toy at r = 2 has a budget of
// 1200 / 2 = 700 bytes (peak 1200, header comment).
TEST_CASE("regress: a recorded budget the settings no longer give fails every row",
          "[eval][robustness]") {
  using V = Verdict;
  CHECK(Verdicts(Parse(ToyEntry(kRecorded, R"(, "budget_bytes": 700)")), 0.01) ==
        std::vector<V>{V::kOk, V::kOk, V::kOk});
  for (const char* budget : {"1", "699", "701", "9223372036854775807"}) {
    INFO(budget);
    const QualityBaseline b = Parse(ToyEntry(kRecorded, absl::StrCat(", \"budget_bytes\": ", budget)));
    CHECK(Verdicts(b, 0.01) ==
          std::vector<V>{V::kBudgetChanged, V::kBudgetChanged, V::kBudgetChanged});
    absl::StatusOr<RegressReport> r = RunRegression(b, {});
    REQUIRE(r.ok());
    CHECK(r->failures == 3);
    // --update records the budget the settings give.
    CHECK(r->updated.entries[0].budget_bytes == 700);
  }
  CHECK(IsFailure(V::kBudgetChanged));
  CHECK(VerdictName(V::kBudgetChanged) == "budget-changed");
}

TEST_CASE("regress: baseline errors name the path and the rule", "[eval]") {
  auto err = [](const std::string& json) {
    absl::StatusOr<QualityBaseline> b = ParseQualityBaseline(json, "q.json");
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(b.status().message());
  };
  const std::string head = R"({"format": "swapplan-quality", "format_version": 1, "entries": [)";
  // Syntax errors give the byte where parsing stopped: "[" ends after byte 1.
  CHECK_THAT(err("["), Catch::StartsWith("q.json: $: not valid JSON at byte 2 (") &&
                           Catch::Contains("unexpected end of input") &&
                           Catch::EndsWith(") [json-syntax]"));
  // Issue 19: a number past a double is an input error, not an exception.
  CHECK_THAT(err(R"({"format": "swapplan-quality", "format_version": 1e400})"),
             Catch::StartsWith("q.json: $: not valid JSON (") &&
                 Catch::Contains("number overflow parsing '1e400'") &&
                 Catch::EndsWith(") [json-number]"));
  // Issue 19 (fuzz finding regress_io_newline_in_hash.json): a key with a
  // newline (JSON "\n") is quoted escaped, so the message is one line.
  CHECK(err(R"({"format": "swapplan-quality", "a\nb": 1})") == "q.json: $.a\\nb: unknown field [unknown-field]");
  CHECK(err(R"({"entries": []})") == "q.json: $: missing \"format\": \"swapplan-quality\" [baseline-schema]");
  CHECK(err(R"({"format": "swapplan-quality", "format_version": 2})") ==
        "q.json: $.format_version: unsupported version 2 (expected 1) [baseline-schema]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 2, "device_memory": "1GiB"}]})") ==
        "q.json: $.entries[0]: give exactly one of \"oversubscription\" and \"device_memory\" "
        "[baseline-schema]");
  CHECK(err(head + R"({"trace": "t"}]})") ==
        "q.json: $.entries[0]: give exactly one of \"oversubscription\" and \"device_memory\" "
        "[baseline-schema]");
  CHECK(err(head + R"({"oversubscription": 2}]})") == "q.json: $.entries[0]: missing \"trace\" [baseline-schema]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 0.5}]})") ==
        "q.json: $.entries[0].oversubscription: must be >= 1 [baseline-schema]");
  CHECK(err(head + R"({"trace": "t", "device_memory": "lots"}]})") ==
        "q.json: $.entries[0].device_memory: invalid size 'lots' [baseline-schema]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 2, "reserve": "1GiB"}]})") ==
        "q.json: $.entries[0].reserve: a reserve applies to device_memory, not to an "
        "oversubscription [baseline-schema]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 2, "planners": ["magic"]}]})") ==
        "q.json: $.entries[0].planners[0]: unknown planner 'magic' (known: ideal, noswap, "
        "chameleon, recompute, vdnn, lru, bucket, hybrid, advisor"
        ", selective, te-offload, save-on-cpu, hyperoffload, chain) [unknown-planner]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 2, "planner_options": ["lru"]}]})") ==
        "q.json: $.entries[0].planner_options[0]: 'lru': expected PLANNER.NAME=VALUE, e.g. "
        "advisor.time-limit-ns=30s [bad-planner-option]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 2, "colour": 1}]})") ==
        "q.json: $.entries[0].colour: unknown field [unknown-field]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 2,
                       "results": {"lru": {"feasible": true}}}]})") ==
        "q.json: $.entries[0].results.lru: a feasible result needs iteration_time_ns "
        "[baseline-schema]");
  CHECK(err(head + R"({"trace": "t", "oversubscription": 2,
                       "results": {"lru": {"feasible": false, "iteration_time_ns": 5}}}]})") ==
        "q.json: $.entries[0].results.lru: an infeasible result has no iteration time "
        "[baseline-schema]");
  CHECK(ReadQualityBaseline("/nonexistent/q.json").status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(RunRegression(Parse(ToyEntry("")), {.tolerance = 1.5}).status().message() ==
        "regress: tolerance 1.5 must be in [0, 1)");
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

TEST_CASE("regress: relations between planners of one run", "[eval]") {
  using V = Verdict;
  // lru fits (1550 ns), noswap and recompute do not.
  // "recompute<=lru": recompute does not fit while lru does -> order-broken.
  // "lru<=noswap": noswap does not fit -> nothing to compare, ok.
  // "lru<=lru": equal times -> ok.
  const QualityBaseline b = Parse(ToyEntry(
      kRecorded, R"(, "at_most": ["recompute<=lru", "lru<=noswap", "lru<=lru"])"));
  absl::StatusOr<RegressReport> r = RunRegression(b, {.tolerance = 0.01});
  REQUIRE(r.ok());
  REQUIRE(r->rows.size() == 6);
  CHECK(r->rows[3].planner == "recompute<=lru");
  CHECK(r->rows[3].verdict == V::kOrderBroken);
  CHECK(r->rows[4].verdict == V::kOk);
  CHECK(r->rows[5].verdict == V::kOk);
  REQUIRE(r->rows[5].change.has_value());
  CHECK(*r->rows[5].change == 0.0);
  CHECK(r->failures == 1);
  CHECK(VerdictName(V::kOrderBroken) == "order-broken");
  // The relation is a setting: --update keeps it.
  CHECK(QualityBaselineToJson(r->updated).find(R"("at_most")") != std::string::npos);
  // Errors: not "A<=B", an unknown planner, a planner that does not run.
  auto error = [](const std::string& extra) {
    return std::string(ParseQualityBaseline(ToyEntry(kRecorded, extra), "q.json").status().message());
  };
  CHECK_THAT(error(R"(, "at_most": ["lru"])"), Catch::Contains("expected \"A<=B\""));
  CHECK_THAT(error(R"(, "at_most": ["lru<=magic"])"), Catch::Contains("unknown planner 'magic'"));
  CHECK_THAT(error(R"(, "at_most": ["lru<=chameleon"])"),
             Catch::Contains("$.entries[0].at_most[0]: planner 'chameleon' does not run"));
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

TEST_CASE("regress: a default_set entry fails not-run when the default set loses a planner",
          "[eval]") {
  // The toy at r = 2 with compare's default set as it is when run: after
  // --update every planner it ran is recorded and passes.
  const std::string entry =
      absl::StrCat(R"({"format": "swapplan-quality", "format_version": 1, "entries": [)",
                   R"({"trace": ")", testing::DataPath("traces/chameleon_toy.json"),
                   R"(", "oversubscription": 2, "default_set": true)");
  absl::StatusOr<RegressReport> first = RunRegression(Parse(entry + "}]}"), {});
  REQUIRE(first.ok());
  const QualityEntry& u = first->updated.entries[0];
  CHECK(u.default_set);
  CHECK(u.planners.empty());
  // Every planner of the default set, the hybrid and HyperOffload included.
  for (const char* p : {"noswap", "chameleon", "lru", "hybrid", "hyperoffload"}) {
    INFO(p);
    CHECK(u.results.count(p) == 1);
  }
  CHECK(u.results.count("advisor") == 0);
  const QualityBaseline back = Parse(QualityBaselineToJson(first->updated));
  CHECK(back.entries[0].default_set);
  absl::StatusOr<RegressReport> again = RunRegression(back, {});
  REQUIRE(again.ok());
  CHECK(again->failures == 0);
  // A recorded planner the default set no longer holds (here: the advisor,
  // as a planner the set lost would be): a not-run row, a failure.
  QualityBaseline lost = back;
  lost.entries[0].results["advisor"] = {.feasible = true, .iteration_time_ns = 1};
  absl::StatusOr<RegressReport> r = RunRegression(lost, {});
  REQUIRE(r.ok());
  CHECK(r->failures == 1);
  bool seen = false;
  for (const RegressRow& row : r->rows) {
    if (row.planner != "advisor") continue;
    seen = true;
    CHECK(row.verdict == Verdict::kNotRun);
    CHECK(VerdictName(row.verdict) == "not-run");
  }
  CHECK(seen);
  CHECK(IsFailure(Verdict::kNotRun));
  // default_set and a planner list exclude each other.
  absl::StatusOr<QualityBaseline> both = ParseQualityBaseline(
      entry + R"(, "planners": ["lru"]}]})", "q.json");
  CHECK_FALSE(both.ok());
  CHECK_THAT(std::string(both.status().message()),
             Catch::Contains("give \"planners\" or \"default_set\", not both"));
}

}  // namespace
}  // namespace swapplan
