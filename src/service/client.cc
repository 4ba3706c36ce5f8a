#include "swapplan/service/client.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

absl::StatusOr<std::string> ReadText(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorKind::kNotFound, absl::StrCat(flag, " ", path, ": cannot be read"));
  std::ostringstream s;
  s << in.rdbuf();
  return std::move(s).str();
}

ErrorKind KindFromGrpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT: return ErrorKind::kMalformedInput;
    case grpc::StatusCode::NOT_FOUND: return ErrorKind::kNotFound;
    case grpc::StatusCode::FAILED_PRECONDITION: return ErrorKind::kFingerprintMismatch;
    case grpc::StatusCode::OUT_OF_RANGE: return ErrorKind::kInfeasible;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return ErrorKind::kResourceLimit;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return ErrorKind::kDeadlineExceeded;
    case grpc::StatusCode::CANCELLED: return ErrorKind::kCancelled;
    case grpc::StatusCode::UNAVAILABLE: return ErrorKind::kUnavailable;
    case grpc::StatusCode::ABORTED: return ErrorKind::kQualityRegression;
    case grpc::StatusCode::UNAUTHENTICATED: return ErrorKind::kUsage;
    default: return ErrorKind::kInternal;
  }
}

}  // namespace

std::unique_ptr<PlannerGrpcClient> NewPlannerGrpcClient(
    const std::shared_ptr<grpc::ChannelInterface>& channel) {
  return v1::Planner::NewStub(channel);
}

absl::Status ClientOptions::Validate() const {
  if (timeout_ns < 0) {
    return Error(ErrorKind::kUsage, absl::StrCat("client: timeout_ns ", timeout_ns, " must be >= 0"));
  }
  if (chunk_bytes < 1) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("client: chunk_bytes ", chunk_bytes, " must be >= 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadClientToken(const std::string& token_file) {
  if (token_file.empty()) {
    const char* env = std::getenv("SWAPPLAN_TOKEN");
    return std::string(env == nullptr ? "" : absl::StripAsciiWhitespace(env));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadText(token_file, "--token-file"));
  std::string token(absl::StripAsciiWhitespace(text));
  if (token.empty()) {
    return Error(ErrorKind::kUsage, absl::StrCat("--token-file ", token_file, ": the file is empty"));
  }
  return token;
}

absl::StatusOr<std::unique_ptr<PlannerClient>> PlannerClient::Connect(const std::string& address,
                                                                      ClientOptions options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!options.tls_ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    SWAPPLAN_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadText(options.tls_ca_file, "--tls-ca"));
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(address, creds, args);
  return std::make_unique<PlannerClient>(std::move(options), std::move(channel));
}

PlannerClient::PlannerClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      rpc_(NewPlannerGrpcClient(channel_)) {}

void PlannerClient::Prepare(grpc::ClientContext* ctx) const {
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  if (options_.timeout_ns > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::nanoseconds(options_.timeout_ns)));
  }
}

absl::Status PlannerClient::ToStatus(const grpc::Status& status, const grpc::ClientContext& ctx) {
  if (status.ok()) return absl::OkStatus();
  ErrorKind kind = KindFromGrpc(status.error_code());
  const auto& trailers = ctx.GetServerTrailingMetadata();
  if (auto it = trailers.find("swapplan-error-kind"); it != trailers.end()) {
    const absl::string_view name(it->second.data(), it->second.size());
    for (int k = 1; k <= static_cast<int>(ErrorKind::kInternal); ++k) {
      if (ErrorKindName(static_cast<ErrorKind>(k)) == name) kind = static_cast<ErrorKind>(k);
    }
  }
  std::string message = status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    message = absl::StrCat("server: ", message);
  }
  return Error(kind, message);
}

absl::StatusOr<std::string> PlannerClient::UploadTrace(absl::string_view bytes,
                                                       const std::string& name) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  v1::UploadTraceResponse response;
  auto writer = rpc_->UploadTrace(&ctx, &response);
  const size_t chunk = static_cast<size_t>(options_.chunk_bytes);
  size_t at = 0;
  do {
    v1::UploadTraceRequest req;
    if (at == 0) {
      req.set_name(name);
      req.set_total_bytes(static_cast<int64_t>(bytes.size()));
    }
    req.set_chunk(std::string(bytes.substr(at, chunk)));
    at += chunk;
    if (!writer->Write(req)) break;  // the server ended the call: Finish says why
  } while (at < bytes.size());
  writer->WritesDone();
  SWAPPLAN_RETURN_IF_ERROR(ToStatus(writer->Finish(), ctx));
  return response.trace().trace_id();
}

absl::StatusOr<v1::SearchResult> PlannerClient::Search(
    const v1::SearchRequest& request,
    const std::function<void(const v1::SearchProgress&)>& progress) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  auto reader = rpc_->Search(&ctx, request);
  v1::SearchUpdate u;
  std::optional<v1::SearchResult> result;
  while (reader->Read(&u)) {
    if (u.has_progress() && progress) progress(u.progress());
    if (u.has_result()) result = u.result();
  }
  SWAPPLAN_RETURN_IF_ERROR(ToStatus(reader->Finish(), ctx));
  if (!result.has_value()) {
    return Error(ErrorKind::kInternal, "Search: the stream ended without a result");
  }
  return *std::move(result);
}

#define SWAPPLAN_CLIENT_UNARY(Method, Request, Response)                        \
  absl::StatusOr<v1::Response> PlannerClient::Method(const v1::Request& req) { \
    grpc::ClientContext ctx;                                                   \
    Prepare(&ctx);                                                             \
    v1::Response response;                                                     \
    SWAPPLAN_RETURN_IF_ERROR(ToStatus(rpc_->Method(&ctx, req, &response), ctx)); \
    return response;                                                           \
  }

SWAPPLAN_CLIENT_UNARY(Plan, PlanRequest, PlanResponse)
SWAPPLAN_CLIENT_UNARY(Check, CheckRequest, CheckResponse)
SWAPPLAN_CLIENT_UNARY(Simulate, SimulateRequest, SimulateResponse)
SWAPPLAN_CLIENT_UNARY(Compare, CompareRequest, CompareResponse)
SWAPPLAN_CLIENT_UNARY(GetPolicy, GetPolicyRequest, PlanResponse)

#undef SWAPPLAN_CLIENT_UNARY

}  // namespace swapplan
