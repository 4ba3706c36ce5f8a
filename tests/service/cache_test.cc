// BlobCache (memory + directory, LRU, single flight) and the service's
// cache across a restart.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "service/service_fixture.h"
#include "swapplan/service/cache.h"
#include "swapplan/util/error.h"

namespace swapplan::testing {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST_CASE("cache: SHA-256 of known inputs", "[service][cache]") {
  // FIPS 180-2 test vectors.
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  CHECK(h.HexDigest() == Sha256Hex("abc"));
}

TEST_CASE("cache: memory LRU keeps the most recent values within the bound", "[service][cache]") {
  // 250 bytes hold two 100-byte values: the third evicts the least recent.
  auto c = BlobCache::Open({.max_memory_bytes = 250});
  REQUIRE(c.ok());
  BlobCache& cache = **c;
  REQUIRE(cache.Put("a", std::string(100, 'a')).ok());
  REQUIRE(cache.Put("b", std::string(100, 'b')).ok());
  CHECK(cache.Get("a").has_value());  // a is now more recent than b
  REQUIRE(cache.Put("c", std::string(100, 'c')).ok());
  CHECK(cache.Get("a").has_value());
  CHECK_FALSE(cache.Get("b").has_value());
  CHECK(cache.Get("c").has_value());
  CHECK(cache.stats().memory_bytes == 200);
  CHECK_FALSE(cache.Get("../etc/passwd").has_value());  // not a key
}

TEST_CASE("cache: the directory survives a reopen and evicts least recently used files",
          "[service][cache]") {
  const std::string dir = FreshDir("blob_lru");
  {
    auto c = BlobCache::Open({.dir = dir, .max_memory_bytes = 1, .max_disk_bytes = 250});
    REQUIRE(c.ok());
    REQUIRE((*c)->Put("a", std::string(100, 'a')).ok());
    REQUIRE((*c)->Put("b", std::string(100, 'b')).ok());
    CHECK(std::filesystem::exists(dir + "/a.blob"));
    CHECK(std::filesystem::exists(dir + "/b.blob"));
    // Nothing of the temporaries is left.
    int files = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
    CHECK(files == 2);
  }
  // A crash's temporary is removed by Open; the files are found again.
  WriteFileAtomically(dir + "/.tmp-stray", "x").IgnoreError();
  auto c = BlobCache::Open({.dir = dir, .max_memory_bytes = 1, .max_disk_bytes = 250});
  REQUIRE(c.ok());
  CHECK_FALSE(std::filesystem::exists(dir + "/.tmp-stray"));
  CHECK((*c)->stats().disk_bytes == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK((*c)->Get("a") == std::string(100, 'a'));  // a becomes the most recent
  REQUIRE((*c)->Put("c", std::string(100, 'c')).ok());
  // 300 > 250: the least recently used file (b) goes.
  CHECK(std::filesystem::exists(dir + "/a.blob"));
  CHECK_FALSE(std::filesystem::exists(dir + "/b.blob"));
  CHECK(std::filesystem::exists(dir + "/c.blob"));
  CHECK((*c)->stats().disk_evictions == 1);
}

TEST_CASE("cache: concurrent identical requests compute once", "[service][cache]") {
  auto c = BlobCache::Open({});
  REQUIRE(c.ok());
  std::atomic<int> computed{0};
  std::atomic<int> hits{0};
  // Each thread's answer, checked after the joins (Catch2's assertions are
  // not thread-safe).
  std::vector<absl::StatusOr<std::string>> answers(8, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      bool hit = false;
      answers[i] = (*c)->GetOrCompute(
          "k",
          [&]() -> absl::StatusOr<BlobCache::Computed> {
            ++computed;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            return BlobCache::Computed{"value"};
          },
          &hit);
      if (hit) ++hits;
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::StatusOr<std::string>& v : answers) {
    CHECK(v.ok());
    CHECK(v.value_or("") == "value");
  }
  CHECK(computed == 1);
  CHECK(hits == 7);
}

TEST_CASE("cache: an uncacheable or failed result is not stored; a cancelled leader is not "
          "inherited",
          "[service][cache]") {
  auto c = BlobCache::Open({});
  REQUIRE(c.ok());
  int calls = 0;
  auto partial = [&]() -> absl::StatusOr<BlobCache::Computed> {
    ++calls;
    return BlobCache::Computed{"best so far", /*cacheable=*/false};
  };
  CHECK((*c)->GetOrCompute("p", partial).ok());
  CHECK((*c)->GetOrCompute("p", partial).ok());
  CHECK(calls == 2);
  auto cancelled = [&]() -> absl::StatusOr<BlobCache::Computed> {
    return Error(ErrorKind::kCancelled, "gone");
  };
  CHECK(KindOf((*c)->GetOrCompute("q", cancelled).status()) == ErrorKind::kCancelled);
  CHECK_FALSE((*c)->Get("q").has_value());
}

TEST_CASE("service: a restarted server answers from its warm cache dir", "[service][cache]") {
  const std::string dir = FreshDir("service_restart");
  PlannerServiceOptions po;
  po.cache_dir = dir;
  std::string id;
  v1::PlanResponse first;
  {
    TestServer t(po);
    id = t.UploadToy();
    grpc::ClientContext ctx;
    REQUIRE(t.rpc->Plan(&ctx, ToyPlan(id), &first).ok());
    CHECK_FALSE(first.cache_hit());
    t.server->Shutdown(std::chrono::seconds(1));
  }
  TestServer t(po);  // another process would see the same directory
  // The trace id is known without uploading again, and the plan is cached.
  v1::PlanResponse again;
  grpc::ClientContext ctx;
  grpc::Status s = t.rpc->Plan(&ctx, ToyPlan(id), &again);
  INFO(s.error_message());
  REQUIRE(s.ok());
  CHECK(again.cache_hit());
  CHECK(again.policy() == first.policy());
  v1::GetPolicyRequest g;
  g.set_cache_key(first.cache_key());
  v1::PlanResponse got;
  grpc::ClientContext ctx2;
  REQUIRE(t.rpc->GetPolicy(&ctx2, g, &got).ok());
  CHECK(got.policy() == first.policy());
  CHECK(t.server->service().cache_stats().disk_hits == 1);
}

TEST_CASE("service: concurrent identical Plans plan once", "[service][cache]") {
  TestServer t;
  const std::string id = t.UploadToy();
  std::atomic<int> misses{0};
  std::vector<grpc::Status> statuses(4);  // checked after the joins
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      v1::PlanResponse r;
      grpc::ClientContext ctx;
      statuses[i] = t.rpc->Plan(&ctx, ToyPlan(id), &r);
      if (statuses[i].ok() && !r.cache_hit()) ++misses;
    });
  }
  for (std::thread& th : threads) th.join();
  for (const grpc::Status& s : statuses) CHECK(s.ok());
  CHECK(misses == 1);
}

// A search that runs for `seconds` of wall time (no generation limit).
v1::SearchRequest TimedSearch(const std::string& id, const std::string& seconds) {
  v1::SearchRequest req;
  req.mutable_trace()->set_trace_id(id);
  req.mutable_device()->set_reserve_bytes(100);
  (*req.mutable_options())["max-generations"] = "0";
  (*req.mutable_options())["convergence-generations"] = "0";
  (*req.mutable_options())["time-limit-ns"] = seconds;
  (*req.mutable_options())["population"] = "8";
  (*req.mutable_options())["seed"] = "1";
  return req;
}

// A Search read to its end: its status, the results and progress messages
// seen and the (last) result. No Catch2 assertion: callable from any thread.
struct ReadSearchOutcome {
  grpc::Status status;
  int results = 0;
  int progress = 0;
  v1::SearchResult result;
};
ReadSearchOutcome ReadSearchQuietly(grpc::ClientReaderInterface<v1::SearchUpdate>* reader) {
  ReadSearchOutcome out;
  v1::SearchUpdate u;
  while (reader->Read(&u)) {
    if (u.has_progress()) ++out.progress;
    if (u.has_result()) {
      out.result = u.result();
      ++out.results;
    }
  }
  out.status = reader->Finish();
  return out;
}

// Reads a Search to its end on the test's thread: the result (REQUIREs an
// OK status and one result); adds the progress messages seen to *progress.
v1::SearchResult ReadSearch(grpc::ClientReaderInterface<v1::SearchUpdate>* reader,
                            int* progress) {
  ReadSearchOutcome o = ReadSearchQuietly(reader);
  *progress += o.progress;
  INFO(o.status.error_message());
  REQUIRE(o.status.ok());
  REQUIRE(o.results == 1);
  return o.result;
}

// A 1.5 s search of the toy, running: its first progress message was read.
std::unique_ptr<grpc::ClientReaderInterface<v1::SearchUpdate>> StartSearch(
    TestServer& t, const std::string& id, grpc::ClientContext* ctx) {
  auto reader = t.rpc->Search(ctx, TimedSearch(id, "1500ms"));
  v1::SearchUpdate u;
  REQUIRE(reader->Read(&u));
  REQUIRE(u.has_progress());
  return reader;
}

TEST_CASE("service: concurrent identical Searches search once", "[service][cache]") {
  TestServer t;
  const std::string id = t.UploadToy();
  // The first search runs for 1.5 s; the second, identical, arrives while
  // it runs (after its first progress message) and waits for its answer.
  grpc::ClientContext first_ctx;
  auto first = StartSearch(t, id, &first_ctx);
  ReadSearchOutcome second_outcome;
  std::thread second([&] {
    grpc::ClientContext ctx;
    auto reader = t.rpc->Search(&ctx, TimedSearch(id, "1500ms"));
    second_outcome = ReadSearchQuietly(reader.get());
  });
  int first_progress = 1;
  const v1::SearchResult first_result = ReadSearch(first.get(), &first_progress);
  second.join();
  INFO(second_outcome.status.error_message());
  REQUIRE(second_outcome.status.ok());
  REQUIRE(second_outcome.results == 1);
  const v1::SearchResult& second_result = second_outcome.result;
  const int second_progress = second_outcome.progress;
  // One search ran: the second waited on the first (a shared flight), so
  // without single flight computations_run would be 2 and shared_flights 0.
  CHECK(t.server->service().computations_run() == 1);
  CHECK(t.server->service().cache_stats().shared_flights == 1);
  CHECK_FALSE(first_result.plan().cache_hit());
  CHECK(second_result.plan().cache_hit());
  CHECK(second_progress == 0);  // a waiter streams no progress, then the result
  CHECK(first_progress >= 2);
  // The waiter's answer is the first search's, counts included.
  CHECK(second_result.plan().policy() == first_result.plan().policy());
  CHECK(first_result.stop_reason() == "time limit");
  CHECK(second_result.stop_reason() == "time limit");
  CHECK(first_result.generations() >= 1);
  CHECK(second_result.generations() == first_result.generations());
  CHECK(second_result.evaluations() == first_result.evaluations());
}

TEST_CASE("service: a waiter whose client goes away stops waiting", "[service][cache]") {
  TestServer t;
  const std::string id = t.UploadToy();
  grpc::ClientContext first_ctx;
  auto first = StartSearch(t, id, &first_ctx);
  v1::SearchUpdate u;
  // The second waits on the first; its deadline (300 ms) passes long
  // before the first's answer (1.5 s): it ends on time, DEADLINE_EXCEEDED
  // — or CANCELLED ("gave up waiting") when the server's handler notices
  // the deadline and its status reaches the client before the client's own
  // deadline fires (seen once on a loaded 2-core machine).
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  auto reader = t.rpc->Search(&ctx, TimedSearch(id, "1500ms"));
  while (reader->Read(&u)) {
  }
  const grpc::Status s = reader->Finish();
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("status " << s.error_code() << ": " << s.error_message());
  CHECK((s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         (s.error_code() == grpc::StatusCode::CANCELLED &&
          s.error_message().find("gave up waiting") != std::string::npos)));
  CHECK(waited_s < 1.2);
  int progress = 1;
  CHECK(ReadSearch(first.get(), &progress).stop_reason() == "time limit");
  CHECK(t.server->service().computations_run() == 1);
  // Server side: the waiter's handler ended soon after its deadline
  // (CANCELLED, "gave up waiting"), not when the first search answered.
  bool seen = false;
  for (const RequestLog& r : t.Logs()) {
    if (r.method != "Search" || r.code == grpc::StatusCode::OK) continue;
    seen = true;
    CHECK(r.code == grpc::StatusCode::CANCELLED);
    CHECK(r.message.find("gave up waiting") != std::string::npos);
    CHECK(r.latency_ns < 1'000'000'000);
  }
  CHECK(seen);
}

}  // namespace
}  // namespace swapplan::testing
