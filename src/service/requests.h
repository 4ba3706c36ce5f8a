// The planner service's work, without gRPC: requests of
// proto/planner_service.proto in, responses out, through the library's own
// entry points (planner registry, checker, simulator, ComparePlanners).
// PlannerService (service/planner_service.h) adds transport, auth, cache,
// limits and logging around these.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel d, ResolveDeviceSpec(req.device(), trace, true));
//   SWAPPLAN_ASSIGN_OR_RETURN(PlanOutcome o, RunPlan(trace, it, d, "chameleon", {}, {}));
//
// Threading model: plain functions; each call uses only its arguments, so
// any number may run at once on different threads.
#ifndef SWAPPLAN_SERVICE_REQUESTS_H_
#define SWAPPLAN_SERVICE_REQUESTS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner_service.pb.h"
#include "swapplan/device/device_model.h"
#include "swapplan/planners/advisor/search.h"
#include "swapplan/trace/trace.h"

namespace swapplan::service {

// The device of a request: the trace's recorded capacity and bandwidths,
// then the preset, then every field set in `spec` (0 = not given); compute
// scale 0 = 1. With `need_capacity` a missing capacity is InvalidArgument
// (kUsage) saying which field to set; without it, the capacity is
// unlimited. A missing bandwidth is InvalidArgument; NotFound for an
// unknown preset. O(1).
absl::StatusOr<DeviceModel> ResolveDeviceSpec(const v1::DeviceSpec& spec, const Trace& trace,
                                              bool need_capacity);

// The cache key of a Plan (or Search, `kind` "search"): hex SHA-256 of the
// trace id, iteration, every field of the resolved device, the planner and
// the options sorted by name. O(options).
std::string PlanCacheKey(const std::string& kind, const std::string& trace_id, int32_t iteration,
                         const DeviceModel& device, const std::string& planner,
                         const std::map<std::string, std::string>& options);

// How a Plan or Search may be cut short and watched.
struct PlanHooks {
  // Asked by a searching planner (the advisor) between evaluations: true
  // ends the search with its best so far (advisor/search.h StopCallback).
  StopCallback stop;
  // Per generation of a searching planner; may be empty.
  ProgressCallback progress;
};

struct PlanOutcome {
  v1::PlanResponse response;
  // The advisor's search, when the planner was the advisor.
  std::optional<SearchResult> search;
};

// Plans iteration `iteration` of `trace` for `device` with planner
// `planner` ("" = chameleon) and `options` (Planner::SetOption), verifies
// the policy with the checker (a rejection is Internal), simulates it, and
// fills the report (the numbers of `swapplan plan --json`) and the binary
// policy. Errors: unknown planner or bad option (kUsage), bad iteration,
// the planner's (infeasible: kInfeasible).
absl::StatusOr<PlanOutcome> RunPlan(const Trace& trace, int32_t iteration,
                                    const DeviceModel& device, const std::string& planner,
                                    const std::map<std::string, std::string>& options,
                                    const PlanHooks& hooks);

// A policy in either form (JSON when the first non-blank byte is '{').
// kMalformedInput naming `name` and the field.
absl::StatusOr<Policy> ParsePolicyBytes(absl::string_view bytes, const std::string& name);

// The checker's report on `policy_bytes` against `trace` (with
// CheckOptionsFor the policy). A policy for another op sequence is
// kFingerprintMismatch; violations are the report's, not an error.
absl::StatusOr<v1::CheckResponse> RunCheck(const Trace& trace, absl::string_view policy_bytes);

// The evaluation simulator on the request's policy (empty: iteration
// `iteration` with no policy). The device: the request's device_model when
// set; else the policy's (capacity = its budget), the trace's bandwidths
// where it records none, then the fields of `device`. The simulator's
// settings from `settings`. An OOM is reported (oom, oom_op, detail), not an
// error.
absl::StatusOr<v1::SimulateResponse> RunSimulate(const Trace& trace,
                                                 const v1::SimulateRequest& req);

// ComparePlanners on the request's budget, device and planners.
absl::StatusOr<v1::CompareResponse> RunCompare(const Trace& trace, const v1::CompareRequest& req);

// The policy of `response` (binary) as JSON, into response->policy_json.
absl::Status FillPolicyJson(v1::PlanResponse* response);

}  // namespace swapplan::service

#endif  // SWAPPLAN_SERVICE_REQUESTS_H_
