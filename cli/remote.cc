#include "remote.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/device/presets.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::cli {

void AddRemoteFlags(CLI::App* sub, FlagSet* flags, RemoteFlags* r) {
  flags->Text(sub, "--server", &r->server,
              "Plan on this planner service (host:port of `swapplan serve`); the output is the "
              "same as a local run's");
  flags->Text(sub, "--token-file", &r->token_file,
              "With --server: the service's bearer token (default: $SWAPPLAN_TOKEN)");
  flags->Text(sub, "--tls-ca", &r->tls_ca,
              "With --server: speak TLS, verifying the server with these PEM roots");
  flags->Duration(sub, "--server-timeout", &r->timeout_ns,
                  "With --server: deadline of each call, e.g. 30s (default none)");
}

absl::StatusOr<std::unique_ptr<PlannerClient>> ConnectRemote(const RemoteFlags& r) {
  ClientOptions o;
  SWAPPLAN_ASSIGN_OR_RETURN(o.token, ReadClientToken(r.token_file.value_or("")));
  o.tls_ca_file = r.tls_ca.value_or("");
  o.timeout_ns = r.timeout_ns.value_or(0);
  return PlannerClient::Connect(r.server.value_or(""), std::move(o));
}

absl::StatusOr<std::string> UploadRemote(PlannerClient& client, const Trace& trace) {
  return client.UploadTrace(TraceToBinary(trace), trace.source());
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
  return s;
}

absl::StatusOr<Policy> RemotePlan(const RemoteFlags& r, const Trace& trace, int32_t iteration,
                                  const DeviceModel& device, const std::string& planner,
                                  const std::map<std::string, std::string>& options) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PlannerClient> client, ConnectRemote(r));
  SWAPPLAN_ASSIGN_OR_RETURN(std::string id, UploadRemote(*client, trace));
  v1::PlanRequest req;
  req.mutable_trace()->set_trace_id(id);
  req.set_iteration(iteration);
  *req.mutable_device() = DeviceSpecFor(device);
  req.set_planner(planner);
  for (const auto& [name, value] : options) (*req.mutable_options())[name] = value;
  SWAPPLAN_ASSIGN_OR_RETURN(v1::PlanResponse response, client->Plan(req));
  return ParsePolicyBinary(response.policy(), absl::StrCat(*r.server, " policy"));
}

absl::StatusOr<CheckReport> RemoteCheck(const RemoteFlags& r, const Trace& trace,
                                        const Policy& policy) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PlannerClient> client, ConnectRemote(r));
  SWAPPLAN_ASSIGN_OR_RETURN(std::string id, UploadRemote(*client, trace));
  v1::CheckRequest req;
  req.mutable_trace()->set_trace_id(id);
  req.set_policy(PolicyToBinary(policy));
  SWAPPLAN_ASSIGN_OR_RETURN(v1::CheckResponse c, client->Check(req));
  CheckReport out;
  out.iteration = c.iteration();
  out.items = c.items();
  out.budget_bytes = c.budget_bytes();
  out.peak_unswapped_bytes = c.peak_unswapped_bytes();
  out.peak_bytes = c.peak_bytes();
  out.peak_op = c.peak_op();
  out.bytes_out = c.bytes_out();
  out.late_swap_ins = c.late_swap_ins();
  out.swap_in_wait_ns = c.swap_in_wait_ns();
  out.release_waits = c.release_waits();
  out.release_wait_ns = c.release_wait_ns();
  for (const v1::Violation& v : c.violations()) {
    Violation o;
    bool known = false;
    for (int k = 0; k <= static_cast<int>(ViolationKind::kBadAction) && !known; ++k) {
      if (ViolationTag(static_cast<ViolationKind>(k)) == v.kind()) {
        o.kind = static_cast<ViolationKind>(k);
        known = true;
      }
    }
    if (!known) {
      return Error(ErrorKind::kInternal,
                   absl::StrCat(*r.server, ": unknown violation kind '", v.kind(),
                                "' (a newer server?)"));
    }
    o.item = v.item();
    o.op = v.op();
    o.bytes = v.bytes();
    o.message = v.message();
    out.violations.push_back(std::move(o));
  }
  return out;
}

}  // namespace swapplan::cli
