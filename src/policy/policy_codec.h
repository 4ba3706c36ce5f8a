// Internal pieces of policy_io: the proto conversion (policy_proto.cc) and
// the JSON form (policy_json.cc). Not installed. The device conversion is
// also the planner service's (src/service/convert.cc): the service's
// messages carry this schema's DeviceModel. The JSON reader fills the
// proto message so that both forms share FromProto's checks and its v1 -> v2
// conversion (docs/policy-format.md).
#ifndef SWAPPLAN_SRC_POLICY_POLICY_CODEC_H_
#define SWAPPLAN_SRC_POLICY_POLICY_CODEC_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policy.pb.h"
#include "swapplan/policy/policy.h"

namespace swapplan::internal_policy {

inline constexpr char kPolicyFormat[] = "swapplan-policy";

// "0x%016x".
std::string Hex(uint64_t v);

// Every field of `d` (its memory tiers included) into `out`, and back:
// DeviceFromProto(DeviceToProto(d)) == d (counts over INT32_MAX clamp).
// No validation (DeviceModel::Validate is the caller's). O(tiers).
void DeviceToProto(const DeviceModel& d, proto::DeviceModel* out);
DeviceModel DeviceFromProto(const proto::DeviceModel& in);
// One memory tier, both ways (what DeviceToProto / DeviceFromProto do per
// tier).
void TierToProto(const MemoryTier& t, proto::MemoryTier* out);
MemoryTier TierFromProto(const proto::MemoryTier& in);

// The message of `policy` in the current schema (kPolicyFormatVersion),
// with the v1 fields (budget, bandwidths) repeating the device model.
void ToProto(const Policy& policy, proto::Policy* out);

// The policy in `in` (schema v1 or v2; v1 converted, docs/policy-format.md),
// checked with Policy::Validate when `validate`. InvalidArgument naming
// `source` and the field.
absl::StatusOr<Policy> FromProto(const proto::Policy& in, const std::string& source,
                                 bool validate);

// The JSON form of `policy` (proto field names; 64-bit hashes and masks as
// hex strings).
nlohmann::json ToJson(const Policy& policy);

// Reads the JSON form into `out`. Unknown keys, wrong types and values out
// of their field's range are InvalidArgument naming `source` and the JSON
// path ("p.json: JSON $.items[3].swap_in_op: ...").
absl::Status ReadJson(const nlohmann::json& j, const std::string& source, proto::Policy* out);

}  // namespace swapplan::internal_policy

#endif  // SWAPPLAN_SRC_POLICY_POLICY_CODEC_H_
