// Reading and writing policies (binary protobuf or JSON, optionally gzip),
// and the trace fingerprint a policy is tied to. The schema, every field,
// the v1 -> v2 conversion and the streaming fingerprint are in
// docs/policy-format.md.
//
//   SWAPPLAN_RETURN_IF_ERROR(WritePolicy(policy, "policy.pb"));   // by name:
//   SWAPPLAN_ASSIGN_OR_RETURN(Policy p, ReadPolicy("policy.json")); // .json = JSON
//   PolicyFingerprint fp = ComputeFingerprint(trace, /*iteration=*/0);
//   SWAPPLAN_RETURN_IF_ERROR(CheckFingerprint(p, trace));
//
// JSON form (field names as in proto/policy.proto; schema v2):
//   {"format": "swapplan-policy", "format_version": 2,
//    "fingerprint": {"op_sequence_hash": "0x1234abcd...", "iteration_ops": 812, "iteration": 0},
//    "device": {"name": "custom", "capacity_bytes": 68719476736, "reserve_bytes": 0,
//               "h2d_bandwidth_bytes_per_s": 2.5e10, "d2h_bandwidth_bytes_per_s": 2.5e10,
//               "copy_latency_ns": 0, "copy_engines": 2, "compute_time_scale": 1.0, ...},
//    "device_budget_bytes": 68719476736, "h2d_bandwidth_bytes_per_s": 2.5e10, ...  (v1 copies)
//    "planner": "chameleon", "parameters": [{"name": "score_c", "value": "1"}],
//    "items": [{"tensor_id": 42, "swap_out_op": 10, "release_op": 12, "swap_in_op": 30,
//               "first_use_op": 33, "size_bytes": 1048576,
//               "runtime_key": {"op_count": 2, "op_mask": "0x5", "op_history": "0x0300",
//                               "dtype": "bfloat16", "size_bytes": 1048576, "shape": [512, 1024],
//                               "mask_bits": 32}}],
//    "runtime": {"op_names": ["linear", "relu"], "op_ranks": [0, 1], "mask_bits": 32,
//                "op_sequence": [0, 4, 1, ...],
//                "items": [{"decision": {"phase": "FORWARD", "phase_ordinal": 10, "ordinal": 10},
//                           "use_index": 1, "shape_hash": "0x...", "release": {...},
//                           "swap_in": {...}, "first_use": {...}}]}}
// Advisor policies add "schedule" and "pool"; items may carry "action",
// "recompute_ns", "release_waits_for_copy", "wraps" and "clean" (written
// only when not the default). 64-bit hashes and masks are hex strings so
// that JSON readers without 64-bit integers keep them exact.
//
// Reading is strict: an unknown key, a value of the wrong type or out of
// its field's range is an error naming the JSON path; schema v1 files are
// converted (device model from the budget and bandwidths, no runtime
// section; Policy::format_version says 1).
#ifndef SWAPPLAN_POLICY_POLICY_IO_H_
#define SWAPPLAN_POLICY_POLICY_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// The schema version written; 1 and 2 are read.
inline constexpr int kPolicyFormatVersion = 2;

// Fingerprint of iteration `iteration` of `trace`. Requires a valid index.
// O(ops of the iteration + total op-name bytes).
PolicyFingerprint ComputeFingerprint(const Trace& trace, int32_t iteration);

// OK when `policy` was made for an iteration with the same op sequence as
// iteration policy.fingerprint.iteration of `trace`; FailedPrecondition
// naming both fingerprints otherwise (and when that iteration does not exist).
absl::Status CheckFingerprint(const Policy& policy, const Trace& trace);

// Reads a policy in either form (sniffed from the content), gzip or not, of
// schema v1 or v2, and validates it (Policy::Validate). NotFound /
// InvalidArgument (ErrorKind::kMalformedInput) / DataLoss naming the file.
absl::StatusOr<Policy> ReadPolicy(const std::string& path);
// The same without Policy::Validate (format errors are still errors): for
// the checker (sim/checker.h), which reports the items' structural
// problems itself — every one of them, not just the first.
absl::StatusOr<Policy> ReadPolicyForCheck(const std::string& path);
absl::StatusOr<Policy> ParsePolicyJson(absl::string_view json, const std::string& source);
absl::StatusOr<Policy> ParsePolicyBinary(absl::string_view bytes, const std::string& source);

std::string PolicyToJson(const Policy& policy);
std::string PolicyToBinary(const Policy& policy);

// Writes atomically: JSON for *.json / *.json.gz, binary otherwise; gzip
// for *.gz.
absl::Status WritePolicy(const Policy& policy, const std::string& path);

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_POLICY_IO_H_
