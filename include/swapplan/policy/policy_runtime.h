// The runtime section of a policy (schema v2; PolicyRuntime in policy.h):
// what the runtime shim needs to match and trigger a policy's items with
// nothing but the policy — the planned iteration's op-name table with the
// frequency ranks the runtime keys are coded with, its op sequence (so the
// runtime can check the streaming fingerprint op by op and name the first op
// that differs), and per item the anchors of its trigger points and its
// tie-breakers. Built from the trace the policy was planned on; every
// planner's policy carries one (Planner::Plan finishes it), and
// `swapplan policy upgrade` adds one to a v1 policy.
//
//   SWAPPLAN_RETURN_IF_ERROR(AttachPolicyRuntime(trace, iteration, &policy));
//   // policy.runtime is filled, and every item's runtime_key recomputed.
//   SWAPPLAN_RETURN_IF_ERROR(ValidatePolicyRuntime(policy));   // what readers check
//
// The op-name table holds the names that occur in the iteration, in the
// order of their first occurrence; op_ranks[i] is the frequency rank of
// op_names[i] (0 = most frequent, ties by name in byte order), exactly the
// ranking of OpFrequencyRanking::ForIteration (policy/runtime_key.h), so the
// codes a runtime derives from the table (OpKeyCodeForRank) are the codes the
// keys were computed with.
//
// Complexity: BuildPolicyRuntime O(ops + names log names + items × uses of
// their tensors + name bytes); ValidatePolicyRuntime O(ops + items + name
// bytes).
#ifndef SWAPPLAN_POLICY_POLICY_RUNTIME_H_
#define SWAPPLAN_POLICY_POLICY_RUNTIME_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// One op_sequence entry: (index into op_names) << 2 | phase.
inline uint32_t EncodeOpSequenceEntry(int32_t name_index, Phase phase) {
  return (static_cast<uint32_t>(name_index) << 2) | static_cast<uint32_t>(phase);
}
inline int32_t OpSequenceName(uint32_t entry) { return static_cast<int32_t>(entry >> 2); }
inline Phase OpSequencePhase(uint32_t entry) { return static_cast<Phase>(entry & 3u); }

// The runtime section of `policy`, planned for iteration `iteration` of
// `trace` (its op indices local to that iteration), with runtime keys of
// `mask_bits` (32 or 64) bits. Per item: the decision op is the tensor's last
// use at or before swap_out_op (swap_out_op itself for Chameleon's items);
// use_index its position among that op's inputs then outputs; the other
// anchors are release_op, swap_in_op and first_use_op.
// InvalidArgument, naming the item and tensor, when an item's tensor is not
// in the trace, not used in the iteration at or before its swap_out_op, or an
// op index is outside the iteration; when the iteration is out of range; as
// OpFrequencyRanking for a bad mask_bits.
absl::StatusOr<PolicyRuntime> BuildPolicyRuntime(const Trace& trace, int32_t iteration,
                                                 const Policy& policy, int32_t mask_bits = 32);

// BuildPolicyRuntime, stored in policy->runtime, and every item's
// runtime_key recomputed from the trace with the same ranking (the key as of
// the decision op: what a runtime computes). Errors as BuildPolicyRuntime;
// `policy` is unchanged on error.
absl::Status AttachPolicyRuntime(const Trace& trace, int32_t iteration, Policy* policy,
                                 int32_t mask_bits = 32);

// Structural checks of a non-empty runtime section against its policy
// (OK when the section is empty): op_ranks as long as op_names, ranks in
// range and distinct; mask_bits 32 or 64; one op_sequence entry per op of
// the fingerprint, each naming a table entry; the fingerprint recomputed
// from the op sequence equals policy.fingerprint.op_sequence_hash; one
// runtime item per policy item, whose anchors name ops of the sequence with
// their phase and phase ordinal, release / swap_in / first_use anchoring the
// item's ops and the decision op at or before swap_out_op. InvalidArgument
// naming the field ("runtime.items[3].decision: ...") otherwise.
absl::Status ValidatePolicyRuntime(const Policy& policy);

// The op-sequence fingerprint of a runtime section (FingerprintState over
// its op sequence). Requires valid name indices.
uint64_t RuntimeFingerprint(const PolicyRuntime& runtime);

// Whether the eager runtime shim (runtime/runtime.h) can execute `policy` on
// the framework's own op order: no schedule (reordered ops), no size-class
// pool, no item that wraps around the iteration boundary, every item on the
// host (tier 0). InvalidArgument naming the first item or field that breaks
// one, as the runtime reports it when loading; the planner chain
// (planners/chain.h) skips such a policy for a runtime. O(items).
absl::Status CheckRuntimeExecutable(const Policy& policy);

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_POLICY_RUNTIME_H_
