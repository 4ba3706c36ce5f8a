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
//   RemoteFlags r;  AddRemoteFlags(sub, &flags, &r);     // plan, check, simulate,
//   ...                                                  // compare, search
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
#include "swapplan/eval/compare.h"
#include "swapplan/planners/advisor/search.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

// The service's client and messages stay out of this header (it is
// included by every command that takes --server, and gRPC's headers are the
// heaviest of the build): remote.cc holds what needs them.
namespace swapplan {
class PlannerClient;
namespace v1 {
class DeviceSpec;
class TraceRef;
}  // namespace v1
}  // namespace swapplan

namespace swapplan::cli {

struct RemoteFlags {
  std::optional<std::string> server;
  std::optional<std::string> token_file;
  std::optional<std::string> tls_ca;
  std::optional<int64_t> timeout_ns;
};

// Declares --server, --token-file, --tls-ca and --server-timeout on `sub`.
void AddRemoteFlags(CLI::App* sub, FlagSet* flags, RemoteFlags* r);

// A connection to r.server (the token and TLS roots of the flags) with the
// command's trace uploaded: what every --server command starts with.
class RemoteSession {
 public:
  // Connects and uploads `trace` (its binary form). The server's errors keep
  // their kinds.
  static absl::StatusOr<RemoteSession> Open(const RemoteFlags& r, const Trace& trace);

  RemoteSession(RemoteSession&&) noexcept;
  RemoteSession& operator=(RemoteSession&&) noexcept;
  ~RemoteSession();

  PlannerClient& client() { return *client_; }
  // The uploaded trace, as requests name it.
  v1::TraceRef trace_ref() const;
  const std::string& server() const { return server_; }

  // The policy planner `planner` makes on the server for iteration
  // `iteration` on `device`, with `options` (Planner::SetOption spellings).
  absl::StatusOr<Policy> Plan(int32_t iteration, const DeviceModel& device,
                              const std::string& planner,
                              const std::map<std::string, std::string>& options);

 private:
  RemoteSession(std::unique_ptr<PlannerClient> client, std::string trace_id, std::string server);
  std::unique_ptr<PlannerClient> client_;
  std::string trace_id_;
  std::string server_;
};

// The device fields the service resolves to `m` (its preset by name when
// it is one, then every figure, then its memory tiers).
v1::DeviceSpec DeviceSpecFor(const DeviceModel& m);

// RemoteSession::Plan of a session opened for this one call.
absl::StatusOr<Policy> RemotePlan(const RemoteFlags& r, const Trace& trace, int32_t iteration,
                                  const DeviceModel& device, const std::string& planner,
                                  const std::map<std::string, std::string>& options);

// The checker's report computed by the server (CheckOptionsFor the policy).
absl::StatusOr<CheckReport> RemoteCheck(const RemoteFlags& r, const Trace& trace,
                                        const Policy& policy);

// The evaluation simulator's result computed by the server with `options`
// (its device as given, its settings): the same as Simulate(trace, policy,
// options) here, but for the timeline (local only).
absl::StatusOr<SimulationResult> RemoteSimulate(const RemoteFlags& r, const Trace& trace,
                                                const Policy& policy,
                                                const SimulatorOptions& options);

// What `search --server` gets: the policy and the search's figures (one
// island, no chromosome).
struct RemoteSearchOutcome {
  Policy policy;
  SearchResult result;
};

// The Advisor's search on the server for iteration `iteration` of `trace`
// on `device` with `options` (its option table's names); `progress` (may be
// empty) gets each generation as the server sends it (none when the answer
// comes from the server's cache: the result's history has them all).
absl::StatusOr<RemoteSearchOutcome> RemoteSearch(
    const RemoteFlags& r, const Trace& trace, int32_t iteration, const DeviceModel& device,
    const std::map<std::string, std::string>& options, const ProgressCallback& progress);

// ComparePlanners' way of making each row's policy on the server
// (CompareOptions::plan); `session` must outlive the comparison.
CompareOptions::PlanFn RemoteComparePlanner(RemoteSession* session);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_REMOTE_H_
