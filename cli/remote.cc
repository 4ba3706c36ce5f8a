#include "remote.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/device/presets.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/service/client.h"
#include "swapplan/service/convert.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::cli {

void AddRemoteFlags(CLI::App* sub, FlagSet* flags, RemoteFlags* r) {
  flags->Text(sub, "--server", &r->server,
              "Run this command's work on this planner service (host:port of `swapplan serve`); "
              "the output is the same as a local run's");
  flags->Text(sub, "--token-file", &r->token_file,
              "With --server: the service's bearer token (default: $SWAPPLAN_TOKEN)");
  flags->Text(sub, "--tls-ca", &r->tls_ca,
              "With --server: speak TLS, verifying the server with these PEM roots");
  flags->Duration(sub, "--server-timeout", &r->timeout_ns,
                  "With --server: deadline of each call, e.g. 30s (default none)");
}

absl::StatusOr<RemoteSession> RemoteSession::Open(const RemoteFlags& r, const Trace& trace) {
  ClientOptions o;
  SWAPPLAN_ASSIGN_OR_RETURN(o.token, ReadClientToken(r.token_file.value_or("")));
  o.tls_ca_file = r.tls_ca.value_or("");
  o.timeout_ns = r.timeout_ns.value_or(0);
  const std::string server = r.server.value_or("");
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PlannerClient> client,
                            PlannerClient::Connect(server, std::move(o)));
  SWAPPLAN_ASSIGN_OR_RETURN(std::string id,
                            client->UploadTrace(TraceToBinary(trace), trace.source()));
  return RemoteSession(std::move(client), std::move(id), server);
}

RemoteSession::RemoteSession(std::unique_ptr<PlannerClient> client, std::string trace_id,
                             std::string server)
    : client_(std::move(client)), trace_id_(std::move(trace_id)), server_(std::move(server)) {}
RemoteSession::RemoteSession(RemoteSession&&) noexcept = default;
RemoteSession& RemoteSession::operator=(RemoteSession&&) noexcept = default;
RemoteSession::~RemoteSession() = default;

v1::TraceRef RemoteSession::trace_ref() const {
  v1::TraceRef ref;
  ref.set_trace_id(trace_id_);
  return ref;
}

absl::StatusOr<Policy> RemoteSession::Plan(int32_t iteration, const DeviceModel& device,
                                           const std::string& planner,
                                           const std::map<std::string, std::string>& options) {
  v1::PlanRequest req;
  *req.mutable_trace() = trace_ref();
  req.set_iteration(iteration);
  *req.mutable_device() = DeviceSpecFor(device);
  req.set_planner(planner);
  for (const auto& [name, value] : options) (*req.mutable_options())[name] = value;
  SWAPPLAN_ASSIGN_OR_RETURN(v1::PlanResponse response, client_->Plan(req));
  return ParsePolicyBinary(response.policy(), absl::StrCat(server_, " policy"));
}

v1::DeviceSpec DeviceSpecFor(const DeviceModel& m) {
  v1::DeviceSpec s;
  if (FindDevicePreset(m.name) != nullptr) s.set_preset(m.name);
  s.set_capacity_bytes(m.capacity_bytes);
  s.set_reserve_bytes(m.reserve_bytes);
  s.set_h2d_bandwidth_bytes_per_s(m.h2d_bandwidth_bytes_per_s);
  s.set_d2h_bandwidth_bytes_per_s(m.d2h_bandwidth_bytes_per_s);
  s.set_copy_latency_ns(m.copy_latency_ns);
  s.set_half_duplex(m.copy_engines == 1);
  s.set_compute_time_scale(m.compute_time_scale);
  TiersToSpec(m, &s);
  return s;
}

absl::StatusOr<Policy> RemotePlan(const RemoteFlags& r, const Trace& trace, int32_t iteration,
                                  const DeviceModel& device, const std::string& planner,
                                  const std::map<std::string, std::string>& options) {
  SWAPPLAN_ASSIGN_OR_RETURN(RemoteSession session, RemoteSession::Open(r, trace));
  return session.Plan(iteration, device, planner, options);
}

absl::StatusOr<CheckReport> RemoteCheck(const RemoteFlags& r, const Trace& trace,
                                        const Policy& policy) {
  SWAPPLAN_ASSIGN_OR_RETURN(RemoteSession session, RemoteSession::Open(r, trace));
  v1::CheckRequest req;
  *req.mutable_trace() = session.trace_ref();
  req.set_policy(PolicyToBinary(policy));
  SWAPPLAN_ASSIGN_OR_RETURN(v1::CheckResponse c, session.client().Check(req));
  absl::StatusOr<CheckReport> out = CheckFromProto(c);
  if (!out.ok()) {
    return Error(KindOf(out.status()), absl::StrCat(session.server(), ": ", out.status().message()));
  }
  return out;
}

absl::StatusOr<SimulationResult> RemoteSimulate(const RemoteFlags& r, const Trace& trace,
                                                const Policy& policy,
                                                const SimulatorOptions& options) {
  SWAPPLAN_ASSIGN_OR_RETURN(RemoteSession session, RemoteSession::Open(r, trace));
  v1::SimulateRequest req;
  *req.mutable_trace() = session.trace_ref();
  req.set_policy(PolicyToBinary(policy));
  DeviceModelToProto(options.device, req.mutable_device_model());
  SimulatorSettingsToProto(options, req.mutable_settings());
  SWAPPLAN_ASSIGN_OR_RETURN(v1::SimulateResponse response, session.client().Simulate(req));
  return SimulationFromProto(response);
}

absl::StatusOr<RemoteSearchOutcome> RemoteSearch(
    const RemoteFlags& r, const Trace& trace, int32_t iteration, const DeviceModel& device,
    const std::map<std::string, std::string>& options, const ProgressCallback& progress) {
  SWAPPLAN_ASSIGN_OR_RETURN(RemoteSession session, RemoteSession::Open(r, trace));
  v1::SearchRequest req;
  *req.mutable_trace() = session.trace_ref();
  req.set_iteration(iteration);
  *req.mutable_device() = DeviceSpecFor(device);
  for (const auto& [name, value] : options) (*req.mutable_options())[name] = value;
  SWAPPLAN_ASSIGN_OR_RETURN(
      v1::SearchResult result,
      session.client().Search(req, [&](const v1::SearchProgress& p) {
        if (progress) progress(GenerationFromProto(p));
      }));
  RemoteSearchOutcome out;
  SWAPPLAN_ASSIGN_OR_RETURN(out.policy, ParsePolicyBinary(result.plan().policy(),
                                                          absl::StrCat(session.server(), " policy")));
  SWAPPLAN_ASSIGN_OR_RETURN(out.result, SearchFromProto(result));
  return out;
}

CompareOptions::PlanFn RemoteComparePlanner(RemoteSession* session) {
  return [session](const std::string& planner, const PlanningProblem& problem,
                   const std::map<std::string, std::string>& options) {
    return session->Plan(problem.iteration, problem.device, planner, options);
  };
}

}  // namespace swapplan::cli
