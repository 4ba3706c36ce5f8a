// Status propagation macros.
//
// Abseil 20220623 (Debian 12) ships absl::Status and absl::StatusOr but not the
// RETURN_IF_ERROR / ASSIGN_OR_RETURN helpers, so swapplan defines its own once.
//
//   absl::StatusOr<Trace> LoadAndCheck(const std::string& path) {
//     SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTrace(path));
//     SWAPPLAN_RETURN_IF_ERROR(CheckSomething(trace));
//     return trace;
//   }
#ifndef SWAPPLAN_UTIL_STATUS_MACROS_H_
#define SWAPPLAN_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// when it is not OK.
#define SWAPPLAN_RETURN_IF_ERROR(expr)                  \
  do {                                                  \
    ::absl::Status swapplan_status_ = (expr);           \
    if (!swapplan_status_.ok()) return swapplan_status_; \
  } while (0)

#define SWAPPLAN_CONCAT_INNER_(a, b) a##b
#define SWAPPLAN_CONCAT_(a, b) SWAPPLAN_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status,
// otherwise move-assigns the value to `lhs` (which may be a declaration).
#define SWAPPLAN_ASSIGN_OR_RETURN(lhs, rexpr) \
  SWAPPLAN_ASSIGN_OR_RETURN_IMPL_(SWAPPLAN_CONCAT_(swapplan_statusor_, __LINE__), lhs, rexpr)

#define SWAPPLAN_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                     \
  if (!statusor.ok()) return std::move(statusor).status();     \
  lhs = std::move(statusor).value()

#endif  // SWAPPLAN_UTIL_STATUS_MACROS_H_
