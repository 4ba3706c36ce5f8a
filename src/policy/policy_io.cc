// Policy files: reading (either form, sniffed), writing, and the trace
// fingerprint. The proto conversion is policy_proto.cc, the JSON form
// policy_json.cc (policy_codec.h).
#include "swapplan/policy/policy_io.h"

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "policy.pb.h"
#include "policy/policy_codec.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

namespace swapplan {
namespace {

namespace pb = ::swapplan::proto;
using Json = nlohmann::json;
using internal_policy::Hex;

}  // namespace

// ComputeFingerprint is in policy_runtime.cc (protobuf-free: the runtime
// shim links it, see src/meson.build).

absl::Status CheckFingerprint(const Policy& policy, const Trace& trace) {
  const int32_t it = policy.fingerprint.iteration;
  if (it < 0 || it >= trace.num_iterations()) {
    return WithRule(Error(ErrorKind::kFingerprintMismatch,
                          absl::StrCat("policy was made for iteration ", it, " but ",
                                       trace.source(), " has ", trace.num_iterations(),
                                       " iterations [fingerprint-mismatch]")),
                    "fingerprint-mismatch");
  }
  PolicyFingerprint fp = ComputeFingerprint(trace, it);
  if (!(fp == policy.fingerprint)) {
    return WithRule(
        Error(ErrorKind::kFingerprintMismatch,
              absl::StrCat("policy fingerprint (", Hex(policy.fingerprint.op_sequence_hash), ", ",
                           policy.fingerprint.iteration_ops, " ops) does not match iteration ", it,
                           " of ", trace.source(), " (", Hex(fp.op_sequence_hash), ", ",
                           fp.iteration_ops, " ops) [fingerprint-mismatch]")),
        "fingerprint-mismatch");
  }
  return absl::OkStatus();
}

std::string PolicyToJson(const Policy& policy) {
  return internal_policy::ToJson(policy).dump(1) + "\n";
}

std::string PolicyToBinary(const Policy& policy) {
  pb::Policy msg;
  internal_policy::ToProto(policy, &msg);
  return msg.SerializeAsString();
}

namespace {

absl::StatusOr<Policy> ParseJson(absl::string_view json, const std::string& source,
                                 bool validate) {
  Json j;
  try {
    j = Json::parse(json.begin(), json.end());
  } catch (const Json::parse_error& e) {
    // e.byte: the 1-based position where parsing stopped (issue 19: the
    // message names the position and a rule).
    return WithRule(absl::InvalidArgumentError(absl::StrCat(
                        source, ": not valid JSON at byte ", e.byte, " (",
                        EscapeForMessage(e.what(), 200), ") [json-syntax]")),
                    "json-syntax");
  } catch (const Json::exception& e) {  // a number past a double (1e400): out_of_range
    return WithRule(absl::InvalidArgumentError(absl::StrCat(
                        source, ": not valid JSON (", EscapeForMessage(e.what(), 200),
                        ") [json-number]")),
                    "json-number");
  }
  pb::Policy msg;
  SWAPPLAN_RETURN_IF_ERROR(internal_policy::ReadJson(j, source, &msg));
  return internal_policy::FromProto(msg, source, validate);
}

absl::StatusOr<Policy> ParseBinary(absl::string_view bytes, const std::string& source,
                                   bool validate) {
  pb::Policy msg;
  if (!msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": neither a JSON nor a binary swapplan policy"));
  }
  return internal_policy::FromProto(msg, source, validate);
}

absl::StatusOr<Policy> Read(const std::string& path, bool validate) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> in, InputFile::Open(path));
  SWAPPLAN_ASSIGN_OR_RETURN(std::string content, in->ReadAll());
  absl::string_view s = absl::StripLeadingAsciiWhitespace(content);
  if (!s.empty() && s.front() == '{') return ParseJson(content, path, validate);
  return ParseBinary(content, path, validate);
}

}  // namespace

absl::StatusOr<Policy> ParsePolicyJson(absl::string_view json, const std::string& source) {
  return ParseJson(json, source, /*validate=*/true);
}

absl::StatusOr<Policy> ParsePolicyBinary(absl::string_view bytes, const std::string& source) {
  return ParseBinary(bytes, source, /*validate=*/true);
}

absl::StatusOr<Policy> ReadPolicy(const std::string& path) { return Read(path, true); }

absl::StatusOr<Policy> ReadPolicyForCheck(const std::string& path) { return Read(path, false); }

absl::Status WritePolicy(const Policy& policy, const std::string& path) {
  SWAPPLAN_RETURN_IF_ERROR(policy.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out,
                            OutputFile::Open(path, HasGzipSuffix(path)));
  if (TraceFormatForPath(path) == TraceFormat::kJson) {
    out->ostream() << PolicyToJson(policy);
  } else {
    out->ostream() << PolicyToBinary(policy);
  }
  return out->Commit();
}

}  // namespace swapplan
