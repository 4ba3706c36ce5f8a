// PlannerServer: a running gRPC server with the PlannerService and the
// standard health service (grpc.health.v1.Health), TLS or plaintext.
//
//   ServerOptions so;  so.listen_address = "127.0.0.1:0";   // any free port
//   SWAPPLAN_ASSIGN_OR_RETURN(auto server, PlannerServer::Start(so, service_options, sink));
//   int port = server->port();
//   ...
//   server->Shutdown(std::chrono::seconds(30));   // drains in-flight calls
//
// Security (docs/service.md): a listen address that is not loopback
// (127.0.0.0/8, ::1, localhost) is refused unless TLS or a token is
// configured, or `insecure` says the operator means it. The token is
// PlannerServiceOptions::token (checked by the service on every call).
//
// Threading model: Start returns once the server listens; gRPC serves calls
// on its own threads (at most `threads` pollers/workers). Shutdown may be
// called from any thread (once); the destructor shuts down with no grace if
// Shutdown was not called.
#ifndef SWAPPLAN_SERVICE_SERVER_H_
#define SWAPPLAN_SERVICE_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/service/planner_service.h"

namespace grpc {
class Server;
}

namespace swapplan {

struct ServerOptions {
  // host:port; port 0 = a free port chosen by the system (PlannerServer::port).
  std::string listen_address = "127.0.0.1:7070";
  // Most threads serving calls: one per call in progress plus up to 2
  // pollers (gRPC resource quota); a call beyond it is RESOURCE_EXHAUSTED.
  // Computations are bounded separately (max_concurrent_plans).
  int32_t threads = 64;
  // PEM files; both or neither. With them the server speaks TLS only.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Allow a non-loopback address without TLS and without a token.
  bool insecure = false;

  // InvalidArgument (kUsage) naming the flag: threads < 1, one of the TLS
  // files without the other, an empty address.
  absl::Status Validate() const;
};

// Whether the host part of `address` ("host:port", "[v6]:port") is
// loopback: 127.0.0.0/8, ::1, localhost. O(length).
bool IsLoopbackAddress(absl::string_view address);

class PlannerServer {
 public:
  // Validates, refuses an unprotected non-loopback address (kUsage, naming
  // --tls-cert / --token-file / --insecure), reads the TLS files, creates
  // the service and listens. Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<PlannerServer>> Start(const ServerOptions& options,
                                                              PlannerServiceOptions service,
                                                              RequestLogSink log);
  ~PlannerServer();
  PlannerServer(const PlannerServer&) = delete;
  PlannerServer& operator=(const PlannerServer&) = delete;

  // The port listened on.
  int port() const { return port_; }
  PlannerService& service() { return *service_; }

  // Stops accepting calls, lets calls in flight finish for up to `grace`,
  // then cancels the rest; returns when every call has ended.
  void Shutdown(std::chrono::nanoseconds grace);
  // Blocks until Shutdown has completed (from another thread).
  void Wait();

  PlannerServer() = default;

 private:
  std::unique_ptr<PlannerService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace swapplan

#endif  // SWAPPLAN_SERVICE_SERVER_H_
