// Typed errors: what kind of failure an absl::Status is, carried as a
// payload on the status rather than as words in its message, so that the
// CLI (exit status, SPEC §10), the planner service (gRPC code) and the
// runtime (C API error code) decide from a value, never by matching text.
//
//   return Error(ErrorKind::kFingerprintMismatch,
//                absl::StrCat("policy made for ", a, ", trace has ", b));
//   ...
//   if (KindOf(status) == ErrorKind::kInfeasible) return 3;
//   int code = ExitCode(status);            // 0, 1, 2, 3 or 4
//
// A rule tag (e.g. "free-before-alloc", the names validation messages put
// in brackets) may ride along as a second payload: WithRule / RuleOf.
//
// A status without a kind payload gets one derived from its code
// (KindOf's table below), so statuses from code that predates the kinds,
// from protobuf or from abseil still map to the right exit status.
#ifndef SWAPPLAN_UTIL_ERROR_H_
#define SWAPPLAN_UTIL_ERROR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace swapplan {

enum class ErrorKind : uint8_t {
  kNone = 0,             // OK status
  kMalformedInput = 1,   // a trace, policy, baseline or file breaks its format (exit 2)
  kUsage = 2,            // bad command-line flags or arguments (exit 2)
  kNotFound = 3,         // a named file, planner, preset or cache entry does not exist (exit 2)
  kFingerprintMismatch = 4,  // a policy applied to another op sequence (exit 2)
  kInfeasible = 5,       // no policy of the planner reaches the budget (exit 3)
  kQualityRegression = 6,    // regress found a policy-quality regression (exit 4)
  kResourceLimit = 7,    // over a configured limit: decompressed bytes, upload size (exit 2)
  kDeadlineExceeded = 8, // a deadline passed before any result (exit 1)
  kCancelled = 9,        // the caller went away (exit 1)
  kUnavailable = 10,     // a service or device could not be reached (exit 1)
  kInternal = 11,        // a bug or an environment failure (exit 1)
};

// "malformed-input", "usage", "not-found", "fingerprint-mismatch",
// "infeasible", "quality-regression", "resource-limit", "deadline-exceeded",
// "cancelled", "unavailable", "internal", "none".
absl::string_view ErrorKindName(ErrorKind kind);

// The absl code a kind is reported with (kMalformedInput and kUsage ->
// InvalidArgument, kNotFound -> NotFound, kFingerprintMismatch ->
// FailedPrecondition, kInfeasible and kResourceLimit -> ResourceExhausted,
// kQualityRegression -> Aborted, kDeadlineExceeded -> DeadlineExceeded,
// kCancelled -> Cancelled, kUnavailable -> Unavailable, kInternal ->
// Internal).
absl::StatusCode CodeForKind(ErrorKind kind);

// A non-OK status of CodeForKind(kind) with `message` and the kind payload.
// Requires kind != kNone.
absl::Status Error(ErrorKind kind, absl::string_view message);

// `status` with its kind payload set to `kind` (message and code kept; an
// OK status stays OK).
absl::Status WithKind(absl::Status status, ErrorKind kind);

// The kind of `status`: its payload when it has one, else derived from the
// code: OK -> kNone; InvalidArgument, DataLoss, OutOfRange -> kMalformedInput;
// NotFound -> kNotFound; FailedPrecondition -> kFingerprintMismatch;
// ResourceExhausted -> kInfeasible; Aborted -> kQualityRegression;
// DeadlineExceeded, Cancelled, Unavailable -> the same kinds; anything else
// -> kInternal.
ErrorKind KindOf(const absl::Status& status);

// `status` with the rule tag `rule` attached (OK stays OK).
absl::Status WithRule(absl::Status status, absl::string_view rule);
// The rule tag, when one is attached.
std::optional<std::string> RuleOf(const absl::Status& status);

// SPEC §10 exit status of a command that ended with `status`: 0 OK, 1
// internal (kInternal, kDeadlineExceeded, kCancelled, kUnavailable), 2 bad
// input or usage (kMalformedInput, kUsage, kNotFound, kFingerprintMismatch,
// kResourceLimit), 3 infeasible, 4 quality regression.
int ExitCode(const absl::Status& status);

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_ERROR_H_
