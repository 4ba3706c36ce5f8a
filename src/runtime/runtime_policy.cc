// Runtime: loading policies (matcher, name mapping, trigger tables), the
// GenPolicy provider call and the choice of the Stable policy. See
// runtime.h.
#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/runtime_state.h"
#include "swapplan/runtime/runtime.h"
#include "runtime/file_io.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

NameId Runtime::State::PolicyName(LoadedPolicy& p, int32_t op) {
  while (static_cast<int32_t>(p.name_of_op.size()) <= op &&
         p.name_of_op.size() < op_names.size()) {
    auto f = p.names.find(op_names[p.name_of_op.size()]);
    p.name_of_op.push_back(f == p.names.end() ? -1 : f->second);
  }
  return op < static_cast<int32_t>(p.name_of_op.size()) ? p.name_of_op[op] : -1;
}

absl::StatusOr<int32_t> Runtime::State::AddPolicy(MatchablePolicy mp,
                                                  const std::vector<std::string>& names) {
  SWAPPLAN_RETURN_IF_ERROR(CheckRuntimeExecutable(mp.policy));
  auto lp = std::make_unique<LoadedPolicy>();
  lp->mp = std::move(mp);
  SWAPPLAN_ASSIGN_OR_RETURN(lp->matcher,
                            CreateMatcher(options.matcher, lp->mp, options.matcher_options));
  for (size_t i = 0; i < names.size(); ++i) lp->names.emplace(names[i], static_cast<NameId>(i));
  const bool naive = options.matcher == MatcherKind::kNaive;
  auto add = [&](std::vector<std::vector<int32_t>>* table, const OpAnchor& a, int32_t item) {
    const int32_t at = naive ? a.ordinal : a.phase_ordinal;
    if (at < 0) return;
    if (static_cast<int32_t>(table->size()) <= at) table->resize(at + 1);
    (*table)[at].push_back(item);
  };
  for (size_t k = 0; k < lp->mp.items.size(); ++k) {
    const MatchableItem& it = lp->mp.items[k];
    const int32_t item = static_cast<int32_t>(k);
    add(&lp->release_at[naive ? 0 : static_cast<int>(it.release.phase)], it.release, item);
    add(&lp->swap_in_at[naive ? 0 : static_cast<int>(it.swap_in.phase)], it.swap_in, item);
  }
  policies.push_back(std::move(lp));
  return static_cast<int32_t>(policies.size()) - 1;
}

absl::StatusOr<int32_t> Runtime::LoadPolicyForTrace(Policy policy, const Trace& trace,
                                                    int32_t iteration) {
  State& s = *s_;
  SWAPPLAN_RETURN_IF_ERROR(policy.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(
      MatchablePolicy mp,
      MakeMatchablePolicy(trace, iteration, std::move(policy), s.options.runtime_key_bits));
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t index, s.AddPolicy(std::move(mp), trace.op_names()));
  s.staged_policy = index;
  return index;
}

absl::StatusOr<int32_t> Runtime::LoadPolicy(Policy policy) {
  State& s = *s_;
  if (policy.runtime.empty()) {
    return absl::InvalidArgumentError(
        "runtime: the policy has no runtime section (schema v1): add one with `swapplan policy "
        "upgrade` or load it with the trace it was made for");
  }
  SWAPPLAN_ASSIGN_OR_RETURN(MatchablePolicy mp, MakeMatchablePolicy(std::move(policy)));
  const std::vector<std::string> names = mp.policy.runtime.op_names;
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t index, s.AddPolicy(std::move(mp), names));
  s.staged_policy = index;
  return index;
}

void Runtime::ClearPolicy() { s_->staged_policy = -1; }

int32_t Runtime::State::BestCandidate(const std::vector<int32_t>& candidates) const {
  bool all_simulated = true;
  for (int32_t c : candidates) {
    const LoadedPolicy& p = *policies[c];
    if (p.runs > 0 && p.mp.policy.simulated_iteration_time_ns <= 0) all_simulated = false;
  }
  int32_t best = -1;
  std::tuple<bool, int64_t, int32_t> best_key{true, std::numeric_limits<int64_t>::max(), 0};
  for (int32_t c : candidates) {
    const LoadedPolicy& p = *policies[c];
    if (p.runs == 0) continue;
    const int64_t time =
        all_simulated ? p.mp.policy.simulated_iteration_time_ns : p.measured_ns / p.runs;
    const std::tuple<bool, int64_t, int32_t> key{p.trouble > 0, time, c};
    if (best < 0 || key < best_key) {
      best = c;
      best_key = key;
    }
  }
  if (best < 0 && !candidates.empty()) best = candidates.back();
  return best;
}

PolicyKey& Runtime::State::KeyFor(const InputSignature& sig) {
  const InputSignature key = options.policies_by_input ? sig : InputSignature{};
  for (PolicyKey& k : keys) {
    if (k.sig == key) return k;
  }
  keys.emplace_back();
  keys.back().sig = key;
  return keys.back();
}

int32_t Runtime::State::ChoosePolicy(Stage for_stage, const InputSignature& sig,
                                     bool* exact) const {
  *exact = true;
  if (for_stage == Stage::kWarmUp) return -1;
  auto pick = [&](const PolicyKey& k) {
    return for_stage == Stage::kStable ? k.stable : k.latest;
  };
  PolicySet set;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (pick(keys[i]) >= 0) set.Insert(keys[i].sig, static_cast<int32_t>(i));
  }
  const PolicySet::Choice c = set.Select(options.policies_by_input ? sig : InputSignature{});
  if (c.index < 0) return -1;
  *exact = c.exact;
  return pick(keys[c.index]);
}

void Runtime::State::PlanForKey(int32_t record_iteration, PolicyKey& key) {
  absl::Status st = GeneratePolicy(record_iteration, key);
  if (st.ok()) return;
  row.plan_error = std::string(st.message());
  if (options.planning == PolicyPlanning::kIteration) key.latest = -1;
}

absl::Status Runtime::State::GeneratePolicy(int32_t record_iteration, PolicyKey& key) {
  if (options.work_dir.empty()) {
    return absl::FailedPreconditionError(
        "runtime: a policy provider needs RuntimeOptions::work_dir for its records");
  }
  SWAPPLAN_ASSIGN_OR_RETURN(
      Trace trace, record->BuildTrace(op_names, RecordMetadata(), record_iteration, record_iteration));
  PolicyRequest req;
  req.record_path =
      absl::StrCat(options.work_dir, "/genpolicy-", genpolicy_records++, ".json.gz");
  req.iteration = 0;
  req.runtime_iteration = iteration;
  req.device_budget_bytes = budget;
  req.work_dir = options.work_dir;
  req.input_signature_hash = key.sig.hash;
  req.input_signature_bytes = key.sig.bytes;
  SWAPPLAN_RETURN_IF_ERROR(WriteTraceFile(trace, req.record_path));
  const size_t kept = options.planning == PolicyPlanning::kObserved
                          ? static_cast<size_t>(options.observed_records)
                          : 1;
  key.records.push_back(req.record_path);
  if (key.records.size() > kept) {
    key.records.erase(key.records.begin(),
                      key.records.begin() + static_cast<std::ptrdiff_t>(key.records.size() - kept));
  }
  req.observed_record_paths = key.records;
  SWAPPLAN_ASSIGN_OR_RETURN(std::string path, provider(req));
  if (path.empty()) {
    // No policy this time: with kIteration the key has none to run.
    if (options.planning == PolicyPlanning::kIteration) key.latest = -1;
    return absl::OkStatus();
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, ReadPolicyFile(path));
  // A self-contained policy is taken as it is; one without a runtime
  // section is prepared from the record it was planned on.
  std::vector<std::string> names;
  absl::StatusOr<MatchablePolicy> mp;
  if (!policy.runtime.empty()) {
    names = policy.runtime.op_names;
    mp = MakeMatchablePolicy(std::move(policy));
  } else {
    names = trace.op_names();
    mp = MakeMatchablePolicy(trace, 0, std::move(policy), options.runtime_key_bits);
  }
  if (!mp.ok()) return mp.status();
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t index, AddPolicy(std::move(*mp), names));
  key.candidates.push_back(index);
  key.latest = index;
  row.generated_policy = index;
  row.generated_by = policies[index]->mp.policy.planner;
  return absl::OkStatus();
}

}  // namespace swapplan::runtime
