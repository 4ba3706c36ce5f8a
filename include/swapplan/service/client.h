// PlannerClient: the C++ client of the planner service (`swapplan serve`),
// used by the CLI's `--server ADDR`. It uploads a trace once (or sends it
// inline when small) and calls the RPCs with the bearer token; gRPC errors
// come back as absl statuses of the matching ErrorKind (the
// `swapplan-error-kind` trailer when present, else the code), so the CLI's
// exit statuses are the same as a local run's.
//
//   ClientOptions o;  o.token = "...";  o.tls_ca_file = "ca.pem";
//   SWAPPLAN_ASSIGN_OR_RETURN(auto client, PlannerClient::Connect("host:7070", o));
//   SWAPPLAN_ASSIGN_OR_RETURN(std::string id, client->UploadTrace(bytes, "run.trace"));
//   v1::PlanRequest req;  req.mutable_trace()->set_trace_id(id);
//   SWAPPLAN_ASSIGN_OR_RETURN(v1::PlanResponse r, client->Plan(req));
//
// Threading model: a PlannerClient may be used from several threads at once
// (a gRPC channel and its generated client are thread-safe); each call blocks its thread.
#ifndef SWAPPLAN_SERVICE_CLIENT_H_
#define SWAPPLAN_SERVICE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "planner_service.grpc.pb.h"

namespace swapplan {

// The client class protoc generates for swapplan.v1.Planner (gRPC's fixed
// name for it is Planner::Stub; this alias is the one place that name is
// spelled). Tests and tools that call the RPCs directly hold one of these.
using PlannerGrpcClient = v1::Planner::Stub;

// A generated client of the service on `channel`.
std::unique_ptr<PlannerGrpcClient> NewPlannerGrpcClient(
    const std::shared_ptr<grpc::ChannelInterface>& channel);

struct ClientOptions {
  // Sent as `authorization: Bearer <token>`; "" = none.
  std::string token;
  // PEM roots to verify the server with; "" = plaintext.
  std::string tls_ca_file;
  // Deadline of each call; 0 = none.
  int64_t timeout_ns = 0;
  // Upload chunk size.
  int64_t chunk_bytes = int64_t{1} << 20;

  // InvalidArgument (kUsage) naming the field: negative timeout, chunk < 1.
  absl::Status Validate() const;
};

// The token of the CLI's --token-file F (the file's content without
// surrounding blanks) or, without F, of $SWAPPLAN_TOKEN ("" when unset).
// NotFound when F cannot be read; kUsage when it is empty.
absl::StatusOr<std::string> ReadClientToken(const std::string& token_file);

class PlannerClient {
 public:
  // A client of `address` (host:port). kNotFound when tls_ca_file cannot be
  // read. Connecting is lazy: an unreachable server is reported by the
  // first call (kUnavailable).
  static absl::StatusOr<std::unique_ptr<PlannerClient>> Connect(const std::string& address,
                                                                ClientOptions options);

  // Uploads `bytes` in chunks; returns the trace id.
  absl::StatusOr<std::string> UploadTrace(absl::string_view bytes, const std::string& name);

  absl::StatusOr<v1::PlanResponse> Plan(const v1::PlanRequest& request);
  absl::StatusOr<v1::CheckResponse> Check(const v1::CheckRequest& request);
  absl::StatusOr<v1::SimulateResponse> Simulate(const v1::SimulateRequest& request);
  absl::StatusOr<v1::CompareResponse> Compare(const v1::CompareRequest& request);
  absl::StatusOr<v1::PlanResponse> GetPolicy(const v1::GetPolicyRequest& request);
  // The Advisor's search: `progress` (may be empty) gets each generation as
  // it arrives; returns the result (errors as the unary calls'; a stream
  // that ends without a result is kInternal).
  absl::StatusOr<v1::SearchResult> Search(
      const v1::SearchRequest& request,
      const std::function<void(const v1::SearchProgress&)>& progress);

  // The library status of a finished call (OK -> OK).
  static absl::Status ToStatus(const grpc::Status& status, const grpc::ClientContext& ctx);

  PlannerClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel);

 private:
  void Prepare(grpc::ClientContext* ctx) const;

  const ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  // The generated client every call goes through.
  std::unique_ptr<PlannerGrpcClient> rpc_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_SERVICE_CLIENT_H_
