// --server ADDR: run a command's planning on a planner service
// (`swapplan serve`, docs/service.md) instead of in this process. The
// command reads and validates its input locally as always, sends the trace
// (uploaded in chunks, the binary form of what it read) and the resolved
// device, and renders the answer with the same code as a local run, so the
// output is the same.
//
//   --server ADDR        host:port of the service
//   --token-file F       bearer token (default: $SWAPPLAN_TOKEN)
//   --tls-ca F           PEM roots: speak TLS and verify the server with them
//   --server-timeout T   deadline of each call, e.g. 30s (default none)
//
//   RemoteFlags r;  AddRemoteFlags(sub, &flags, &r);
//   ...
//   if (r.server) { SWAPPLAN_ASSIGN_OR_RETURN(Policy p, RemotePlan(r, trace, ...)); }
#ifndef SWAPPLAN_CLI_REMOTE_H_
#define SWAPPLAN_CLI_REMOTE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "absl/status/statusor.h"
#include "flags.h"
#include "swapplan/device/device_model.h"
#include "swapplan/policy/policy.h"
#include "swapplan/service/client.h"
#include "swapplan/sim/checker.h"
#include "swapplan/trace/trace.h"

namespace swapplan::cli {

struct RemoteFlags {
  std::optional<std::string> server;
  std::optional<std::string> token_file;
  std::optional<std::string> tls_ca;
  std::optional<int64_t> timeout_ns;
};

// Declares --server, --token-file, --tls-ca and --server-timeout on `sub`.
void AddRemoteFlags(CLI::App* sub, FlagSet* flags, RemoteFlags* r);

// A client of r.server with the token and TLS roots of the flags.
absl::StatusOr<std::unique_ptr<PlannerClient>> ConnectRemote(const RemoteFlags& r);

// Uploads `trace` (its binary form); returns the trace id.
absl::StatusOr<std::string> UploadRemote(PlannerClient& client, const Trace& trace);

// The device fields the service resolves to `m` (its preset by name when
// it is one, then every figure).
v1::DeviceSpec DeviceSpecFor(const DeviceModel& m);

// The policy planner `planner` makes on the server for iteration
// `iteration` of `trace`, on `device`, with `options` (Planner::SetOption
// spellings). The server's errors keep their kinds (infeasible: exit 3).
absl::StatusOr<Policy> RemotePlan(const RemoteFlags& r, const Trace& trace, int32_t iteration,
                                  const DeviceModel& device, const std::string& planner,
                                  const std::map<std::string, std::string>& options);

// The checker's report computed by the server (CheckOptionsFor the policy).
absl::StatusOr<CheckReport> RemoteCheck(const RemoteFlags& r, const Trace& trace,
                                        const Policy& policy);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_REMOTE_H_
