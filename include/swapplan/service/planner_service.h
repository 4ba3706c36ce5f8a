// PlannerService: the gRPC service swapplan.v1.Planner
// (proto/planner_service.proto, docs/service.md) — traces uploaded in
// chunks, plans / searches / checks / simulations / comparisons through the
// library's own entry points (service/requests.h), a cache of plans, limits,
// bearer-token authentication and one log record per request.
//
//   PlannerServiceOptions o;
//   o.cache_dir = "/var/cache/swapplan";
//   SWAPPLAN_ASSIGN_OR_RETURN(auto service, PlannerService::Create(o, [](const RequestLog& r) {
//     std::cerr << FormatRequestLog(r) << "\n";
//   }));
//   grpc::ServerBuilder b;  b.RegisterService(service.get());  ...
//   (or service/server.h, which does all of that)
//
// Error mapping (GrpcStatus): the ErrorKind of the library's status picks
// the gRPC code (kMalformedInput, kUsage -> INVALID_ARGUMENT; kNotFound ->
// NOT_FOUND; kFingerprintMismatch -> FAILED_PRECONDITION; kInfeasible ->
// OUT_OF_RANGE; kResourceLimit -> RESOURCE_EXHAUSTED; kDeadlineExceeded ->
// DEADLINE_EXCEEDED; kCancelled -> CANCELLED; kUnavailable -> UNAVAILABLE;
// kQualityRegression -> ABORTED; kInternal -> INTERNAL), the message is the
// library's, and trailing metadata `swapplan-error-kind` carries
// ErrorKindName.
//
// Limits: an upload (or inline trace) over max_trace_bytes is refused with
// RESOURCE_EXHAUSTED as soon as its bytes pass the limit (the rest is never
// read); at most max_concurrent_plans computing calls (Plan and Search
// misses, Check, Simulate, Compare) run at once, more are refused with
// RESOURCE_EXHAUSTED at once (not queued: the client backs off and retries,
// or another replica takes it). A Search, or a Plan with the advisor, stops
// shortly before the request's deadline and answers its best policy so far
// (best_so_far = true, never cached); every call ends CANCELLED when the
// client goes away (searches stop at their next evaluation).
//
// Single flight: concurrent identical Plans, and concurrent identical
// Searches, compute once (the cache key of Plan, planner "advisor" for a
// Search); the others wait for that answer (a waiting Search streams no
// progress, then the result), and give up waiting when their own client goes
// away or their deadline passes.
//
// Threading model: the gRPC synchronous server calls the handlers on its
// own thread pool, any number at once. Shared state is the TraceStore and
// the BlobCache (each thread-safe, see their headers), an atomic count of
// running computations and the log sink, which is called on the handler's
// thread and must be thread-safe itself. Computations (Plan and Search
// misses, Check, Simulate, Compare) run on the service's own
// max_concurrent_plans threads at a lower CPU priority
// (compute_scheduling, compute_nice_increment) while the handler's thread waits; cache hits,
// uploads and GetPolicy are answered on the handler's thread and never wait
// for a computation (service/compute_pool.h); an uploaded or inline trace's
// hashing and parsing run on 2 more threads at the computations' priority
// (ingest_).
#ifndef SWAPPLAN_SERVICE_PLANNER_SERVICE_H_
#define SWAPPLAN_SERVICE_PLANNER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner_service.grpc.pb.h"
#include "swapplan/service/cache.h"
#include "swapplan/service/trace_store.h"

namespace swapplan {
namespace service {
class ComputePool;
}

struct PlannerServiceOptions {
  // Most bytes of one trace, uploaded or inline (1 GiB).
  int64_t max_trace_bytes = int64_t{1} << 30;
  // Most computing calls at once; more are RESOURCE_EXHAUSTED.
  int32_t max_concurrent_plans = 4;
  // How the computing threads (and an upload's parsing) run below gRPC's
  // threads, so that cache hits get a core first: kIdle puts them in
  // SCHED_IDLE (a core only when no thread of normal priority wants it; a
  // waking gRPC thread preempts them at once; the nice increment is unused),
  // kNice lowers them by compute_nice_increment (a smaller share of a busy
  // core, but a share: use it on a host whose other work could keep every
  // core busy, where SCHED_IDLE computations would wait indefinitely).
  // Neither needs a privilege. docs/service.md, "SCHED_IDLE or nice 10".
  enum class ComputeScheduling : uint8_t { kNice = 0, kIdle = 1 };
  ComputeScheduling compute_scheduling = ComputeScheduling::kIdle;
  // How much lower (a nice increment, 0..19) the computing threads run than
  // gRPC's threads under kNice.
  int32_t compute_nice_increment = 10;
  // Persistent cache of plans and uploaded traces; "" = memory only.
  std::string cache_dir;
  // Bounds of the plan cache (BlobCacheOptions) and of parsed traces.
  int64_t max_cache_memory_bytes = int64_t{256} << 20;
  int64_t max_cache_disk_bytes = int64_t{4} << 30;
  int64_t max_trace_memory_bytes = int64_t{4} << 30;
  // Every call must carry `authorization: Bearer <token>`; "" = no token.
  std::string token;
  // A search stops this long before the request's deadline, so that its
  // check, simulation and answer still arrive in time.
  int64_t deadline_margin_ns = 50'000'000;

  // InvalidArgument (kUsage) naming the field: a bound < 1, a negative
  // margin.
  absl::Status Validate() const;
};

// One record per call, for the serve command's log.
struct RequestLog {
  std::string method;      // "Plan", "UploadTrace", ...
  std::string trace_id;    // "" when the call named none
  std::string peer;
  int64_t request_bytes = 0;   // uploaded / inline trace bytes + request message
  int64_t response_bytes = 0;
  int64_t latency_ns = 0;
  // CPU time of the handler's thread over the call (CLOCK_THREAD_CPUTIME_ID):
  // a cache hit's whole answer but for gRPC's reading of the request and
  // writing of the response; a computation runs on the computing pool and
  // is not in it.
  int64_t handler_cpu_ns = 0;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;     // error message; "" when OK
  bool cache_hit = false;
};
using RequestLogSink = std::function<void(const RequestLog&)>;

// One line: `method=Plan trace=ab12.. bytes_in=.. bytes_out=.. latency_us=..
// status=OK cache=hit cpu_us=.. peer=..` (values with spaces quoted).
std::string FormatRequestLog(const RequestLog& r);

// The gRPC code for a library status (the mapping above).
grpc::StatusCode GrpcCodeFor(const absl::Status& status);

class PlannerService final : public v1::Planner::Service {
 public:
  // InvalidArgument for bad options; Internal when the cache directory
  // cannot be created.
  static absl::StatusOr<std::unique_ptr<PlannerService>> Create(PlannerServiceOptions options,
                                                                RequestLogSink log);

  grpc::Status UploadTrace(grpc::ServerContext* ctx,
                           grpc::ServerReader<v1::UploadTraceRequest>* reader,
                           v1::UploadTraceResponse* response) override;
  grpc::Status Plan(grpc::ServerContext* ctx, const v1::PlanRequest* request,
                    v1::PlanResponse* response) override;
  grpc::Status Search(grpc::ServerContext* ctx, const v1::SearchRequest* request,
                      grpc::ServerWriter<v1::SearchUpdate>* writer) override;
  grpc::Status Check(grpc::ServerContext* ctx, const v1::CheckRequest* request,
                     v1::CheckResponse* response) override;
  grpc::Status Simulate(grpc::ServerContext* ctx, const v1::SimulateRequest* request,
                        v1::SimulateResponse* response) override;
  grpc::Status Compare(grpc::ServerContext* ctx, const v1::CompareRequest* request,
                       v1::CompareResponse* response) override;
  grpc::Status GetPolicy(grpc::ServerContext* ctx, const v1::GetPolicyRequest* request,
                         v1::PlanResponse* response) override;

  BlobCacheStats cache_stats() const { return cache_->stats(); }
  // Computations run (planner runs, searches, checks, simulations,
  // comparisons): what single flight saves shows here.
  int64_t computations_run() const;

  PlannerService(PlannerServiceOptions options, RequestLogSink log);
  ~PlannerService() override;

 private:
  class Call;
  class Slot;
  // What Plan and Search ask for.
  struct PlanQuery {
    const v1::TraceRef* trace = nullptr;
    int32_t iteration = 0;
    const v1::DeviceSpec* device = nullptr;
    std::string planner;  // "" = chameleon
    std::map<std::string, std::string> options;
    bool skip_cache = false;
    bool policy_as_json = false;
  };
  using ProgressSink = std::function<void(const v1::SearchProgress&)>;
  // A handler's work: fills the response, returns its size in bytes.
  using CallBody = std::function<absl::StatusOr<int64_t>(Call&)>;

  absl::StatusOr<std::shared_ptr<const StoredTrace>> ResolveTrace(const v1::TraceRef& ref,
                                                                  Call* call);
  // An uploaded or inline trace's hash, parse and fingerprints
  // (TraceStore::Add) on ingest_, at the computations' priority; logs its id.
  absl::StatusOr<std::shared_ptr<const StoredTrace>> Ingest(const std::string& name,
                                                            const std::string& bytes, Call* call);
  // One call: authentication, the request's size, `body`, the log record
  // and the status mapping.
  grpc::Status Serve(grpc::ServerContext* ctx, const char* method,
                     const google::protobuf::Message& request, const CallBody& body);
  // `work` on the trace of `ref`, in one of max_concurrent_plans slots on a
  // computing thread (RESOURCE_EXHAUSTED when none is free).
  template <typename T>
  absl::StatusOr<T> Compute(Call& call, const v1::TraceRef& ref,
                            const std::function<absl::StatusOr<T>(const Trace&)>& work);
  // The answer behind Plan and Search (cache, single flight, limits,
  // deadline): the PlanResponse and, for a search, its stop reason,
  // generations and evaluations.
  absl::StatusOr<v1::SearchResult> PlanCached(grpc::ServerContext* ctx, Call* call,
                                              const PlanQuery& query,
                                              const ProgressSink& progress);

  const PlannerServiceOptions options_;
  const RequestLogSink log_;
  std::unique_ptr<TraceStore> traces_;
  std::unique_ptr<BlobCache> cache_;
  std::unique_ptr<service::ComputePool> compute_;
  // An uploaded trace's hash, parse and fingerprints (O(bytes): about 0.3 s
  // of CPU for 100 MB) run here, at the computations' priority, so that an
  // upload does not take a core from the handlers answering cache hits.
  // Its own threads: an upload never waits behind a computation.
  std::unique_ptr<service::ComputePool> ingest_;
  std::atomic<int32_t> running_{0};
};

}  // namespace swapplan

#endif  // SWAPPLAN_SERVICE_PLANNER_SERVICE_H_
