// PlannerService's per-call helpers (private to src/service): Call
// (authentication, status mapping, the log record) and Slot (one of
// max_concurrent_plans computations). Used on the handler's thread only.
#ifndef SWAPPLAN_SERVICE_CALL_H_
#define SWAPPLAN_SERVICE_CALL_H_

#include <time.h>

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "swapplan/service/planner_service.h"
#include "swapplan/util/error.h"

namespace swapplan {

using Clock = std::chrono::steady_clock;

// CPU time the calling thread has used, in ns (CLOCK_THREAD_CPUTIME_ID).
inline int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline constexpr absl::string_view kBearer = "Bearer ";

// "OK", "INVALID_ARGUMENT", ...
const char* GrpcCodeName(grpc::StatusCode c);

// Equal contents, in time that depends only on the lengths.
inline bool ConstantTimeEquals(absl::string_view given, absl::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

// One call in flight: authentication, its log record, the status mapping.
class PlannerService::Call {
 public:
  Call(PlannerService* service, grpc::ServerContext* ctx, absl::string_view method)
      : service_(service), ctx_(ctx), start_(Clock::now()), start_cpu_ns_(ThreadCpuNs()) {
    log_.method = std::string(method);
    log_.peer = ctx->peer();
  }

  // OK when no token is configured or the call carries the right one.
  bool Authorized() const {
    const std::string& token = service_->options_.token;
    if (token.empty()) return true;
    const auto& md = ctx_->client_metadata();
    auto it = md.find("authorization");
    const std::string expected = absl::StrCat(kBearer, token);
    if (it == md.end()) return ConstantTimeEquals("", expected);
    return ConstantTimeEquals(absl::string_view(it->second.data(), it->second.size()), expected);
  }

  RequestLog& log() { return log_; }

  // The grpc status for `status` (with the error-kind trailer), logged.
  grpc::Status Finish(const absl::Status& status) {
    grpc::Status out = grpc::Status::OK;
    if (!status.ok()) {
      ctx_->AddTrailingMetadata("swapplan-error-kind", std::string(ErrorKindName(KindOf(status))));
      out = grpc::Status(GrpcCodeFor(status), std::string(status.message()));
    }
    return Log(out);
  }

  grpc::Status Unauthenticated() {
    return Log(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "missing or wrong token: send metadata `authorization: Bearer <token>`"));
  }

 private:
  grpc::Status Log(grpc::Status s) {
    log_.code = s.error_code();
    log_.message = s.error_message();
    // CPU first: its interval lies inside the wall-clock one.
    log_.handler_cpu_ns = ThreadCpuNs() - start_cpu_ns_;
    log_.latency_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
    if (service_->log_) service_->log_(log_);
    return s;
  }

  PlannerService* service_;
  grpc::ServerContext* ctx_;
  Clock::time_point start_;
  int64_t start_cpu_ns_;
  RequestLog log_;
};

// One of max_concurrent_plans computations; released on destruction.
class PlannerService::Slot {
 public:
  explicit Slot(PlannerService* s) : service_(s) {
    const int32_t before = service_->running_.fetch_add(1);
    held_ = before < service_->options_.max_concurrent_plans;
    if (!held_) service_->running_.fetch_sub(1);
  }
  ~Slot() {
    if (held_) service_->running_.fetch_sub(1);
  }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  absl::Status status() const {
    if (held_) return absl::OkStatus();
    return Error(ErrorKind::kResourceLimit,
                 absl::StrCat("server busy: ", service_->options_.max_concurrent_plans,
                              " computations already running (--max-concurrent-plans); retry "
                              "later or on another replica"));
  }

 private:
  PlannerService* service_;
  bool held_ = false;
};

}  // namespace swapplan

#endif  // SWAPPLAN_SERVICE_CALL_H_
