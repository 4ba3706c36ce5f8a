// PlannerService's planning calls: Plan, Search, Check, Simulate, Compare,
// GetPolicy (UploadTrace and the plumbing are in planner_service.cc).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "service/call.h"
#include "service/requests.h"
#include "swapplan/service/planner_service.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

using SystemClock = std::chrono::system_clock;

std::map<std::string, std::string> OptionMap(
    const google::protobuf::Map<std::string, std::string>& m) {
  return std::map<std::string, std::string>(m.begin(), m.end());
}

v1::SearchProgress ToProto(const GenerationStats& g) {
  v1::SearchProgress p;
  p.set_generation(g.generation);
  p.set_elapsed_ns(g.elapsed_ns);
  p.set_best_ns(g.best_ns);
  p.set_mean_ns(g.mean_ns);
  p.set_worst_ns(g.worst_ns);
  p.set_best_ever_ns(g.best_ever_ns);
  p.set_feasible(g.feasible);
  p.set_population(g.population);
  p.set_evaluations(g.evaluations);
  p.set_evaluations_per_s(g.evaluations_per_s);
  return p;
}

// Whether the client went away, asked from the advisor's evaluation threads:
// one of them at a time asks gRPC (a completion-queue pluck, which admits
// few concurrent callers), the others read the last answer.
class CancelWatch {
 public:
  explicit CancelWatch(grpc::ServerContext* ctx) : ctx_(ctx) {}
  bool Cancelled() {
    if (cancelled_.load(std::memory_order_acquire)) return true;
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (lock.owns_lock() && ctx_->IsCancelled()) cancelled_.store(true, std::memory_order_release);
    return cancelled_.load(std::memory_order_acquire);
  }

 private:
  grpc::ServerContext* ctx_;
  std::mutex mu_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

absl::StatusOr<v1::PlanResponse> PlannerService::PlanCached(
    grpc::ServerContext* ctx, Call* call, const v1::TraceRef& trace_ref,
    int32_t iteration, const v1::DeviceSpec& spec, const std::string& planner,
    const std::map<std::string, std::string>& options, bool skip_cache,
    const std::function<void(const v1::SearchProgress&)>& progress, std::string* stop_reason) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::shared_ptr<const StoredTrace> stored,
                            ResolveTrace(trace_ref, call));
  const Trace& trace = stored->trace;
  SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel device,
                            service::ResolveDeviceSpec(spec, trace, /*need_capacity=*/true));
  const std::string name = planner.empty() ? "chameleon" : planner;
  // One key for Plan and Search: a search is the advisor's plan.
  const std::string key = service::PlanCacheKey("plan", stored->id, iteration, device, name, options);

  // The request's deadline: a search stops a margin before it (10% of the
  // time left, at least deadline_margin_ns) to check, simulate and answer.
  const SystemClock::time_point deadline = ctx->deadline();
  const SystemClock::time_point now = SystemClock::now();
  const bool timed = deadline < now + std::chrono::hours(24 * 365);
  if (timed && deadline <= now) {
    return Error(ErrorKind::kDeadlineExceeded, "the deadline passed before planning started");
  }
  SystemClock::time_point stop_at = SystemClock::time_point::max();
  if (timed) {
    const auto left = deadline - now;
    stop_at = deadline - std::max<SystemClock::duration>(
                             left / 10, std::chrono::nanoseconds(options_.deadline_margin_ns));
  }
  auto compute = [&]() -> absl::StatusOr<BlobCache::Computed> {
    Slot slot(this);
    SWAPPLAN_RETURN_IF_ERROR(slot.status());
    service::PlanHooks hooks;
    auto watch = std::make_shared<CancelWatch>(ctx);
    hooks.stop = [watch, timed, stop_at] {
      return (timed && SystemClock::now() >= stop_at) || watch->Cancelled();
    };
    if (progress) hooks.progress = [&](const GenerationStats& g) { progress(ToProto(g)); };
    SWAPPLAN_ASSIGN_OR_RETURN(service::PlanOutcome outcome,
                              service::RunPlan(trace, iteration, device, name, options, hooks));
    if (ctx->IsCancelled()) {
      return Error(ErrorKind::kCancelled, "the client went away while planning");
    }
    const bool stopped = outcome.stop_reason == "stopped";
    if (stop_reason != nullptr) *stop_reason = stopped ? "deadline" : outcome.stop_reason;
    outcome.response.set_best_so_far(stopped);
    outcome.response.set_cache_key(key);
    return BlobCache::Computed{outcome.response.SerializeAsString(), !stopped};
  };
  bool hit = false;
  absl::StatusOr<std::string> bytes;
  if (skip_cache) {
    absl::StatusOr<BlobCache::Computed> c = compute();
    if (!c.ok()) return c.status();
    if (c->cacheable) cache_->Put(key, c->value).IgnoreError();
    bytes = std::move(c->value);
  } else {
    bytes = cache_->GetOrCompute(key, compute, &hit);
  }
  if (!bytes.ok()) return bytes.status();
  v1::PlanResponse r;
  if (!r.ParseFromString(*bytes)) {
    return Error(ErrorKind::kInternal, absl::StrCat("cache entry ", key, " is corrupt"));
  }
  r.set_cache_hit(hit);
  if (hit) {
    r.set_plan_time_ns(0);
    if (stop_reason != nullptr) *stop_reason = "cached";
  }
  call->log().cache_hit = hit;
  return r;
}

grpc::Status PlannerService::Plan(grpc::ServerContext* ctx, const v1::PlanRequest* request,
                                  v1::PlanResponse* response) {
  Call call(this, ctx, "Plan");
  if (!call.Authorized()) return call.Unauthenticated();
  call.log().request_bytes = static_cast<int64_t>(request->ByteSizeLong());
  absl::StatusOr<v1::PlanResponse> r =
      PlanCached(ctx, &call, request->trace(), request->iteration(), request->device(),
                 request->planner(), OptionMap(request->options()), request->skip_cache(), {},
                 nullptr);
  if (!r.ok()) return call.Finish(r.status());
  *response = *std::move(r);
  if (request->policy_as_json()) {
    if (absl::Status s = service::FillPolicyJson(response); !s.ok()) return call.Finish(s);
  }
  call.log().response_bytes = static_cast<int64_t>(response->ByteSizeLong());
  return call.Finish(absl::OkStatus());
}

grpc::Status PlannerService::Search(grpc::ServerContext* ctx, const v1::SearchRequest* request,
                                    grpc::ServerWriter<v1::SearchUpdate>* writer) {
  Call call(this, ctx, "Search");
  if (!call.Authorized()) return call.Unauthenticated();
  call.log().request_bytes = static_cast<int64_t>(request->ByteSizeLong());
  int64_t sent = 0;
  auto progress = [&](const v1::SearchProgress& p) {
    v1::SearchUpdate u;
    *u.mutable_progress() = p;
    sent += static_cast<int64_t>(u.ByteSizeLong());
    writer->Write(u);  // false once the client is gone: the stop hook sees it
  };
  std::string stop_reason;
  absl::StatusOr<v1::PlanResponse> r =
      PlanCached(ctx, &call, request->trace(), request->iteration(), request->device(),
                 "advisor", OptionMap(request->options()), request->skip_cache(), progress,
                 &stop_reason);
  if (!r.ok()) return call.Finish(r.status());
  v1::SearchUpdate u;
  v1::SearchResult* result = u.mutable_result();
  *result->mutable_plan() = *std::move(r);
  if (request->policy_as_json()) {
    if (absl::Status s = service::FillPolicyJson(result->mutable_plan()); !s.ok()) {
      return call.Finish(s);
    }
  }
  result->set_stop_reason(stop_reason);
  sent += static_cast<int64_t>(u.ByteSizeLong());
  writer->Write(u);
  call.log().response_bytes = sent;
  return call.Finish(absl::OkStatus());
}

grpc::Status PlannerService::Check(grpc::ServerContext* ctx, const v1::CheckRequest* request,
                                   v1::CheckResponse* response) {
  Call call(this, ctx, "Check");
  if (!call.Authorized()) return call.Unauthenticated();
  call.log().request_bytes = static_cast<int64_t>(request->ByteSizeLong());
  absl::StatusOr<std::shared_ptr<const StoredTrace>> stored = ResolveTrace(request->trace(), &call);
  if (!stored.ok()) return call.Finish(stored.status());
  Slot slot(this);
  if (!slot.status().ok()) return call.Finish(slot.status());
  absl::StatusOr<v1::CheckResponse> r = service::RunCheck((*stored)->trace, request->policy());
  if (!r.ok()) return call.Finish(r.status());
  *response = *std::move(r);
  call.log().response_bytes = static_cast<int64_t>(response->ByteSizeLong());
  return call.Finish(absl::OkStatus());
}

grpc::Status PlannerService::Simulate(grpc::ServerContext* ctx,
                                      const v1::SimulateRequest* request,
                                      v1::SimulateResponse* response) {
  Call call(this, ctx, "Simulate");
  if (!call.Authorized()) return call.Unauthenticated();
  call.log().request_bytes = static_cast<int64_t>(request->ByteSizeLong());
  absl::StatusOr<std::shared_ptr<const StoredTrace>> stored = ResolveTrace(request->trace(), &call);
  if (!stored.ok()) return call.Finish(stored.status());
  Slot slot(this);
  if (!slot.status().ok()) return call.Finish(slot.status());
  absl::StatusOr<v1::SimulateResponse> r = service::RunSimulate(
      (*stored)->trace, request->policy(), request->iteration(), request->device());
  if (!r.ok()) return call.Finish(r.status());
  *response = *std::move(r);
  call.log().response_bytes = static_cast<int64_t>(response->ByteSizeLong());
  return call.Finish(absl::OkStatus());
}

grpc::Status PlannerService::Compare(grpc::ServerContext* ctx, const v1::CompareRequest* request,
                                     v1::CompareResponse* response) {
  Call call(this, ctx, "Compare");
  if (!call.Authorized()) return call.Unauthenticated();
  call.log().request_bytes = static_cast<int64_t>(request->ByteSizeLong());
  absl::StatusOr<std::shared_ptr<const StoredTrace>> stored = ResolveTrace(request->trace(), &call);
  if (!stored.ok()) return call.Finish(stored.status());
  Slot slot(this);
  if (!slot.status().ok()) return call.Finish(slot.status());
  absl::StatusOr<v1::CompareResponse> r = service::RunCompare((*stored)->trace, *request);
  if (!r.ok()) return call.Finish(r.status());
  if (ctx->IsCancelled()) {
    return call.Finish(Error(ErrorKind::kCancelled, "the client went away while comparing"));
  }
  *response = *std::move(r);
  call.log().response_bytes = static_cast<int64_t>(response->ByteSizeLong());
  return call.Finish(absl::OkStatus());
}

grpc::Status PlannerService::GetPolicy(grpc::ServerContext* ctx,
                                       const v1::GetPolicyRequest* request,
                                       v1::PlanResponse* response) {
  Call call(this, ctx, "GetPolicy");
  if (!call.Authorized()) return call.Unauthenticated();
  call.log().request_bytes = static_cast<int64_t>(request->ByteSizeLong());
  std::optional<std::string> bytes = cache_->Get(request->cache_key());
  if (!bytes.has_value()) {
    return call.Finish(Error(ErrorKind::kNotFound,
                             absl::StrCat("cache key '", request->cache_key(),
                                          "' is not (or no longer) cached: plan again")));
  }
  if (!response->ParseFromString(*bytes)) {
    return call.Finish(Error(ErrorKind::kInternal,
                             absl::StrCat("cache entry ", request->cache_key(), " is corrupt")));
  }
  response->set_cache_hit(true);
  response->set_plan_time_ns(0);
  call.log().cache_hit = true;
  if (request->policy_as_json()) {
    if (absl::Status s = service::FillPolicyJson(response); !s.ok()) return call.Finish(s);
  }
  call.log().response_bytes = static_cast<int64_t>(response->ByteSizeLong());
  return call.Finish(absl::OkStatus());
}

}  // namespace swapplan
