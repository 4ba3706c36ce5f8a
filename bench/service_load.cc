// service_load: the load test of the planner service (issue 22) with C++
// clients, loopback only, bounded in count and in time. The same mix as
// scripts/service_load.py (which tests the Python client): it synthesizes
// traces of about 10k, 100k and 1M ops with `swapplan synth` (kept in
// --work-dir; the Python script's traces are reused when there), starts
// `swapplan serve --listen 127.0.0.1:0` (flags through --serve-arg; the port
// is read from its "listening on" line), prepares one plan per trace (budget
// --budget-fraction of its unswapped peak), then runs --clients threads
// (default 16), each with its own channel and TCP connection, each sending
// --requests requests (default 200): Plan, Check and Simulate drawn evenly,
// the trace by --weights (10k 92 %, 100k 7.5 %, 1M 0.5 %), a --repeat
// fraction (half) exact repeats of an earlier request of the same client. A
// new Plan asks for a budget no request asked before (+ a unique multiple of
// 4 KiB: a new cache key, so it plans, 1M-op traces included); a repeated
// Plan is a cache hit. RESOURCE_EXHAUSTED is retried after a capped
// exponential back-off (10 ms .. 0.5 s, jittered) and counted by reason; any
// other error fails the request.
//
//   build/bench/service_load --binary build/swapplan --work-dir /tmp/swapplan-load
//       --time-limit-s 300 --json load-cc.json   (one command line)
//
// Reports (stdout, and --json FILE): throughput; per method p50/p99 of the
// answered attempt and end to end with back-offs, over all sizes and per
// size; the Plan cache hit rate; the cached Plan p50/p99 over all sizes and
// per size; each client thread's own run-queue wait during its cached Plans
// (/proc/self/task/TID/schedstat); a probe (one cached 10k Plan every
// --load-probe-interval-s from a thread of this process); the server's
// threads' run and run-queue time by name over the mixed run; its peak RSS
// (VmHWM); the latencies it logs; a sequential probe of --cached-probe
// cached Plans after the mix with the CPU per call of server and client.
// Exit status: 0; 1 when a request failed, the server did not exit cleanly,
// or its peak RSS passed --max-server-rss-bytes (default 2 GiB); 2 for
// usage errors. Threading model: one thread per client, one probe thread,
// one RSS sampler and one reader of the server's log; they share only the
// address, the prepared budgets and policies (read-only) and the RSS peak
// (atomic). Complexity: O(clients x requests) calls, each O(1) here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "swapplan/service/client.h"
#include "swapplan/util/error.h"
#include "service_load_proc.h"

namespace swapplan::bench {
namespace {

using nlohmann::json;

enum Method : int { kPlan = 0, kCheck = 1, kSimulate = 2 };
constexpr const char* kMethodNames[] = {"Plan", "Check", "Simulate"};
constexpr int kNumSizes = 3;
// Labels and `swapplan synth --micro-batches` of the three traces: 10,404 /
// 100,008 / 996,048 ops (scripts/service_load.py's SIZES).
constexpr const char* kSizeLabels[kNumSizes] = {"10k", "100k", "1M"};
constexpr int kMicroBatches[kNumSizes] = {19, 190, 1900};
// One GPT-2-like rank, 12 layers (scripts/service_load.py's SYNTH_MODEL).
const std::vector<std::string> kSynthModel = {
    "--model", "gpt2", "--layers", "12", "--hidden", "256", "--heads", "4",
    "--ffn", "1024", "--seq", "1024", "--micro-batch", "4"};

struct LoadOptions {
  std::string binary = "build/swapplan";
  std::string work_dir = "/tmp/swapplan-service-load";
  int32_t clients = 16;
  int32_t requests_per_client = 200;
  // Fraction of requests that repeat an earlier one of the same client.
  double repeat_fraction = 0.5;
  // Trace size mix, "10k=W,100k=W,1M=W".
  std::string weights = "10k=0.92,100k=0.075,1M=0.005";
  // Each trace's prepared budget as a fraction of its unswapped peak.
  double budget_fraction = 0.95;
  // No request starts after this many seconds of the mixed run.
  double time_limit_s = 900;
  uint64_t seed = 1;
  std::vector<std::string> serve_args;
  // Sequential cached Plans after the mix (0 = none).
  int32_t cached_probe_calls = 500;
  // The trace of those probes ("" = the smallest of the mix).
  std::string cached_probe_trace;
  // A cached 10k Plan this often during the mix (0 = none).
  double load_probe_interval_s = 0.05;
  // The test fails when the server's peak RSS passes this.
  int64_t max_server_rss_bytes = int64_t{2} << 30;
  std::string json_path;

  // Usage error (kUsage) naming the flag.
  absl::Status Validate() const {
    auto bad = [](const std::string& m) { return Error(ErrorKind::kUsage, m); };
    if (clients < 1 || requests_per_client < 1) return bad("--clients/--requests must be >= 1");
    if (repeat_fraction < 0 || repeat_fraction > 1) return bad("--repeat must be in [0, 1]");
    if (budget_fraction <= 0 || budget_fraction > 1) return bad("--budget-fraction in (0, 1]");
    if (time_limit_s <= 0) return bad("--time-limit-s must be > 0");
    if (cached_probe_calls < 0 || load_probe_interval_s < 0) return bad("probe flags >= 0");
    if (max_server_rss_bytes < 1) return bad("--max-server-rss-bytes must be >= 1");
    return absl::OkStatus();
  }
};

// Weights per size index from "10k=0.92,..."; kUsage on unknown labels.
absl::StatusOr<std::vector<double>> ParseWeights(const std::string& text) {
  std::vector<double> w(kNumSizes, 0.0);
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::vector<std::string> kv = absl::StrSplit(item, '=');
    int at = -1;
    for (int s = 0; s < kNumSizes; ++s) {
      if (kv.size() == 2 && kv[0] == kSizeLabels[s]) at = s;
    }
    if (at < 0 || !absl::SimpleAtod(kv[1], &w[static_cast<size_t>(at)]) || w[at] < 0) {
      return Error(ErrorKind::kUsage, absl::StrCat("--weights: bad item '", item,
                                                   "' (labels 10k, 100k, 1M)"));
    }
  }
  return w;
}

// The trace of size s in work_dir (synthesized when missing; the name is
// the Python script's, so either tool reuses the other's traces).
absl::StatusOr<std::string> SynthTrace(const LoadOptions& o, int s) {
  std::filesystem::create_directories(o.work_dir);
  const std::string path = absl::StrCat(o.work_dir, "/load-", kSizeLabels[s], ".trace");
  if (std::filesystem::exists(path)) return path;
  const std::string tmp = absl::StrCat(path, ".cc.tmp.trace");
  std::vector<std::string> argv = {o.binary, "synth"};
  argv.insert(argv.end(), kSynthModel.begin(), kSynthModel.end());
  for (const std::string& a : {std::string("--micro-batches"), std::to_string(kMicroBatches[s]),
                               std::string("-o"), tmp, std::string("-q")}) {
    argv.push_back(a);
  }
  if (RunCommand(argv) != 0) {
    return Error(ErrorKind::kInternal, absl::StrCat(o.binary, " synth failed for ", path));
  }
  std::filesystem::rename(tmp, path);
  return path;
}

// A client of `address` on its own channel and TCP connection (a local
// subchannel pool: channels with the same arguments do not share one).
std::unique_ptr<PlannerClient> NewClient(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return std::make_unique<PlannerClient>(
      ClientOptions{}, grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                                 args));
}

// What every client reads: per size, the trace bytes, its budget and the
// policy planned for it (empty for sizes of weight 0).
struct Prepared {
  std::vector<std::string> trace_bytes = std::vector<std::string>(kNumSizes);
  std::vector<int64_t> budget_bytes = std::vector<int64_t>(kNumSizes, 0);
  std::vector<std::string> policy = std::vector<std::string>(kNumSizes);
};

// Refusals (RESOURCE_EXHAUSTED) by reason.
using Refusals = std::map<std::string, int64_t>;

// call() until it is not refused with RESOURCE_EXHAUSTED (back-off
// min(10 ms x 2^min(n,6), 0.5 s) x U[0.5, 1.5)), counting each refusal;
// gives up after 200 refusals or at the deadline with the last refusal.
template <typename Call>
absl::Status WithRetries(Call&& call, Clock::time_point deadline, std::mt19937_64& rng,
                         Refusals& refusals) {
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  for (int n = 1;; ++n) {
    absl::Status s = call();
    if (KindOf(s) != ErrorKind::kResourceLimit) return s;
    const std::string msg(s.message());
    ++refusals[absl::StrContains(msg, "--max-concurrent-plans") ? "--max-concurrent-plans" : msg];
    if (n >= 200 || Clock::now() > deadline) return s;
    const double backoff_s = std::min(0.01 * static_cast<double>(1 << std::min(n, 6)), 0.5);
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff_s * jitter(rng)));
  }
}

v1::PlanRequest PlanRequestFor(const std::string& trace_id, int64_t budget_bytes) {
  v1::PlanRequest req;
  req.mutable_trace()->set_trace_id(trace_id);
  req.mutable_device()->set_capacity_bytes(budget_bytes);
  req.set_planner("chameleon");
  return req;
}

struct Request {
  Method method = kPlan;
  int size = 0;
  int64_t budget_offset_bytes = 0;
};

// One client's requests (scripts/service_load.py's make_requests, with C++'s
// generator: the same mix, not the same draws).
std::vector<Request> MakeRequests(int client, int n, double repeat,
                                  const std::vector<double>& weights, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(client));
  std::uniform_real_distribution<double> u(0, 1);
  std::discrete_distribution<int> size(weights.begin(), weights.end());
  std::vector<Request> out;
  for (int k = 0; k < n; ++k) {
    if (!out.empty() && u(rng) < repeat) {
      out.push_back(out[std::uniform_int_distribution<size_t>(0, out.size() - 1)(rng)]);
      continue;
    }
    Request r;
    r.method = static_cast<Method>(std::uniform_int_distribution<int>(0, 2)(rng));
    r.size = size(rng);
    // A new Plan: a budget no request asked for before (a new cache key).
    if (r.method == kPlan) r.budget_offset_bytes = int64_t{client * n + k + 1} * 4096;
    out.push_back(r);
  }
  return out;
}

struct Record {
  Method method = kPlan;
  int size = 0;
  bool ok = false;
  bool cache_hit = false;
  double latency_ms = 0;      // the answered attempt
  double end_to_end_ms = 0;   // with refusals and back-offs
  double run_queue_wait_ms = 0;  // this thread's, over the request
  std::string error;
};

struct ClientResult {
  std::vector<Record> records;
  std::vector<std::pair<int, double>> uploads_ms;  // (size, ms)
  Refusals refusals;
};

// One client thread: its requests in order, uploading each trace on first use.
void RunClient(const std::string& address, const Prepared& prep, const std::vector<Request>& reqs,
               int client, Clock::time_point deadline, ClientResult& out) {
  std::unique_ptr<PlannerClient> c = NewClient(address);
  std::mt19937_64 rng(static_cast<uint64_t>(client));
  std::vector<std::string> ids(kNumSizes);
  for (const Request& r : reqs) {
    if (Clock::now() > deadline) break;
    Record rec;
    rec.method = r.method;
    rec.size = r.size;
    absl::Status s;
    if (ids[r.size].empty()) {
      const auto t0 = Clock::now();
      s = WithRetries([&]() -> absl::Status {
            absl::StatusOr<std::string> id = c->UploadTrace(prep.trace_bytes[r.size], "load");
            if (id.ok()) ids[r.size] = *id;
            return id.status();
          }, deadline, rng, out.refusals);
      out.uploads_ms.emplace_back(r.size, Seconds(Clock::now() - t0) * 1e3);
    }
    const auto start = Clock::now();
    auto last = start;
    const int64_t wait0 = OwnRunQueueWaitNs();
    if (s.ok()) {
      s = WithRetries([&]() -> absl::Status {
            last = Clock::now();
            if (r.method == kPlan) {
              auto a = c->Plan(PlanRequestFor(ids[r.size],
                                              prep.budget_bytes[r.size] + r.budget_offset_bytes));
              if (a.ok()) rec.cache_hit = a->cache_hit();
              return a.status();
            }
            if (r.method == kCheck) {
              v1::CheckRequest q;
              q.mutable_trace()->set_trace_id(ids[r.size]);
              q.set_policy(prep.policy[r.size]);
              return c->Check(q).status();
            }
            v1::SimulateRequest q;
            q.mutable_trace()->set_trace_id(ids[r.size]);
            q.set_policy(prep.policy[r.size]);
            return c->Simulate(q).status();
          }, deadline, rng, out.refusals);
    }
    const auto now = Clock::now();
    rec.run_queue_wait_ms = static_cast<double>(OwnRunQueueWaitNs() - wait0) / 1e6;
    rec.ok = s.ok();
    if (!s.ok()) rec.error = std::string(s.message());
    rec.latency_ms = Seconds(now - last) * 1e3;
    rec.end_to_end_ms = Seconds(now - start) * 1e3;
    out.records.push_back(std::move(rec));
  }
}

// Per size: the unswapped peak (Simulate without a policy), the budget and
// a policy planned for it (the cache's first entry per trace).
absl::Status Prepare(const LoadOptions& o, const std::string& address,
                     const std::vector<std::string>& paths, Prepared& prep) {
  std::unique_ptr<PlannerClient> c = NewClient(address);
  for (int s = 0; s < kNumSizes; ++s) {
    if (paths[s].empty()) continue;
    absl::StatusOr<std::string> bytes = ReadFile(paths[s]);
    if (!bytes.ok()) return bytes.status();
    prep.trace_bytes[s] = *std::move(bytes);
    absl::StatusOr<std::string> id = c->UploadTrace(prep.trace_bytes[s], paths[s]);
    if (!id.ok()) return id.status();
    v1::SimulateRequest sim;
    sim.mutable_trace()->set_trace_id(*id);
    absl::StatusOr<v1::SimulateResponse> peak = c->Simulate(sim);
    if (!peak.ok()) return peak.status();
    prep.budget_bytes[s] =
        static_cast<int64_t>(static_cast<double>(peak->peak_bytes()) * o.budget_fraction);
    absl::StatusOr<v1::PlanResponse> plan = c->Plan(PlanRequestFor(*id, prep.budget_bytes[s]));
    if (!plan.ok()) return plan.status();
    prep.policy[s] = plan->policy();
  }
  return absl::OkStatus();
}

// A cached Plan of `size` every interval during the mix, from a thread of
// this process that does nothing else: latency and own run-queue wait (ms).
class LoadProbe {
 public:
  LoadProbe(const std::string& address, const Prepared& prep, int size, double interval_s)
      : client_(NewClient(address)), interval_s_(interval_s) {
    absl::StatusOr<std::string> id = client_->UploadTrace(prep.trace_bytes[size], "probe");
    ok_ = id.ok();
    if (ok_) request_ = PlanRequestFor(*id, prep.budget_bytes[size]);
    if (ok_) ok_ = client_->Plan(request_).ok();
  }
  void Start() {
    if (ok_) thread_ = std::thread([this] { Run(); });
  }
  json Finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    const size_t n = latency_ms_.size();
    return {{"count", n}, {"misses_or_errors", misses_}, {"p50_ms", Round(Percentile(latency_ms_, 50))},
            {"p99_ms", Round(Percentile(latency_ms_, 99))},
            {"max_ms", n ? json(Round(*std::max_element(latency_ms_.begin(), latency_ms_.end())))
                         : json(nullptr)},
            {"client_run_queue_wait_p50_ms", Round(Percentile(wait_ms_, 50))},
            {"client_run_queue_wait_p99_ms", Round(Percentile(wait_ms_, 99))},
            {"interval_s", interval_s_}};
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [&] { return stop_; })) {
      lock.unlock();
      const int64_t w0 = OwnRunQueueWaitNs();
      const auto t0 = Clock::now();
      absl::StatusOr<v1::PlanResponse> r = client_->Plan(request_);
      const double ms = Seconds(Clock::now() - t0) * 1e3;
      const double wait_ms = static_cast<double>(OwnRunQueueWaitNs() - w0) / 1e6;
      lock.lock();
      latency_ms_.push_back(ms);
      wait_ms_.push_back(wait_ms);
      if (!r.ok() || !r->cache_hit()) ++misses_;
    }
  }

  std::unique_ptr<PlannerClient> client_;
  v1::PlanRequest request_;
  double interval_s_;
  bool ok_ = false;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<double> latency_ms_, wait_ms_;
  int64_t misses_ = 0;
};

// n sequential cached Plans by one client after the mix: p50/p99 and the CPU
// per call of the server (utime + stime of /proc/PID/stat: every thread,
// those gRPC ended meanwhile included; 10 ms ticks, so +-10 ms over the n
// calls) and of this process (CLOCK_PROCESS_CPUTIME_ID: the client,
// protobuf, gRPC's threads).
json CachedProbe(const std::string& address, const Prepared& prep, int size, int n, pid_t server) {
  std::unique_ptr<PlannerClient> c = NewClient(address);
  absl::StatusOr<std::string> id = c->UploadTrace(prep.trace_bytes[size], "probe");
  if (!id.ok()) return {{"error", std::string(id.status().message())}};
  const v1::PlanRequest req = PlanRequestFor(*id, prep.budget_bytes[size]);
  (void)c->Plan(req);
  auto sum_run = [&] { return ProcessCpuNs(server); };
  auto cpu_ns = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  };
  std::vector<double> ms;
  int64_t misses = 0;
  const int64_t server0 = sum_run(), client0 = cpu_ns();
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    absl::StatusOr<v1::PlanResponse> r = c->Plan(req);
    ms.push_back(Seconds(Clock::now() - t0) * 1e3);
    if (!r.ok() || !r->cache_hit()) ++misses;
  }
  const double client_ms = static_cast<double>(cpu_ns() - client0) / n / 1e6;
  const double server_ms = static_cast<double>(sum_run() - server0) / n / 1e6;
  return {{"count", n}, {"misses_or_errors", misses}, {"p50_ms", Round(Percentile(ms, 50))},
          {"p99_ms", Round(Percentile(ms, 99))}, {"server_cpu_per_call_ms", Round(server_ms, 4)},
          {"client_cpu_per_call_ms", Round(client_ms, 4)}, {"trace", kSizeLabels[size]}};
}

json Summarize(const std::vector<ClientResult>& results, double wall_s, int64_t peak_rss_bytes,
               const LoadOptions& o) {
  std::vector<const Record*> done;
  std::vector<std::string> failures;
  size_t issued = 0;
  json refused = json::object();
  for (const ClientResult& r : results) {
    for (const Record& rec : r.records) {
      ++issued;
      if (rec.ok) done.push_back(&rec);
      else if (failures.size() < 10) failures.push_back(rec.error);
    }
    for (const auto& [reason, n] : r.refusals) {
      refused[reason] = refused.value(reason, int64_t{0}) + n;
    }
  }
  json out = {{"client", "C++ (bench/service_load)"}, {"clients", o.clients},
              {"requests_per_client", o.requests_per_client}, {"requests_issued", issued},
              {"requests_ok", done.size()}, {"failed", issued - done.size()},
              {"failures", failures}, {"refused_resource_exhausted", refused},
              {"wall_s", Round(wall_s, 2)},
              {"throughput_per_s", Round(static_cast<double>(done.size()) / wall_s, 2)},
              {"server_peak_rss_bytes", peak_rss_bytes},
              {"max_server_rss_bytes", o.max_server_rss_bytes}};
  json methods = json::object();
  for (int m = 0; m < 3; ++m) {
    for (int s = -1; s < kNumSizes; ++s) {
      std::vector<double> lat, e2e;
      for (const Record* r : done) {
        if (r->method == m && (s < 0 || r->size == s)) {
          lat.push_back(r->latency_ms);
          e2e.push_back(r->end_to_end_ms);
        }
      }
      if (lat.empty()) continue;
      methods[absl::StrCat(kMethodNames[m], "/", s < 0 ? "all" : kSizeLabels[s])] = {
          {"count", lat.size()}, {"p50_ms", Round(Percentile(lat, 50), 2)},
          {"p99_ms", Round(Percentile(lat, 99), 2)},
          {"end_to_end_p50_ms", Round(Percentile(e2e, 50), 2)},
          {"end_to_end_p99_ms", Round(Percentile(e2e, 99), 2)}};
    }
  }
  out["methods"] = methods;
  std::vector<double> hits, waits;
  size_t plans = 0;
  json by_size = json::object();
  for (int s = 0; s < kNumSizes; ++s) {
    std::vector<double> size_hits;
    size_t computed = 0;
    for (const Record* r : done) {
      if (r->method != kPlan || r->size != s) continue;
      ++plans;
      if (!r->cache_hit) {
        ++computed;
        continue;
      }
      size_hits.push_back(r->latency_ms);
      hits.push_back(r->latency_ms);
      waits.push_back(r->run_queue_wait_ms);
    }
    if (computed + size_hits.size() == 0) continue;
    by_size[kSizeLabels[s]] = {{"computed", computed}, {"cache_hits", size_hits.size()},
                               {"cache_hit_p50_ms", Round(Percentile(size_hits, 50), 2)},
                               {"cache_hit_p99_ms", Round(Percentile(size_hits, 99), 2)}};
  }
  out["plans_by_size"] = by_size;
  out["plan_cache_hit_rate"] =
      plans ? Round(static_cast<double>(hits.size()) / static_cast<double>(plans)) : json(nullptr);
  out["cached_plan_p50_ms"] = Round(Percentile(hits, 50), 2);
  out["cached_plan_p99_ms"] = Round(Percentile(hits, 99), 2);
  out["cached_plan_client_run_queue_wait_p50_ms"] = Round(Percentile(waits, 50), 2);
  out["cached_plan_client_run_queue_wait_p99_ms"] = Round(Percentile(waits, 99), 2);
  json uploads = json::object();
  for (int s = 0; s < kNumSizes; ++s) {
    std::vector<double> v;
    for (const ClientResult& r : results) {
      for (const auto& [size, ms] : r.uploads_ms) {
        if (size == s) v.push_back(ms);
      }
    }
    if (!v.empty()) uploads[kSizeLabels[s]] = {{"count", v.size()}, {"p50_ms", Round(Percentile(v, 50), 2)}};
  }
  out["uploads"] = uploads;
  return out;
}

int Run(const LoadOptions& o) {
  absl::StatusOr<std::vector<double>> weights = ParseWeights(o.weights);
  if (absl::Status s = weights.ok() ? o.Validate() : weights.status(); !s.ok()) {
    std::cerr << "service_load: " << s.message() << "\n";
    return 2;
  }
  const auto t_prep = Clock::now();
  std::vector<std::string> paths(kNumSizes);
  int smallest = -1;
  for (int s = 0; s < kNumSizes; ++s) {
    if ((*weights)[s] <= 0) continue;
    absl::StatusOr<std::string> p = SynthTrace(o, s);
    if (!p.ok()) {
      std::cerr << "service_load: " << p.status().message() << "\n";
      return 1;
    }
    paths[s] = *p;
    if (smallest < 0) smallest = s;
  }
  int probe_size = smallest;
  for (int s = 0; s < kNumSizes; ++s) {
    if (o.cached_probe_trace == kSizeLabels[s]) probe_size = s;
  }
  if (!o.cached_probe_trace.empty() &&
      (probe_size < 0 || o.cached_probe_trace != kSizeLabels[probe_size] || paths[probe_size].empty())) {
    std::cerr << "service_load: --cached-probe-trace " << o.cached_probe_trace
              << " is not a size of --weights with a weight > 0\n";
    return 2;
  }
  if (smallest < 0) {
    std::cerr << "service_load: --weights gives every size weight 0\n";
    return 2;
  }
  Server server;
  Prepared prep;
  absl::Status up = server.Start(o.binary, o.work_dir, o.serve_args);
  if (up.ok()) up = Prepare(o, server.address(), paths, prep);
  if (!up.ok()) {
    std::cerr << "service_load: " << up.message() << "\n";
    server.Stop();
    return 1;
  }
  const std::string address = server.address();
  std::cerr << "service_load: server at " << address << ", prepared in "
            << Seconds(Clock::now() - t_prep) << " s\n";
  std::vector<std::vector<Request>> requests;
  for (int c = 0; c < o.clients; ++c) {
    requests.push_back(MakeRequests(c, o.requests_per_client, o.repeat_fraction, *weights, o.seed));
  }
  std::atomic<int64_t> peak_rss_kib{StatusKib(server.pid(), "VmHWM")};
  std::atomic<bool> stop_sampler{false};
  std::thread sampler([&] {
    while (!stop_sampler.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t kib = StatusKib(server.pid(), "VmHWM");
      if (kib > peak_rss_kib.load()) peak_rss_kib.store(kib);
    }
  });
  std::optional<LoadProbe> probe;
  if (o.load_probe_interval_s > 0) {
    probe.emplace(address, prep, smallest, o.load_probe_interval_s);
  }
  const double load_before = LoadAverage1();
  std::vector<ClientResult> results(static_cast<size_t>(o.clients));
  std::vector<std::thread> clients;
  const auto threads_before = ServerThreads(server.pid());
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(o.time_limit_s));
  if (probe) probe->Start();
  for (int c = 0; c < o.clients; ++c) {
    clients.emplace_back([&, c] {
      RunClient(address, prep, requests[c], c, deadline, results[c]);
    });
  }
  for (std::thread& t : clients) t.join();
  const double wall_s = Seconds(Clock::now() - t0);
  const auto threads_after = ServerThreads(server.pid());
  json during = probe ? probe->Finish() : json(nullptr);
  stop_sampler.store(true);
  sampler.join();
  peak_rss_kib.store(std::max(peak_rss_kib.load(), StatusKib(server.pid(), "VmHWM")));
  json summary = Summarize(results, wall_s, peak_rss_kib.load() * 1024, o);
  summary["load_average_1m_before"] = load_before;
  summary["load_average_1m_after"] = LoadAverage1();
  summary["server_threads_during_load"] = ThreadDeltas(threads_before, threads_after);
  if (!during.is_null()) {
    during["trace"] = kSizeLabels[smallest];
    summary["cached_plan_probe_during_load"] = during;
  }
  if (o.cached_probe_calls > 0) {
    summary["cached_plan_probe"] =
        CachedProbe(address, prep, probe_size, o.cached_probe_calls, server.pid());
  }
  json budgets = json::object();
  for (int s = 0; s < kNumSizes; ++s) {
    if (!paths[s].empty()) budgets[kSizeLabels[s]] = prep.budget_bytes[s];
  }
  summary["budgets"] = budgets;
  summary["weights"] = o.weights;
  summary["repeat"] = o.repeat_fraction;
  summary["serve_args"] = o.serve_args;
  summary["seed"] = o.seed;
  summary["time_limit_s"] = o.time_limit_s;
  const int rc = server.Stop();
  summary["server_exit_status"] = rc;
  summary["server_side_latency"] = ServerSide(o.work_dir + "/serve.log");
  const bool rss_over = summary["server_peak_rss_bytes"].get<int64_t>() > o.max_server_rss_bytes;
  summary["server_rss_over_bound"] = rss_over;
  std::cout << summary.dump(1) << std::endl;
  if (!o.json_path.empty()) std::ofstream(o.json_path) << summary.dump(1) << "\n";
  if (rss_over) {
    std::cerr << "service_load: server peak RSS " << summary["server_peak_rss_bytes"]
              << " bytes is over --max-server-rss-bytes " << o.max_server_rss_bytes << "\n";
  }
  return summary["failed"].get<size_t>() > 0 || rc != 0 || rss_over ? 1 : 0;
}

}  // namespace
}  // namespace swapplan::bench

int main(int argc, char** argv) {
  swapplan::bench::LoadOptions o;
  CLI::App app{"Load test of the planner service (issue 22): C++ clients, loopback only"};
  app.add_option("--binary", o.binary, "the swapplan command");
  app.add_option("--work-dir", o.work_dir, "traces (reused) and serve.log");
  app.add_option("--clients", o.clients, "client threads, each with its own channel");
  app.add_option("--requests", o.requests_per_client, "requests per client");
  app.add_option("--repeat", o.repeat_fraction, "fraction of exact repeats");
  app.add_option("--weights", o.weights, "trace size mix (labels 10k, 100k, 1M)");
  app.add_option("--budget-fraction", o.budget_fraction, "budget / unswapped peak");
  app.add_option("--time-limit-s", o.time_limit_s, "no request starts after this");
  app.add_option("--seed", o.seed, "request mix seed");
  app.add_option("--serve-arg", o.serve_args, "a flag for swapplan serve (repeat), "
                                              "e.g. --serve-arg=--compute-sched=idle");
  app.add_option("--cached-probe", o.cached_probe_calls, "sequential cached Plans after the mix");
  app.add_option("--cached-probe-trace", o.cached_probe_trace,
                 "their trace: 10k, 100k or 1M (default the smallest of --weights)");
  app.add_option("--load-probe-interval-s", o.load_probe_interval_s,
                 "a cached Plan this often during the mix (0 = none)");
  app.add_option("--max-server-rss-bytes", o.max_server_rss_bytes,
                 "fail when the server's peak RSS passes this (default 2 GiB)");
  app.add_option("--json", o.json_path, "write the summary here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return swapplan::bench::Run(o);
}
