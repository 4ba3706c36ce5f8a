#include "swapplan/util/error.h"
#include "swapplan/util/shortfall.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace swapplan {
namespace {

constexpr absl::string_view kKindUrl = "type.swapplan.dev/error-kind";
constexpr absl::string_view kRuleUrl = "type.swapplan.dev/rule";
constexpr absl::string_view kShortfallUrl = "type.swapplan.dev/shortfall-bytes";

}  // namespace

absl::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNone: return "none";
    case ErrorKind::kMalformedInput: return "malformed-input";
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kNotFound: return "not-found";
    case ErrorKind::kFingerprintMismatch: return "fingerprint-mismatch";
    case ErrorKind::kInfeasible: return "infeasible";
    case ErrorKind::kQualityRegression: return "quality-regression";
    case ErrorKind::kResourceLimit: return "resource-limit";
    case ErrorKind::kDeadlineExceeded: return "deadline-exceeded";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

absl::StatusCode CodeForKind(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNone: return absl::StatusCode::kOk;
    case ErrorKind::kMalformedInput:
    case ErrorKind::kUsage: return absl::StatusCode::kInvalidArgument;
    case ErrorKind::kNotFound: return absl::StatusCode::kNotFound;
    case ErrorKind::kFingerprintMismatch: return absl::StatusCode::kFailedPrecondition;
    case ErrorKind::kInfeasible:
    case ErrorKind::kResourceLimit: return absl::StatusCode::kResourceExhausted;
    case ErrorKind::kQualityRegression: return absl::StatusCode::kAborted;
    case ErrorKind::kDeadlineExceeded: return absl::StatusCode::kDeadlineExceeded;
    case ErrorKind::kCancelled: return absl::StatusCode::kCancelled;
    case ErrorKind::kUnavailable: return absl::StatusCode::kUnavailable;
    case ErrorKind::kInternal: return absl::StatusCode::kInternal;
  }
  return absl::StatusCode::kInternal;
}

absl::Status Error(ErrorKind kind, absl::string_view message) {
  return WithKind(absl::Status(CodeForKind(kind), message), kind);
}

absl::Status WithKind(absl::Status status, ErrorKind kind) {
  if (status.ok()) return status;
  status.SetPayload(kKindUrl, absl::Cord(std::to_string(static_cast<int>(kind))));
  return status;
}

ErrorKind KindOf(const absl::Status& status) {
  if (status.ok()) return ErrorKind::kNone;
  if (auto p = status.GetPayload(kKindUrl)) {
    int v = 0;
    if (absl::SimpleAtoi(std::string(*p), &v) && v > 0 &&
        v <= static_cast<int>(ErrorKind::kInternal)) {
      return static_cast<ErrorKind>(v);
    }
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kOutOfRange: return ErrorKind::kMalformedInput;
    case absl::StatusCode::kNotFound: return ErrorKind::kNotFound;
    case absl::StatusCode::kFailedPrecondition: return ErrorKind::kFingerprintMismatch;
    case absl::StatusCode::kResourceExhausted: return ErrorKind::kInfeasible;
    case absl::StatusCode::kAborted: return ErrorKind::kQualityRegression;
    case absl::StatusCode::kDeadlineExceeded: return ErrorKind::kDeadlineExceeded;
    case absl::StatusCode::kCancelled: return ErrorKind::kCancelled;
    case absl::StatusCode::kUnavailable: return ErrorKind::kUnavailable;
    default: return ErrorKind::kInternal;
  }
}

absl::Status WithRule(absl::Status status, absl::string_view rule) {
  if (status.ok()) return status;
  status.SetPayload(kRuleUrl, absl::Cord(rule));
  return status;
}

std::optional<std::string> RuleOf(const absl::Status& status) {
  if (auto p = status.GetPayload(kRuleUrl)) return std::string(*p);
  return std::nullopt;
}

absl::Status WithShortfall(absl::Status status, int64_t bytes) {
  if (status.ok()) return status;
  status.SetPayload(kShortfallUrl, absl::Cord(absl::StrCat(bytes)));
  return status;
}

std::optional<int64_t> ShortfallOf(const absl::Status& status) {
  int64_t bytes = 0;
  if (auto p = status.GetPayload(kShortfallUrl); p && absl::SimpleAtoi(std::string(*p), &bytes)) {
    return bytes;
  }
  return std::nullopt;
}

int ExitCode(const absl::Status& status) {
  switch (KindOf(status)) {
    case ErrorKind::kNone: return 0;
    case ErrorKind::kMalformedInput:
    case ErrorKind::kUsage:
    case ErrorKind::kNotFound:
    case ErrorKind::kFingerprintMismatch:
    case ErrorKind::kResourceLimit: return 2;
    case ErrorKind::kInfeasible: return 3;
    case ErrorKind::kQualityRegression: return 4;
    case ErrorKind::kDeadlineExceeded:
    case ErrorKind::kCancelled:
    case ErrorKind::kUnavailable:
    case ErrorKind::kInternal: return 1;
  }
  return 1;
}

}  // namespace swapplan
