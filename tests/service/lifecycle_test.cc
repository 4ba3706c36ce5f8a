// Deadlines, cancellation, the concurrency limit, token and TLS, the
// loopback rule, health checking, and `swapplan serve` itself (SIGTERM).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "health_test.grpc.pb.h"
#include "service/service_fixture.h"
#include "swapplan/util/error.h"

namespace swapplan::testing {
namespace {

using std::chrono::milliseconds;

// A search with no limit but its caller's: population 8, no generation
// cap, no convergence stop, a 60 s time limit.
v1::SearchRequest EndlessSearch(const std::string& id) {
  v1::SearchRequest req;
  req.mutable_trace()->set_trace_id(id);
  req.mutable_device()->set_reserve_bytes(100);
  (*req.mutable_options())["max-generations"] = "0";
  (*req.mutable_options())["convergence-generations"] = "0";
  (*req.mutable_options())["time-limit-ns"] = "60s";
  (*req.mutable_options())["population"] = "8";
  return req;
}

TEST_CASE("service: a search stops at the deadline with its best so far", "[service][lifecycle]") {
  TestServer t;
  const std::string id = t.UploadToy();
  grpc::ClientContext ctx;
  // 3 s: the server keeps 10 % (300 ms) for its last generation and the
  // answer, room enough on a loaded 2-core machine (1.5 s flaked there).
  ctx.set_deadline(In(milliseconds(3000)));
  const auto start = std::chrono::steady_clock::now();
  auto reader = t.rpc->Search(&ctx, EndlessSearch(id));
  v1::SearchUpdate u;
  v1::SearchResult result;
  bool got_result = false;
  while (reader->Read(&u)) {
    if (u.has_result()) {
      result = u.result();
      got_result = true;
    }
  }
  grpc::Status s = reader->Finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(s.error_message() << " after " << seconds << " s");
  REQUIRE(s.ok());
  REQUIRE(got_result);
  CHECK(result.stop_reason() == "deadline");
  CHECK(result.plan().best_so_far());
  CHECK(result.plan().report().feasible());
  // Stopped 10% (300 ms) before the 3 s deadline, not after 60 s.
  CHECK(seconds < 3.0);
  // Not cached: the same request searches again.
  grpc::ClientContext ctx2;
  v1::GetPolicyRequest g;
  g.set_cache_key(result.plan().cache_key());
  v1::PlanResponse r;
  CHECK(t.rpc->GetPolicy(&ctx2, g, &r).error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("service: a cancelled search ends and frees its slot; the limit refuses the excess",
          "[service][lifecycle]") {
  PlannerServiceOptions po;
  po.max_concurrent_plans = 1;
  TestServer t(po);
  const std::string id = t.UploadToy();
  grpc::ClientContext search_ctx;
  auto reader = t.rpc->Search(&search_ctx, EndlessSearch(id));
  v1::SearchUpdate u;
  REQUIRE(reader->Read(&u));  // the search is running: it holds the one slot
  REQUIRE(u.has_progress());
  {
    grpc::ClientContext ctx;
    v1::PlanResponse r;
    grpc::Status s = t.rpc->Plan(&ctx, ToyPlan(id), &r);
    CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(s.error_message().find("--max-concurrent-plans") != std::string::npos);
  }
  search_ctx.TryCancel();
  while (reader->Read(&u)) {
  }
  CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  // The server side ends too (its log says CANCELLED) and the slot is free.
  bool logged = false;
  for (int i = 0; i < 100 && !logged; ++i) {
    for (const RequestLog& r : t.Logs()) {
      logged = logged || (r.method == "Search" && r.code == grpc::StatusCode::CANCELLED);
    }
    if (!logged) std::this_thread::sleep_for(milliseconds(20));
  }
  CHECK(logged);
  grpc::ClientContext ctx;
  v1::PlanResponse r;
  CHECK(t.rpc->Plan(&ctx, ToyPlan(id), &r).ok());
}

TEST_CASE("service: a client gone mid-upload leaves nothing behind", "[service][lifecycle]") {
  TestServer t;
  const std::string bytes = ToyBytes();
  {
    grpc::ClientContext ctx;
    v1::UploadTraceResponse r;
    auto w = t.rpc->UploadTrace(&ctx, &r);
    v1::UploadTraceRequest req;
    req.set_name("half.json");
    req.set_chunk(bytes.substr(0, 1000));
    REQUIRE(w->Write(req));
    ctx.TryCancel();  // as a killed client: the stream is reset
    CHECK(w->Finish().error_code() == grpc::StatusCode::CANCELLED);
  }
  bool logged = false;
  for (int i = 0; i < 100 && !logged; ++i) {
    for (const RequestLog& r : t.Logs()) {
      logged = logged || (r.method == "UploadTrace" && r.code == grpc::StatusCode::CANCELLED);
    }
    if (!logged) std::this_thread::sleep_for(milliseconds(20));
  }
  CHECK(logged);
  // Neither the half nor the whole is held.
  grpc::ClientContext ctx;
  v1::PlanResponse r;
  CHECK(t.rpc->Plan(&ctx, ToyPlan(Sha256Hex(bytes)), &r).error_code() ==
        grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("service: the token is checked on every call", "[service][security]") {
  PlannerServiceOptions po;
  po.token = "s3cret";
  TestServer t(po);
  v1::GetPolicyRequest g;
  g.set_cache_key("abc");
  v1::PlanResponse r;
  {
    grpc::ClientContext ctx;  // none
    CHECK(t.rpc->GetPolicy(&ctx, g, &r).error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cre");
    CHECK(t.rpc->GetPolicy(&ctx, g, &r).error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret");
    // Past authentication: the key is simply unknown.
    CHECK(t.rpc->GetPolicy(&ctx, g, &r).error_code() == grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    v1::UploadTraceResponse u;
    auto w = t.rpc->UploadTrace(&ctx, &u);
    w->WritesDone();
    CHECK(w->Finish().error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  // The health service answers without the token.
  auto health = grpc::health::v1::Health::NewStub(t.channel);
  grpc::ClientContext ctx;
  grpc::health::v1::HealthCheckRequest hreq;
  grpc::health::v1::HealthCheckResponse hres;
  REQUIRE(health->Check(&ctx, hreq, &hres).ok());
  CHECK(hres.status() == grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_CASE("service: TLS with a certificate made for the test", "[service][security]") {
  const std::string dir = TempDir() + "/tls";
  std::filesystem::create_directories(dir);
  const std::string cert = dir + "/cert.pem";
  const std::string key = dir + "/key.pem";
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                          "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout '" + key +
                          "' -out '" + cert + "' >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  ServerOptions so;
  so.tls_cert_file = cert;
  so.tls_key_file = key;
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(cert);
  TestServer t({}, so, grpc::SslCredentials(ssl));
  t.Connect(grpc::SslCredentials(ssl), "localhost");
  v1::PlanResponse r;
  {
    grpc::ClientContext ctx;
    grpc::Status s = t.rpc->Plan(&ctx, ToyPlan(""), &r);  // reaches the service: no trace
    INFO(s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  // A plaintext client cannot talk to it.
  t.Connect(grpc::InsecureChannelCredentials());
  grpc::ClientContext ctx;
  ctx.set_deadline(In(milliseconds(2000)));
  CHECK(t.rpc->Plan(&ctx, ToyPlan(""), &r).error_code() == grpc::StatusCode::UNAVAILABLE);
}

TEST_CASE("service: a non-loopback address needs TLS, a token or --insecure",
          "[service][security]") {
  CHECK(IsLoopbackAddress("127.0.0.1:7070"));
  CHECK(IsLoopbackAddress("localhost:0"));
  CHECK(IsLoopbackAddress("[::1]:7070"));
  CHECK_FALSE(IsLoopbackAddress("0.0.0.0:7070"));
  CHECK_FALSE(IsLoopbackAddress("[::]:7070"));
  CHECK_FALSE(IsLoopbackAddress("10.1.2.3:7070"));
  ServerOptions so;
  so.listen_address = "0.0.0.0:0";
  absl::StatusOr<std::unique_ptr<PlannerServer>> s = PlannerServer::Start(so, {}, nullptr);
  REQUIRE_FALSE(s.ok());
  CHECK(KindOf(s.status()) == ErrorKind::kUsage);
  CHECK(s.status().message().find("--insecure") != absl::string_view::npos);
  PlannerServiceOptions po;
  po.token = "t";
  CHECK(PlannerServer::Start(so, po, nullptr).ok());
  so.insecure = true;
  CHECK(PlannerServer::Start(so, {}, nullptr).ok());
}

TEST_CASE("serve: SIGTERM lets a call in flight finish within the grace period",
          "[service][cli]") {
  ServeProcess serve({"--grace", "10s"}, "serve_drain");
  auto rpc = NewPlannerGrpcClient(
      grpc::CreateChannel(serve.Address(), grpc::InsecureChannelCredentials()));
  v1::SearchRequest req = EndlessSearch("");
  req.mutable_trace()->set_inline_trace(ToyBytes());
  grpc::ClientContext ctx;
  ctx.set_deadline(In(milliseconds(4000)));  // the search answers at ~3.6 s
  auto reader = rpc->Search(&ctx, req);
  v1::SearchUpdate u;
  REQUIRE(reader->Read(&u));  // in flight
  kill(serve.pid, SIGTERM);
  bool result = false;
  while (reader->Read(&u)) result = result || u.has_result();
  grpc::Status s = reader->Finish();
  INFO(s.error_message());
  CHECK(s.ok());
  CHECK(result);
  CHECK(serve.Stop() == 0);
  CHECK(serve.Err().find("SIGTERM: draining") != std::string::npos);
}

TEST_CASE("serve: listens, logs each call, drains on SIGTERM and exits 0",
          "[service][cli]") {
  ServeProcess serve({"--grace", "2s"});
  auto rpc = NewPlannerGrpcClient(
      grpc::CreateChannel(serve.Address(), grpc::InsecureChannelCredentials()));
  v1::PlanRequest req = ToyPlan("");
  req.mutable_trace()->set_inline_trace(ToyBytes());
  grpc::ClientContext ctx;
  v1::PlanResponse r;
  CHECK(rpc->Plan(&ctx, req, &r).ok());
  CHECK(serve.Stop() == 0);
  const std::string text = serve.Err();
  CHECK(text.find("swapplan serve: method=Plan trace=" + Sha256Hex(ToyBytes()).substr(0, 16)) !=
        std::string::npos);
  CHECK(text.find("status=OK cache=miss") != std::string::npos);
  CHECK(text.find("SIGTERM: draining") != std::string::npos);
  CHECK(text.find("swapplan serve: stopped") != std::string::npos);
  // And an unprotected public address is refused (exit 2).
  CliRun refused = Swapplan("serve --listen 0.0.0.0:0");
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("not a loopback address") != std::string::npos);
}

}  // namespace
}  // namespace swapplan::testing
