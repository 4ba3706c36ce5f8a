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
#include "service/compute_pool.h"
#include "service/requests.h"
#include "swapplan/service/convert.h"
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

grpc::Status PlannerService::Serve(grpc::ServerContext* ctx, const char* method,
                                   const google::protobuf::Message& request,
                                   const CallBody& body) {
  Call call(this, ctx, method);
  if (!call.Authorized()) return call.Unauthenticated();
  call.log().request_bytes = static_cast<int64_t>(request.ByteSizeLong());
  absl::StatusOr<int64_t> sent = body(call);
  if (!sent.ok()) return call.Finish(sent.status());
  call.log().response_bytes = *sent;
  return call.Finish(absl::OkStatus());
}

template <typename T>
absl::StatusOr<T> PlannerService::Compute(
    Call& call, const v1::TraceRef& ref,
    const std::function<absl::StatusOr<T>(const Trace&)>& work) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::shared_ptr<const StoredTrace> stored, ResolveTrace(ref, &call));
  Slot slot(this);
  SWAPPLAN_RETURN_IF_ERROR(slot.status());
  return compute_->Run<absl::StatusOr<T>>([&] { return work(stored->trace); });
}

absl::StatusOr<v1::SearchResult> PlannerService::PlanCached(grpc::ServerContext* ctx, Call* call,
                                                            const PlanQuery& q,
                                                            const ProgressSink& progress) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::shared_ptr<const StoredTrace> stored,
                            ResolveTrace(*q.trace, call));
  const Trace& trace = stored->trace;
  SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel device,
                            service::ResolveDeviceSpec(*q.device, trace, /*need_capacity=*/true));
  const std::string name = q.planner.empty() ? "chameleon" : q.planner;
  // One key for Plan and Search: a search is the advisor's plan. The value
  // is a SearchResult (kind "plan/2"; the kind "plan" held a bare
  // PlanResponse, so those entries are never read as the new form).
  const std::string key =
      service::PlanCacheKey("plan/2", stored->id, q.iteration, device, name, q.options);

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
  auto watch = std::make_shared<CancelWatch>(ctx);
  auto compute = [&]() -> absl::StatusOr<BlobCache::Computed> {
    Slot slot(this);
    SWAPPLAN_RETURN_IF_ERROR(slot.status());
    service::PlanHooks hooks;
    hooks.stop = [watch, timed, stop_at] {
      return (timed && SystemClock::now() >= stop_at) || watch->Cancelled();
    };
    if (progress) {
      hooks.progress = [&](const GenerationStats& g) {
        v1::SearchProgress p;
        GenerationToProto(g, &p);
        progress(p);
      };
    }
    SWAPPLAN_ASSIGN_OR_RETURN(service::PlanOutcome outcome,
                              compute_->Run<absl::StatusOr<service::PlanOutcome>>([&] {
                                return service::RunPlan(trace, q.iteration, device, name,
                                                        q.options, hooks);
                              }));
    if (ctx->IsCancelled()) {
      return Error(ErrorKind::kCancelled, "the client went away while planning");
    }
    v1::SearchResult result;
    if (outcome.search) SearchToProto(*outcome.search, &result);
    const bool stopped = result.stop_reason() == "stopped";
    if (stopped) result.set_stop_reason("deadline");
    outcome.response.set_best_so_far(stopped);
    outcome.response.set_cache_key(key);
    *result.mutable_plan() = std::move(outcome.response);
    return BlobCache::Computed{result.SerializeAsString(), !stopped};
  };
  bool hit = false;
  absl::StatusOr<std::string> bytes;
  if (q.skip_cache) {
    absl::StatusOr<BlobCache::Computed> c = compute();
    if (!c.ok()) return c.status();
    if (c->cacheable) cache_->Put(key, c->value).IgnoreError();
    bytes = std::move(c->value);
  } else {
    // A caller waiting for an identical computation stops waiting when its
    // own client goes away or its own deadline passes.
    auto give_up = [watch, timed, deadline] {
      return (timed && SystemClock::now() >= deadline) || watch->Cancelled();
    };
    bytes = cache_->GetOrCompute(key, compute, &hit, give_up);
  }
  if (!bytes.ok()) return bytes.status();
  v1::SearchResult r;
  if (!r.ParseFromString(*bytes)) {
    return Error(ErrorKind::kInternal, absl::StrCat("cache entry ", key, " is corrupt"));
  }
  v1::PlanResponse* plan = r.mutable_plan();
  plan->set_cache_hit(hit);
  if (hit) plan->set_plan_time_ns(0);
  if (q.policy_as_json) SWAPPLAN_RETURN_IF_ERROR(service::FillPolicyJson(plan));
  call->log().cache_hit = hit;
  return r;
}

grpc::Status PlannerService::Plan(grpc::ServerContext* ctx, const v1::PlanRequest* request,
                                  v1::PlanResponse* response) {
  return Serve(ctx, "Plan", *request, [&](Call& call) -> absl::StatusOr<int64_t> {
    SWAPPLAN_ASSIGN_OR_RETURN(
        v1::SearchResult r,
        PlanCached(ctx, &call,
                   {&request->trace(), request->iteration(), &request->device(),
                    request->planner(), OptionMap(request->options()), request->skip_cache(),
                    request->policy_as_json()},
                   {}));
    *response = std::move(*r.mutable_plan());
    return static_cast<int64_t>(response->ByteSizeLong());
  });
}

grpc::Status PlannerService::Search(grpc::ServerContext* ctx, const v1::SearchRequest* request,
                                    grpc::ServerWriter<v1::SearchUpdate>* writer) {
  return Serve(ctx, "Search", *request, [&](Call& call) -> absl::StatusOr<int64_t> {
    int64_t sent = 0;
    auto send = [&](v1::SearchUpdate u) {
      sent += static_cast<int64_t>(u.ByteSizeLong());
      writer->Write(u);  // false once the client is gone: the stop hook sees it
    };
    auto progress = [&](const v1::SearchProgress& p) {
      v1::SearchUpdate u;
      *u.mutable_progress() = p;
      send(std::move(u));
    };
    v1::SearchUpdate u;
    SWAPPLAN_ASSIGN_OR_RETURN(
        *u.mutable_result(),
        PlanCached(ctx, &call,
                   {&request->trace(), request->iteration(), &request->device(), "advisor",
                    OptionMap(request->options()), request->skip_cache(),
                    request->policy_as_json()},
                   progress));
    send(std::move(u));
    return sent;
  });
}

grpc::Status PlannerService::Check(grpc::ServerContext* ctx, const v1::CheckRequest* request,
                                   v1::CheckResponse* response) {
  return Serve(ctx, "Check", *request, [&](Call& call) -> absl::StatusOr<int64_t> {
    SWAPPLAN_ASSIGN_OR_RETURN(
        *response, Compute<v1::CheckResponse>(call, request->trace(), [&](const Trace& t) {
          return service::RunCheck(t, request->policy());
        }));
    return static_cast<int64_t>(response->ByteSizeLong());
  });
}

grpc::Status PlannerService::Simulate(grpc::ServerContext* ctx,
                                      const v1::SimulateRequest* request,
                                      v1::SimulateResponse* response) {
  return Serve(ctx, "Simulate", *request, [&](Call& call) -> absl::StatusOr<int64_t> {
    SWAPPLAN_ASSIGN_OR_RETURN(
        *response, Compute<v1::SimulateResponse>(call, request->trace(), [&](const Trace& t) {
          return service::RunSimulate(t, *request);
        }));
    return static_cast<int64_t>(response->ByteSizeLong());
  });
}

grpc::Status PlannerService::Compare(grpc::ServerContext* ctx, const v1::CompareRequest* request,
                                     v1::CompareResponse* response) {
  return Serve(ctx, "Compare", *request, [&](Call& call) -> absl::StatusOr<int64_t> {
    SWAPPLAN_ASSIGN_OR_RETURN(
        *response, Compute<v1::CompareResponse>(call, request->trace(), [&](const Trace& t) {
          return service::RunCompare(t, *request);
        }));
    if (ctx->IsCancelled()) {
      return Error(ErrorKind::kCancelled, "the client went away while comparing");
    }
    return static_cast<int64_t>(response->ByteSizeLong());
  });
}

grpc::Status PlannerService::GetPolicy(grpc::ServerContext* ctx,
                                       const v1::GetPolicyRequest* request,
                                       v1::PlanResponse* response) {
  return Serve(ctx, "GetPolicy", *request, [&](Call& call) -> absl::StatusOr<int64_t> {
    std::optional<std::string> bytes = cache_->Get(request->cache_key());
    if (!bytes.has_value()) {
      return Error(ErrorKind::kNotFound, absl::StrCat("cache key '", request->cache_key(),
                                                      "' is not (or no longer) cached: plan "
                                                      "again"));
    }
    v1::SearchResult r;
    if (!r.ParseFromString(*bytes)) {
      return Error(ErrorKind::kInternal,
                   absl::StrCat("cache entry ", request->cache_key(), " is corrupt"));
    }
    *response = std::move(*r.mutable_plan());
    response->set_cache_hit(true);
    response->set_plan_time_ns(0);
    call.log().cache_hit = true;
    if (request->policy_as_json()) SWAPPLAN_RETURN_IF_ERROR(service::FillPolicyJson(response));
    return static_cast<int64_t>(response->ByteSizeLong());
  });
}

}  // namespace swapplan
