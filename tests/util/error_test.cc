// Typed errors: kinds as status payloads, rule tags, exit statuses.
#include "swapplan/util/error.h"

#include <catch2/catch.hpp>
#include <string>

namespace swapplan {
namespace {

TEST_CASE("Error carries its kind, code and message", "[util][error]") {
  absl::Status st = Error(ErrorKind::kFingerprintMismatch, "policy made for another trace");
  CHECK(st.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(st.message() == "policy made for another trace");
  CHECK(KindOf(st) == ErrorKind::kFingerprintMismatch);
  CHECK(ExitCode(st) == 2);
  absl::Status inf = Error(ErrorKind::kInfeasible, "1 GiB over");
  CHECK(inf.code() == absl::StatusCode::kResourceExhausted);
  CHECK(ExitCode(inf) == 3);
  // Same code, another kind: the payload decides, not the code.
  absl::Status lim = Error(ErrorKind::kResourceLimit, "trace over 4 GiB decompressed");
  CHECK(lim.code() == absl::StatusCode::kResourceExhausted);
  CHECK(KindOf(lim) == ErrorKind::kResourceLimit);
  CHECK(ExitCode(lim) == 2);
  CHECK(ExitCode(Error(ErrorKind::kQualityRegression, "worse")) == 4);
  CHECK(ExitCode(Error(ErrorKind::kInternal, "bug")) == 1);
  CHECK(ExitCode(absl::OkStatus()) == 0);
}

TEST_CASE("statuses without a kind get one from their code", "[util][error]") {
  CHECK(KindOf(absl::OkStatus()) == ErrorKind::kNone);
  CHECK(KindOf(absl::InvalidArgumentError("x")) == ErrorKind::kMalformedInput);
  CHECK(KindOf(absl::DataLossError("x")) == ErrorKind::kMalformedInput);
  CHECK(KindOf(absl::NotFoundError("x")) == ErrorKind::kNotFound);
  CHECK(KindOf(absl::FailedPreconditionError("x")) == ErrorKind::kFingerprintMismatch);
  CHECK(KindOf(absl::ResourceExhaustedError("x")) == ErrorKind::kInfeasible);
  CHECK(KindOf(absl::AbortedError("x")) == ErrorKind::kQualityRegression);
  CHECK(KindOf(absl::UnavailableError("x")) == ErrorKind::kUnavailable);
  CHECK(KindOf(absl::UnknownError("x")) == ErrorKind::kInternal);
  CHECK(ExitCode(absl::InternalError("x")) == 1);
  CHECK(ExitCode(absl::InvalidArgumentError("x")) == 2);
}

TEST_CASE("WithKind and WithRule keep code and message", "[util][error]") {
  absl::Status st = WithKind(absl::InvalidArgumentError("--budget 25"), ErrorKind::kUsage);
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(st.message() == "--budget 25");
  CHECK(KindOf(st) == ErrorKind::kUsage);
  CHECK(WithKind(absl::OkStatus(), ErrorKind::kUsage).ok());
  CHECK_FALSE(RuleOf(st).has_value());
  st = WithRule(st, "release-before-copy-done");
  CHECK(RuleOf(st) == std::optional<std::string>("release-before-copy-done"));
  CHECK(KindOf(st) == ErrorKind::kUsage);
  CHECK(WithRule(absl::OkStatus(), "x").ok());
}

TEST_CASE("kind names", "[util][error]") {
  CHECK(ErrorKindName(ErrorKind::kFingerprintMismatch) == "fingerprint-mismatch");
  CHECK(ErrorKindName(ErrorKind::kMalformedInput) == "malformed-input");
  CHECK(ErrorKindName(ErrorKind::kResourceLimit) == "resource-limit");
  CHECK(ErrorKindName(ErrorKind::kNone) == "none");
  for (int k = 1; k <= static_cast<int>(ErrorKind::kInternal); ++k) {
    const ErrorKind kind = static_cast<ErrorKind>(k);
    INFO(ErrorKindName(kind));
    CHECK(KindOf(Error(kind, "m")) == kind);
    CHECK(Error(kind, "m").code() == CodeForKind(kind));
  }
}

}  // namespace
}  // namespace swapplan
