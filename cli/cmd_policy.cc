// swapplan policy upgrade POLICY --trace TRACE [--iteration N] [-o OUT]
//
// Rewrites a policy (schema v1, or v2) as a self-contained schema v2 policy
// (docs/policy-format.md): the device model comes from the v1 budget and
// bandwidths (converted on read), the runtime section — op-name table, op
// sequence, per-item anchors — and the items' runtime keys are rebuilt from
// the trace iteration the policy was planned on. The trace's iteration must
// have the policy's fingerprint (exit 2 otherwise, [fingerprint-mismatch]).
//
// --iteration N: the trace iteration to rebuild from (default: the one the
// policy's fingerprint names); the written fingerprint names it. -o OUT: the
// upgraded policy (.json: JSON, else binary; gzip for .gz); without -o (or
// "-") the JSON policy goes to stdout. With -o, one summary line goes to
// stdout.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli.h"
#include "trace_input.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::cli {
namespace {

struct UpgradeArgs {
  std::string policy;
  std::string trace;
  int32_t iteration = -1;
  std::string output;
};

absl::Status RunUpgrade(const UpgradeArgs& a) {
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, ReadPolicy(a.policy));
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(a.trace));
  const int32_t from_version = policy.format_version;
  if (a.iteration >= 0) {
    if (a.iteration >= trace.num_iterations()) {
      return Error(ErrorKind::kUsage,
                   absl::StrCat("--iteration ", a.iteration, " is out of range: ", trace.source(),
                                " has ", trace.num_iterations(), " iterations"));
    }
    policy.fingerprint.iteration = a.iteration;
  }
  SWAPPLAN_RETURN_IF_ERROR(CheckFingerprint(policy, trace));
  // Keys as wide as the policy's were (64 only when every item says so).
  int32_t mask_bits = policy.items.empty() ? 32 : 64;
  for (const PolicyItem& it : policy.items) {
    if (it.runtime_key.mask_bits != 64) mask_bits = 32;
  }
  SWAPPLAN_RETURN_IF_ERROR(
      AttachPolicyRuntime(trace, policy.fingerprint.iteration, &policy, mask_bits));
  policy.format_version = kPolicyFormatVersion;
  SWAPPLAN_RETURN_IF_ERROR(policy.Validate());
  if (a.output.empty() || a.output == "-") return WriteOutput("", PolicyToJson(policy));
  SWAPPLAN_RETURN_IF_ERROR(WritePolicy(policy, a.output));
  return WriteOutput(
      "", absl::StrCat("upgraded ", a.policy, " (schema v", from_version, ") -> ", a.output,
                       " (schema v", kPolicyFormatVersion, "): ", policy.items.size(),
                       " items, runtime section of ", policy.runtime.op_sequence.size(),
                       " ops and ", policy.runtime.op_names.size(), " op names from iteration ",
                       policy.fingerprint.iteration, " of ", trace.source(), "\n"));
}

}  // namespace

void SetupPolicy(CLI::App& root, Action* action) {
  CLI::App* sub = root.add_subcommand("policy", "Policy file maintenance.");
  sub->require_subcommand(1);
  auto a = std::make_shared<UpgradeArgs>();
  CLI::App* up = sub->add_subcommand(
      "upgrade", "Rewrite a policy as a self-contained schema v2 policy: device model and "
                 "runtime section rebuilt from the trace it was planned on.");
  up->add_option("policy", a->policy, "Policy file (schema v1 or v2, binary or JSON)")
      ->required();
  up->add_option("--trace", a->trace, "The trace the policy was planned on")->required();
  up->add_option("--iteration", a->iteration,
                 "Trace iteration to rebuild from (default: the policy fingerprint's)")
      ->check(CLI::NonNegativeNumber);
  up->add_option("-o,--output", a->output,
                 "Upgraded policy (.json: JSON, else binary; default: JSON to stdout)");
  up->callback([a, action] { *action = [a]() { return RunUpgrade(*a); }; });
}

}  // namespace swapplan::cli
