// The planner chain (chain.h).
#include "swapplan/planners/chain.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/sim/checker.h"
#include "swapplan/util/error.h"
#include "swapplan/util/shortfall.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan {

absl::string_view ChainExecutorName(ChainExecutor e) {
  switch (e) {
    case ChainExecutor::kAny:
      return "any";
    case ChainExecutor::kRuntime:
      return "runtime";
    case ChainExecutor::kMatched:
      break;
  }
  return "matched";
}

bool ParseChainExecutor(absl::string_view name, ChainExecutor* out) {
  for (ChainExecutor e : {ChainExecutor::kAny, ChainExecutor::kMatched, ChainExecutor::kRuntime}) {
    if (name == ChainExecutorName(e)) {
      *out = e;
      return true;
    }
  }
  return false;
}

absl::Status PlannerChainOptions::Validate() const {
  if (planners.empty()) {
    return absl::InvalidArgumentError("chain options: planners is empty; name at least one");
  }
  for (size_t i = 0; i < planners.size(); ++i) {
    const std::string& p = planners[i];
    if (p == "chain" || p == "ideal") {
      return absl::InvalidArgumentError(absl::StrCat(
          "chain options: planners[", i, "] is '", p, "'; the chain cannot hold ",
          p == "chain" ? "itself" : "ideal (it plans for unlimited memory)"));
    }
    if (FindPlanner(p) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("chain options: planners[", i,
                                                     "]: unknown planner '", p,
                                                     "' (known: ", PlannerNames(), ")"));
    }
    if (std::find(planners.begin(), planners.begin() + static_cast<std::ptrdiff_t>(i), p) !=
        planners.begin() + static_cast<std::ptrdiff_t>(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("chain options: planners[", i, "]: '", p, "' is named twice"));
    }
  }
  if (search_time_limit_ns < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chain options: search_time_limit_ns is ", search_time_limit_ns, "; must be >= 0"));
  }
  return absl::OkStatus();
}

const OptionTable<PlannerChainOptions>& PlannerChainOptionTable() {
  using O = PlannerChainOptions;
  static const OptionTable<O> table({
      {"planners", OptionType::kList,
       "Planners tried in this order until one's policy passes the checker at the budget", "",
       [](const O& o) { return absl::StrJoin(o.planners, ","); },
       [](O& o, absl::string_view v) -> absl::Status {
         std::vector<std::string> names;
         for (absl::string_view part : absl::StrSplit(v, ',', absl::SkipEmpty())) {
           if (FindPlanner(part) == nullptr) {
             return Error(ErrorKind::kUsage, absl::StrCat("unknown planner '", part,
                                                          "' (known: ", PlannerNames(), ")"));
           }
           names.emplace_back(part);
         }
         o.planners = std::move(names);
         return absl::OkStatus();
       }},
      {"search_time_limit_ns", OptionType::kDurationNs,
       "Time limit of a searching member (the advisor), e.g. 10s (0 = its own)", "",
       [](const O& o) { return absl::StrCat(o.search_time_limit_ns); },
       [](O& o, absl::string_view v) { return ParseOptionDurationNs(v, &o.search_time_limit_ns); }},
      {"executable", OptionType::kChoice,
       "What runs the policy: any (simulator), matched (a replay's matcher: items only) or "
       "runtime (the eager runtime shim: also no wrapping item, host tier only)",
       "any, matched, runtime",
       [](const O& o) { return std::string(ChainExecutorName(o.executable)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseChainExecutor, &o.executable, "any, matched, runtime");
       }},
  });
  return table;
}

absl::Status ChainPlanner::SetOption(absl::string_view name, absl::string_view value) {
  const size_t dot = name.find('.');
  if (dot == absl::string_view::npos) {
    SWAPPLAN_RETURN_IF_ERROR(PlannerChainOptionTable().SetValidated("chain", &options_, name, value));
    // Members are made again with the new settings; given ones configured again.
    for (auto it = members_.begin(); it != members_.end();) {
      if (given_.count(it->first) > 0) {
        SWAPPLAN_RETURN_IF_ERROR(Configure(it->first, *it->second));
        ++it;
      } else {
        it = members_.erase(it);
      }
    }
    return absl::OkStatus();
  }
  const std::string member(name.substr(0, dot));
  const std::string option(name.substr(dot + 1));
  absl::StatusOr<std::unique_ptr<Planner>> probe = CreatePlanner(member);
  if (!probe.ok()) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("chain option ", name, ": ", probe.status().message()));
  }
  SWAPPLAN_RETURN_IF_ERROR((*probe)->SetOption(option, value));
  member_options_.emplace_back(member, option, std::string(value));
  if (auto it = members_.find(member); it != members_.end()) {
    SWAPPLAN_RETURN_IF_ERROR(it->second->SetOption(option, value));
  }
  return absl::OkStatus();
}

std::vector<OptionInfo> ChainPlanner::DescribeOptions() const {
  return PlannerChainOptionTable().Describe(options_);
}

absl::Status ChainPlanner::SetMember(std::unique_ptr<Planner> planner) {
  const std::string name = planner->name();
  SWAPPLAN_RETURN_IF_ERROR(Configure(name, *planner));
  given_.insert(name);
  members_[name] = std::move(planner);
  return absl::OkStatus();
}

absl::Status ChainPlanner::Configure(const std::string& name, Planner& p) const {
  // The chain's settings of the member, then the member options given.
  if (name == "hyperoffload" && options_.executable != ChainExecutor::kAny) {
    SWAPPLAN_RETURN_IF_ERROR(p.SetOption("reorder", "false"));
    if (options_.executable == ChainExecutor::kRuntime) {
      SWAPPLAN_RETURN_IF_ERROR(p.SetOption("tier", "host"));
    }
  }
  if (p.UsesSeedPolicies() && options_.search_time_limit_ns > 0) {
    SWAPPLAN_RETURN_IF_ERROR(
        p.SetOption("time-limit-ns", absl::StrCat(options_.search_time_limit_ns)));
  }
  for (const auto& [member, option, value] : member_options_) {
    if (member == name) SWAPPLAN_RETURN_IF_ERROR(p.SetOption(option, value));
  }
  return absl::OkStatus();
}

absl::StatusOr<Planner*> ChainPlanner::Member(const std::string& name) {
  auto made = members_.find(name);
  if (made != members_.end()) return made->second.get();
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Planner> p, CreatePlanner(name));
  SWAPPLAN_RETURN_IF_ERROR(Configure(name, *p));
  Planner* raw = p.get();
  members_[name] = std::move(p);
  return raw;
}

std::string WhyNotExecutable(const Policy& p, ChainExecutor executor) {
  if (executor == ChainExecutor::kAny) return "";
  if (!p.schedule.empty()) return "the policy reorders the ops (a schedule)";
  if (!p.pool.empty()) return "the policy needs a size-class memory pool";
  if (executor == ChainExecutor::kRuntime) {
    if (absl::Status st = CheckRuntimeExecutable(p); !st.ok()) return std::string(st.message());
  }
  return "";
}

absl::StatusOr<Policy> ChainPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  attempts_.clear();
  CheckOptions check;
  check.device = problem.device;
  for (const std::string& name : options_.planners) {
    SWAPPLAN_ASSIGN_OR_RETURN(Planner * member, Member(name));
    ChainAttempt a;
    a.planner = name;
    if (member->AlwaysReorders() && options_.executable != ChainExecutor::kAny) {
      a.skipped = true;
      a.reason = absl::StrCat("not run: its policies reorder the ops and need a size-class pool, "
                              "which a ", ChainExecutorName(options_.executable),
                              " executor cannot run");
      attempts_.push_back(std::move(a));
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<Policy> policy = member->Plan(problem);
    a.plan_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
    if (!policy.ok()) {
      if (KindOf(policy.status()) != ErrorKind::kInfeasible) {
        return absl::Status(policy.status().code(),
                            absl::StrCat("chain: ", name, ": ", policy.status().message()));
      }
      a.reason = std::string(policy.status().message());
      a.shortfall_bytes = ShortfallOf(policy.status()).value_or(-1);
      attempts_.push_back(std::move(a));
      continue;
    }
    if (std::string why = WhyNotExecutable(*policy, options_.executable); !why.empty()) {
      a.reason = why;
      attempts_.push_back(std::move(a));
      continue;
    }
    SWAPPLAN_ASSIGN_OR_RETURN(CheckReport report, CheckPolicy(*problem.trace, *policy, check));
    if (!report.clean()) {
      a.reason = report.violations.front().message;
      a.shortfall_bytes = std::max<int64_t>(report.peak_bytes - problem.budget_bytes(), 0);
      attempts_.push_back(std::move(a));
      continue;
    }
    a.fits = true;
    attempts_.push_back(std::move(a));
    return policy;
  }
  // None fits: the unswapped peak and the closest member.
  const ChainAttempt* closest = nullptr;
  for (const ChainAttempt& a : attempts_) {
    if (a.shortfall_bytes < 0) continue;
    if (closest == nullptr || a.shortfall_bytes < closest->shortfall_bytes) closest = &a;
  }
  std::optional<MemoryCurve> own;
  const MemoryCurve* curve = problem.curve;
  if (curve == nullptr) {
    SWAPPLAN_ASSIGN_OR_RETURN(own, ComputeMemoryCurve(*problem.trace));
    curve = &*own;
  }
  const int64_t peak = curve->iterations()[problem.iteration].peak_unswapped.bytes;
  std::string tried;
  for (const ChainAttempt& a : attempts_) {
    absl::StrAppend(&tried, tried.empty() ? "" : "; ", a.planner, ": ",
                    a.shortfall_bytes >= 0 && !a.skipped
                        ? absl::StrCat(FormatBytes(a.shortfall_bytes), " over")
                        : a.reason);
  }
  absl::Status st = absl::ResourceExhaustedError(absl::StrCat(
      "no planner of the chain reaches the budget of ", FormatBytes(problem.budget_bytes()),
      ": unswapped peak ", FormatBytes(peak),
      closest != nullptr ? absl::StrCat("; closest ", closest->planner, ", ",
                                        FormatBytes(closest->shortfall_bytes), " over")
                         : std::string(),
      " (", tried, ")"));
  return closest != nullptr ? WithShortfall(st, closest->shortfall_bytes) : st;
}

}  // namespace swapplan
