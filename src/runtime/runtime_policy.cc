// Runtime: loading policies (matcher, name mapping, trigger tables) and the
// GenPolicy provider call the policy library asks for (the Stable choice is
// the library's: varying/policy_library.h). See runtime.h.
#include <algorithm>
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

absl::StatusOr<int32_t> Runtime::State::AddPolicy(PreparedPolicy prepared) {
  MatchablePolicy& mp = prepared.mp;
  const std::vector<std::string>& names = prepared.names;
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
      PreparedPolicy prepared,
      PrepareForMatching(std::move(policy), {.trace = &trace,
                                             .iteration = iteration,
                                             .rebuild = true,
                                             .mask_bits = s.options.runtime_key_bits}));
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t index, s.AddPolicy(std::move(prepared)));
  s.staged_policy = index;
  return index;
}

absl::StatusOr<int32_t> Runtime::LoadPolicy(Policy policy) {
  State& s = *s_;
  SWAPPLAN_ASSIGN_OR_RETURN(PreparedPolicy prepared, PrepareForMatching(std::move(policy), {}));
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t index, s.AddPolicy(std::move(prepared)));
  s.staged_policy = index;
  return index;
}

void Runtime::ClearPolicy() { s_->staged_policy = -1; }

PlanOutcome Runtime::State::PlanForKey(int32_t record_iteration, LibraryKey& key) {
  absl::StatusOr<PlanOutcome> made = GeneratePolicy(record_iteration, key);
  if (made.ok()) return *std::move(made);
  stats.row.plan_error = std::string(made.status().message());
  return PlanOutcome{};
}

absl::StatusOr<PlanOutcome> Runtime::State::GeneratePolicy(int32_t record_iteration,
                                                           LibraryKey& key) {
  if (options.work_dir.empty()) {
    return absl::FailedPreconditionError(
        "runtime: a policy provider needs RuntimeOptions::work_dir for its records");
  }
  SWAPPLAN_ASSIGN_OR_RETURN(
      Trace trace,
      record->BuildTrace(op_names, RecordMetadata(), record_iteration, record_iteration));
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
  std::vector<std::string>& records = key.Data<RuntimeKey>().records;
  records.push_back(req.record_path);
  if (records.size() > kept) {
    records.erase(records.begin(),
                  records.begin() + static_cast<std::ptrdiff_t>(records.size() - kept));
  }
  req.observed_record_paths = records;
  SWAPPLAN_ASSIGN_OR_RETURN(std::string path, provider(req));
  // No policy this time: the library keeps or clears the key's.
  if (path.empty()) return PlanOutcome{};
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, ReadPolicyFile(path));
  // A self-contained policy is taken as it is; one without a runtime
  // section is prepared from the record it was planned on.
  SWAPPLAN_ASSIGN_OR_RETURN(
      PreparedPolicy prepared,
      PrepareForMatching(std::move(policy),
                         {.trace = &trace, .iteration = 0, .mask_bits = options.runtime_key_bits}));
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t index, AddPolicy(std::move(prepared)));
  const Policy& made = policies[index]->mp.policy;
  stats.row.generated_policy = index;
  stats.row.generated_by = made.planner;
  PlanOutcome out;
  out.policy = index;
  out.simulated_iteration_time_ns = made.simulated_iteration_time_ns;
  out.planner = made.planner;
  return out;
}

}  // namespace swapplan::runtime
