#include "swapplan/service/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorKind::kNotFound, absl::StrCat(flag, " ", path, ": cannot be read"));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return std::move(s).str();
}

}  // namespace

absl::Status ServerOptions::Validate() const {
  if (listen_address.empty()) return Error(ErrorKind::kUsage, "--listen: empty address");
  if (threads < 1) {
    return Error(ErrorKind::kUsage, absl::StrCat("--threads ", threads, ": must be >= 1"));
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return Error(ErrorKind::kUsage, "--tls-cert and --tls-key go together: give both or neither");
  }
  return absl::OkStatus();
}

bool IsLoopbackAddress(absl::string_view address) {
  absl::string_view host = address;
  if (absl::StartsWith(host, "[")) {
    const size_t end = host.find(']');
    host = end == absl::string_view::npos ? host.substr(1) : host.substr(1, end - 1);
  } else if (const size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (absl::StartsWith(host, "ipv4:")) host.remove_prefix(5);
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::StatusOr<std::unique_ptr<PlannerServer>> PlannerServer::Start(
    const ServerOptions& options, PlannerServiceOptions service_options, RequestLogSink log) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  const bool tls = !options.tls_cert_file.empty();
  if (!IsLoopbackAddress(options.listen_address) && !tls && service_options.token.empty() &&
      !options.insecure) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("--listen ", options.listen_address,
                              " is not a loopback address: protect it with --tls-cert/--tls-key "
                              "or --token-file, or say --insecure"));
  }
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (tls) {
    SWAPPLAN_ASSIGN_OR_RETURN(std::string cert, ReadPem(options.tls_cert_file, "--tls-cert"));
    SWAPPLAN_ASSIGN_OR_RETURN(std::string key, ReadPem(options.tls_key_file, "--tls-key"));
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({key, cert});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  auto server = std::make_unique<PlannerServer>();
  SWAPPLAN_ASSIGN_OR_RETURN(server->service_,
                            PlannerService::Create(std::move(service_options), std::move(log)));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, creds, &server->port_);
  builder.RegisterService(server->service_.get());
  // Every call in progress holds a thread, and so does each poller waiting
  // for new calls (at most 2): a call that finds all `threads` busy is
  // refused by gRPC with RESOURCE_EXHAUSTED ("Server Threadpool Exhausted").
  grpc::ResourceQuota quota("swapplan-serve");
  quota.SetMaxThreads(std::max(options.threads, 3));
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  // Uploads arrive in chunks; one message holds at most an inline trace.
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat("--listen ", options.listen_address, ": cannot listen there"));
  }
  return server;
}

void PlannerServer::Shutdown(std::chrono::nanoseconds grace) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(grace));
}

void PlannerServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

PlannerServer::~PlannerServer() { Shutdown(std::chrono::nanoseconds(0)); }

}  // namespace swapplan
