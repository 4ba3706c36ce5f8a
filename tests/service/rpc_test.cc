// Every RPC of swapplan.v1.Planner against an in-process server on a
// loopback port, and the error code of each failure kind.
#include <string>

#include "absl/strings/str_cat.h"
#include "service/service_fixture.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/service/cache.h"
#include "swapplan/trace/io.h"

namespace swapplan::testing {
namespace {

TEST_CASE("service: UploadTrace in chunks gives the content digest and the trace's shape",
          "[service]") {
  TestServer t;
  const std::string bytes = ToyBytes();
  v1::UploadTraceResponse r;
  // 512-byte chunks: the 2177-byte toy arrives in 5 messages.
  REQUIRE(t.Upload(bytes, &r, 512).ok());
  CHECK(r.trace().trace_id() == Sha256Hex(bytes));
  CHECK(r.trace().source() == "toy.json");
  CHECK(r.trace().size_bytes() == static_cast<int64_t>(bytes.size()));
  CHECK(r.trace().num_iterations() == 1);
  CHECK(r.trace().num_ops() == 13);
  REQUIRE(r.trace().iterations_size() == 1);
  const Trace toy = DataTrace("traces/chameleon_toy.json");
  CHECK(r.trace().iterations(0).op_sequence_hash() == ComputeFingerprint(toy, 0).op_sequence_hash);
  CHECK(r.trace().device_memory_bytes() == 1000);
  // One log record: the upload, with its bytes and the trace id.
  const std::vector<RequestLog> logs = t.Logs();
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].method == "UploadTrace");
  CHECK(logs[0].trace_id == Sha256Hex(bytes));
  CHECK(logs[0].request_bytes == static_cast<int64_t>(bytes.size()));
  CHECK(logs[0].code == grpc::StatusCode::OK);
  CHECK(FormatRequestLog(logs[0]).find("method=UploadTrace trace=" + Sha256Hex(bytes).substr(0, 16)) == 0);
  // The handler's thread read and parsed the trace: it used some CPU, and
  // no more than the call's wall time.
  CHECK(logs[0].handler_cpu_ns > 0);
  CHECK(logs[0].handler_cpu_ns <= logs[0].latency_ns);
  CHECK(FormatRequestLog(logs[0]).find(absl::StrCat(" cpu_us=", logs[0].handler_cpu_ns / 1000,
                                                    " peer=")) != std::string::npos);
}

TEST_CASE("service: Plan answers the numbers of `plan --json`, then from the cache",
          "[service]") {
  TestServer t;
  const std::string id = t.UploadToy();
  v1::PlanResponse first;
  {
    grpc::ClientContext ctx;
    v1::PlanRequest req = ToyPlan(id);
    req.set_policy_as_json(true);
    grpc::Status s = t.rpc->Plan(&ctx, req, &first);
    INFO(s.error_message());
    REQUIRE(s.ok());
  }
  const v1::PlanReport& r = first.report();
  // tests/golden/plan_toy.json: budget 1000 - 100 = 900 B; tensors B (200 B)
  // and C (100 B) out: 300 B each way; peak 1200 B -> 900 B; no stall, so
  // the simulated iteration is the recorded 1300 ns.
  CHECK(r.planner() == "chameleon");
  CHECK(r.num_ops() == 13);
  CHECK(r.budget_bytes() == 900);
  CHECK(r.num_items() == 2);
  CHECK(r.d2h_bytes() == 300);
  CHECK(r.h2d_bytes() == 300);
  CHECK(r.peak_unswapped_bytes() == 1200);
  CHECK(r.peak_with_policy_bytes() == 900);
  CHECK(r.check() == "clean");
  CHECK(r.feasible());
  CHECK(r.iteration_time_ns() == 1300);
  CHECK(r.ideal_iteration_time_ns() == 1300);
  CHECK(r.device().capacity_bytes() == 1000);
  CHECK(r.device().reserve_bytes() == 100);
  CHECK_FALSE(first.cache_hit());
  CHECK_FALSE(first.best_so_far());
  CHECK(first.cache_key().size() == 64);
  absl::StatusOr<Policy> p = ParsePolicyBinary(first.policy(), "policy");
  REQUIRE(p.ok());
  CHECK(p->items.size() == 2);
  CHECK(p->simulated_iteration_time_ns == 1300);
  CHECK(first.policy_json().find("\"planner\"") != std::string::npos);

  // The same request again: from the cache, the same policy bytes.
  v1::PlanResponse second;
  grpc::ClientContext ctx2;
  REQUIRE(t.rpc->Plan(&ctx2, ToyPlan(id), &second).ok());
  CHECK(second.cache_hit());
  CHECK(second.plan_time_ns() == 0);
  CHECK(second.policy() == first.policy());
  CHECK(second.cache_key() == first.cache_key());
  CHECK(second.policy_json().empty());

  // GetPolicy by the key.
  v1::GetPolicyRequest g;
  g.set_cache_key(first.cache_key());
  v1::PlanResponse got;
  grpc::ClientContext ctx3;
  REQUIRE(t.rpc->GetPolicy(&ctx3, g, &got).ok());
  CHECK(got.policy() == first.policy());
  CHECK(got.report().peak_with_policy_bytes() == 900);

  // Another option is another key: planned again.
  v1::PlanRequest other = ToyPlan(id);
  (*other.mutable_options())["layers"] = "1";
  v1::PlanResponse third;
  grpc::ClientContext ctx4;
  REQUIRE(t.rpc->Plan(&ctx4, other, &third).ok());
  CHECK_FALSE(third.cache_hit());
  CHECK(third.cache_key() != first.cache_key());
}

TEST_CASE("service: an inline trace plans like an uploaded one", "[service]") {
  TestServer t;
  v1::PlanRequest req = ToyPlan("");
  req.mutable_trace()->set_inline_trace(ToyBytes());
  req.mutable_trace()->set_inline_name("inline-toy.json");
  v1::PlanResponse r;
  grpc::ClientContext ctx;
  REQUIRE(t.rpc->Plan(&ctx, req, &r).ok());
  CHECK(r.report().trace() == "inline-toy.json");
  CHECK(r.report().peak_with_policy_bytes() == 900);
  // The inline trace is now held under its digest.
  v1::PlanResponse again;
  grpc::ClientContext ctx2;
  REQUIRE(t.rpc->Plan(&ctx2, ToyPlan(Sha256Hex(ToyBytes())), &again).ok());
  CHECK(again.cache_hit());
}

TEST_CASE("service: Check, Simulate and Compare", "[service]") {
  TestServer t;
  const std::string id = t.UploadToy();
  v1::PlanResponse plan;
  {
    grpc::ClientContext ctx;
    REQUIRE(t.rpc->Plan(&ctx, ToyPlan(id), &plan).ok());
  }
  SECTION("Check: the planned policy is clean") {
    v1::CheckRequest req;
    req.mutable_trace()->set_trace_id(id);
    req.set_policy(plan.policy());
    v1::CheckResponse r;
    grpc::ClientContext ctx;
    REQUIRE(t.rpc->Check(&ctx, req, &r).ok());
    CHECK(r.clean());
    CHECK(r.items() == 2);
    CHECK(r.budget_bytes() == 900);
    CHECK(r.peak_bytes() == 900);
    CHECK(r.bytes_out() == 300);
    CHECK(r.violations_size() == 0);
  }
  SECTION("Check: a policy over a smaller budget lists its violations (not an error)") {
    absl::StatusOr<Policy> p = ParsePolicyBinary(plan.policy(), "p");
    REQUIRE(p.ok());
    p->device.reserve_bytes = 200;  // budget 800 B < the 900 B peak
    v1::CheckRequest req;
    req.mutable_trace()->set_trace_id(id);
    req.set_policy(PolicyToJson(*p));  // the JSON form is accepted too
    v1::CheckResponse r;
    grpc::ClientContext ctx;
    REQUIRE(t.rpc->Check(&ctx, req, &r).ok());
    CHECK_FALSE(r.clean());
    REQUIRE(r.violations_size() >= 1);
    CHECK(r.violations(0).kind() == "over-budget");
    CHECK(r.violations(0).bytes() == 100);
  }
  SECTION("Simulate: the policy, then the iteration without one") {
    v1::SimulateRequest req;
    req.mutable_trace()->set_trace_id(id);
    req.set_policy(plan.policy());
    v1::SimulateResponse r;
    grpc::ClientContext ctx;
    REQUIRE(t.rpc->Simulate(&ctx, req, &r).ok());
    CHECK(r.iteration_time_ns() == 1300);
    CHECK_FALSE(r.oom());
    CHECK(r.peak_bytes() == 900);
    CHECK(r.bytes_d2h() == 300);
    CHECK(r.device().capacity_bytes() == 900);  // the policy's budget
    // No policy on the recorded 1000 B: the 1200 B peak runs out of memory.
    v1::SimulateRequest bare;
    bare.mutable_trace()->set_trace_id(id);
    v1::SimulateResponse b;
    grpc::ClientContext ctx2;
    REQUIRE(t.rpc->Simulate(&ctx2, bare, &b).ok());
    CHECK(b.oom());
    CHECK(b.oom_op() >= 0);
  }
  SECTION("Compare: one row per planner") {
    v1::CompareRequest req;
    req.mutable_trace()->set_trace_id(id);
    req.mutable_device()->set_reserve_bytes(100);
    req.add_planners("ideal");
    req.add_planners("noswap");
    req.add_planners("chameleon");
    req.add_planner_options()->set_planner("chameleon");
    req.mutable_planner_options(0)->set_name("min-tensor-bytes");
    req.mutable_planner_options(0)->set_value("0");
    v1::CompareResponse r;
    grpc::ClientContext ctx;
    grpc::Status s = t.rpc->Compare(&ctx, req, &r);
    INFO(s.error_message());
    REQUIRE(s.ok());
    CHECK(r.budget_bytes() == 900);
    CHECK(r.peak_unswapped_bytes() == 1200);
    REQUIRE(r.rows_size() == 3);
    CHECK(r.rows(0).planner() == "ideal");
    CHECK(r.rows(1).planner() == "noswap");
    CHECK_FALSE(r.rows(1).feasible());  // 1200 B never fits 900 B
    CHECK(r.rows(2).planner() == "chameleon");
    CHECK(r.rows(2).feasible());
    CHECK(r.rows(2).iteration_time_ns() == 1300);
  }
}

TEST_CASE("service: Search streams progress, then its result", "[service]") {
  TestServer t;
  const std::string id = t.UploadToy();
  v1::SearchRequest req;
  req.mutable_trace()->set_trace_id(id);
  req.mutable_device()->set_reserve_bytes(100);
  (*req.mutable_options())["max-generations"] = "3";
  (*req.mutable_options())["time-limit-ns"] = "0";
  (*req.mutable_options())["population"] = "8";
  (*req.mutable_options())["seed"] = "1";
  grpc::ClientContext ctx;
  auto reader = t.rpc->Search(&ctx, req);
  v1::SearchUpdate u;
  int progress = 0;
  int results = 0;
  v1::SearchResult result;
  v1::SearchProgress last;
  while (reader->Read(&u)) {
    if (u.has_progress()) {
      ++progress;
      CHECK(u.progress().population() == 8);
      last = u.progress();
    } else {
      ++results;
      result = u.result();
    }
  }
  grpc::Status s = reader->Finish();
  INFO(s.error_message());
  REQUIRE(s.ok());
  CHECK(progress >= 3);  // generation 0 and generations 1..3
  CHECK(results == 1);
  CHECK(result.stop_reason() == "generation limit");
  // The search's own counts: 3 generations after the initial population;
  // at least the evaluations the last progress message counted (local
  // search on the elite may add some after it).
  CHECK(result.generations() == 3);
  CHECK(last.generation() == 3);
  CHECK(result.evaluations() >= last.evaluations());
  CHECK(result.evaluations() >= 8);  // the initial population alone
  CHECK(result.plan().report().planner() == "advisor");
  CHECK(result.plan().report().feasible());
  CHECK(result.plan().report().peak_with_policy_bytes() <= 900);
  CHECK_FALSE(result.plan().best_so_far());
}

// The code, message and error-kind trailer of one failed Plan.
void ExpectPlanError(TestServer& t, const v1::PlanRequest& req, grpc::StatusCode code,
                     const std::string& kind, const std::string& message_part) {
  grpc::ClientContext ctx;
  v1::PlanResponse r;
  grpc::Status s = t.rpc->Plan(&ctx, req, &r);
  INFO(s.error_message());
  CHECK(s.error_code() == code);
  CHECK(s.error_message().find(message_part) != std::string::npos);
  CHECK(Trailer(ctx, "swapplan-error-kind") == kind);
}

TEST_CASE("service: each error kind has its gRPC code", "[service][errors]") {
  PlannerServiceOptions po;
  po.max_trace_bytes = 2000;  // the 2177-byte toy is over it
  TestServer t(po);
  v1::PlanRequest inline_toy = ToyPlan("");
  inline_toy.mutable_trace()->set_inline_trace(ToyBytes());

  SECTION("oversized inline trace: RESOURCE_EXHAUSTED") {
    ExpectPlanError(t, inline_toy, grpc::StatusCode::RESOURCE_EXHAUSTED, "resource-limit",
                    "over the server's limit of 2000 bytes");
  }
  SECTION("oversized upload: refused while uploading") {
    v1::UploadTraceResponse r;
    grpc::Status s = t.Upload(ToyBytes(), &r, 512);
    CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(s.error_message().find("while uploading") != std::string::npos);
    // The server read 4 chunks (2048 bytes > 2000) and stopped there.
    const std::vector<RequestLog> logs = t.Logs();
    REQUIRE(logs.size() == 1);
    CHECK(logs[0].request_bytes == 2048);
  }
  SECTION("a declared size over the limit: refused at the first message") {
    grpc::ClientContext ctx;
    v1::UploadTraceResponse r;
    auto w = t.rpc->UploadTrace(&ctx, &r);
    v1::UploadTraceRequest req;
    req.set_name("big.trace");
    req.set_total_bytes(int64_t{1} << 40);
    w->Write(req);
    w->WritesDone();
    grpc::Status s = w->Finish();
    CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(s.error_message().find("1099511627776 bytes is over") != std::string::npos);
  }
  SECTION("malformed trace: INVALID_ARGUMENT with the reader's message") {
    v1::PlanRequest req = ToyPlan("");
    req.mutable_trace()->set_inline_trace("{\"format\": \"swapplan-trace\", \"tensors\": [}");
    req.mutable_trace()->set_inline_name("broken.json");
    ExpectPlanError(t, req, grpc::StatusCode::INVALID_ARGUMENT, "malformed-input", "broken.json");
  }
  SECTION("unknown trace id: NOT_FOUND, upload again") {
    ExpectPlanError(t, ToyPlan("00ff"), grpc::StatusCode::NOT_FOUND, "not-found",
                    "upload it again");
  }
  SECTION("bad option and unknown planner") {
    PlannerServiceOptions big;
    TestServer u(big);
    const std::string id = u.UploadToy();
    v1::PlanRequest bad = ToyPlan(id);
    (*bad.mutable_options())["no-such-option"] = "1";
    ExpectPlanError(u, bad, grpc::StatusCode::INVALID_ARGUMENT, "usage", "no-such-option");
    v1::PlanRequest unknown = ToyPlan(id);
    unknown.set_planner("magic");
    ExpectPlanError(u, unknown, grpc::StatusCode::NOT_FOUND, "not-found", "magic");
    v1::PlanRequest iteration = ToyPlan(id);
    iteration.set_iteration(5);
    ExpectPlanError(u, iteration, grpc::StatusCode::INVALID_ARGUMENT, "usage",
                    "iteration 5 is out of range");
  }
  SECTION("infeasible budget: OUT_OF_RANGE with the bytes missing") {
    PlannerServiceOptions big;
    TestServer u(big);
    v1::PlanRequest req = ToyPlan(u.UploadToy());
    // tests/cli/plan_check_cli_test.cc: a 700 B budget with no release
    // before the copy out completes leaves 100 B missing at op 3.
    req.mutable_device()->set_reserve_bytes(300);
    (*req.mutable_options())["release-wait"] = "never";
    ExpectPlanError(u, req, grpc::StatusCode::OUT_OF_RANGE, "infeasible",
                    "100 bytes (100 B) still missing");
  }
  SECTION("fingerprint mismatch: FAILED_PRECONDITION") {
    PlannerServiceOptions big;
    TestServer u(big);
    const std::string id = u.UploadToy();
    v1::PlanResponse plan;
    grpc::ClientContext ctx;
    REQUIRE(u.rpc->Plan(&ctx, ToyPlan(id), &plan).ok());
    v1::CheckRequest req;
    req.mutable_trace()->set_inline_trace(ReadFile(DataPath("traces/toy_valid.json")));
    req.set_policy(plan.policy());
    v1::CheckResponse r;
    grpc::ClientContext ctx2;
    grpc::Status s = u.rpc->Check(&ctx2, req, &r);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(Trailer(ctx2, "swapplan-error-kind") == "fingerprint-mismatch");
  }
  SECTION("malformed policy: INVALID_ARGUMENT") {
    PlannerServiceOptions big;
    TestServer u(big);
    v1::CheckRequest req;
    req.mutable_trace()->set_trace_id(u.UploadToy());
    req.set_policy("{\"format\": 7}");
    v1::CheckResponse r;
    grpc::ClientContext ctx;
    grpc::Status s = u.rpc->Check(&ctx, req, &r);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(s.error_message().find("policy") != std::string::npos);
  }
  SECTION("unknown cache key: NOT_FOUND") {
    v1::GetPolicyRequest g;
    g.set_cache_key("abc");
    v1::PlanResponse r;
    grpc::ClientContext ctx;
    grpc::Status s = t.rpc->GetPolicy(&ctx, g, &r);
    CHECK(s.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK(Trailer(ctx, "swapplan-error-kind") == "not-found");
  }
}

}  // namespace
}  // namespace swapplan::testing
