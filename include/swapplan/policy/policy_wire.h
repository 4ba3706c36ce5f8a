// A policy's binary form (proto/policy.proto, swapplan.proto.Policy) read
// without the protobuf runtime: for the runtime shim (libswapplan_runtime.so),
// which must not carry or import libprotobuf — a training process has its own
// (PyTorch's), and Debian's static libprotobuf.a cannot be linked into a
// shared object (see swapplan/runtime/swapplan_runtime.h). Everything else
// reads policies with policy_io.h's ReadPolicy.
//
// The decoder walks the protobuf wire format (varints, 64-bit fixed,
// length-delimited fields; repeated scalars packed or not; unknown fields
// skipped, as protobuf does) into a Policy with the same rules as
// ParsePolicyBinary (format string, version, enum ranges, UTF-8 text,
// Policy::Validate). tests/policy/policy_wire_test.cc checks the two agree on
// random policies and on damaged input.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(Policy p, ParsePolicyWire(bytes, "policy.pb"));
//
// Complexity: O(bytes).
#ifndef SWAPPLAN_POLICY_POLICY_WIRE_H_
#define SWAPPLAN_POLICY_POLICY_WIRE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/policy/policy.h"

namespace swapplan {

// The policy in `bytes` (the binary form, not gzip), validated.
// InvalidArgument naming `source` and the byte offset for a truncated or
// corrupt message, or the rule a well-formed message breaks.
absl::StatusOr<Policy> ParsePolicyWire(absl::string_view bytes, const std::string& source);

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_POLICY_WIRE_H_
