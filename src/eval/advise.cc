#include "swapplan/eval/advise.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/registry.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/error.h"
#include "swapplan/util/units.h"

namespace swapplan {

int64_t BytesMoved(const PlannerOutcome& row) {
  return row.sim ? row.sim->bytes_d2h + row.sim->bytes_h2d : 0;
}

absl::StatusOr<Advice> ChooseAdvice(const Comparison& c, ChainExecutor executor) {
  if (c.rows.empty()) {
    return Error(ErrorKind::kMalformedInput, "advise: the comparison has no planner rows");
  }
  Advice a;
  a.headroom_bytes = c.budget_bytes - c.peak.bytes;
  a.fits_without_swapping = a.headroom_bytes >= 0;
  std::vector<int32_t> candidates;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const PlannerOutcome& r = c.rows[i];
    if (!r.feasible || r.unlimited_memory) continue;
    if (!r.sim) {
      return Error(ErrorKind::kMalformedInput,
                   absl::StrCat("advise: feasible row '", r.planner, "' has no simulation"));
    }
    if (executor != ChainExecutor::kAny) {
      std::string why = r.policy ? WhyNotExecutable(*r.policy, executor)
                                 : std::string("no policy kept (CompareOptions::keep_policies)");
      if (!why.empty()) {
        a.not_executable.push_back({static_cast<int32_t>(i), std::move(why)});
        continue;
      }
    }
    candidates.push_back(static_cast<int32_t>(i));
  }
  auto key = [&](int32_t i) {
    return std::make_tuple(c.rows[i].sim->iteration_time_ns, BytesMoved(c.rows[i]), i);
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](int32_t x, int32_t y) { return key(x) < key(y); });
  a.num_feasible = static_cast<int32_t>(candidates.size());
  if (!candidates.empty()) a.best = candidates[0];
  if (candidates.size() > 1) a.runner_up = candidates[1];
  return a;
}

PlannerSelection AdvisePlanners(int64_t search_time_limit_ns, ChainExecutor executor) {
  PlannerSelection s;
  const bool ordered = executor != ChainExecutor::kAny;
  for (const PlannerInfo& p : RegisteredPlanners()) {
    const std::string name = p.name;
    if (name == "advisor" && ordered) {
      s.skipped.push_back({name, absl::StrCat("its policies reorder the ops and need a size-class "
                                              "pool, which the ", ChainExecutorName(executor),
                                              " executor cannot run")});
    } else if (p.in_default_set) {
      s.run.push_back(name);
      if (name == "hyperoffload" && ordered) {
        s.options.push_back({name, "reorder", "false"});
        if (executor == ChainExecutor::kRuntime) s.options.push_back({name, "tier", "host"});
      }
    } else if (name == "advisor" && search_time_limit_ns > 0) {
      s.run.push_back(name);
      s.options.push_back({name, "time-limit-ns", absl::StrCat(search_time_limit_ns)});
    } else if (name == "advisor") {
      s.skipped.push_back({name, "a genetic search (seconds to minutes): --search 10s runs it, "
                                 "and it runs when nothing else fits"});
    } else if (name == "chain") {
      s.skipped.push_back({name, "GenPolicy's chain of the planners above (replay, runtime)"});
    } else {
      s.skipped.push_back({name, "on request only (compare --planners)"});
    }
  }
  return s;
}

std::string LocalOpText(const Trace& trace, int32_t iteration, int32_t op) {
  return absl::StrCat("op ", op, " (", trace.op_name_at(trace.iteration(iteration).op_begin + op),
                      ")");
}

std::string BytesWithExact(int64_t b) {
  return b < 1024 ? FormatBytes(b) : absl::StrCat(FormatBytes(b), " (", b, " B)");
}

namespace {

// What limits a feasible (or OOM-free) policy.
std::string Limit(const Trace& t, int32_t it, const PlannerOutcome& row) {
  const SimulationResult& r = *row.sim;
  if (row.unlimited_memory) return "unlimited memory (the reference for overhead)";
  if (row.policy ? row.policy->items.empty() : row.items == 0) return "fits without swapping";
  std::vector<std::string> parts;
  if (r.recompute_ns > 0) {
    parts.push_back(absl::StrCat("recomputes ", FormatDurationNs(r.recompute_ns),
                                 " of forward for ", r.recomputed_items, " tensors"));
  }
  if (r.stall_ns > 0 && !r.top_stalls.empty()) {
    const StallSite& s = r.top_stalls.front();
    parts.push_back(
        absl::StrCat("stalls ", FormatDurationNs(r.stall_ns), " in ", r.ops_with_stall,
                     " ops (swap-in ", FormatDurationNs(r.stall_swap_in_ns), ", release ",
                     FormatDurationNs(r.stall_release_ns), "), longest ",
                     FormatDurationNs(s.stall_ns), " at ", LocalOpText(t, it, s.op),
                     " waiting for the ",
                     s.cause == StallCause::kRelease ? "copy out of " : "copy in of ",
                     TensorLabeler(t).Label(s.tensor_id)));
  }
  if (r.bytes_d2h > 0 && r.stall_ns == 0) {
    parts.push_back(absl::StrCat("all ", FormatBytes(r.bytes_d2h), " of copies hidden"));
  }
  // Tiers beyond the host that the policy used (HyperOffload's pool).
  for (size_t k = 1; k < r.tiers.size(); ++k) {
    const TierTraffic& tt = r.tiers[k];
    if (tt.stores == 0 && tt.loads == 0) continue;
    parts.push_back(absl::StrCat("tier ", tt.name, ": ", FormatBytes(tt.bytes_stored),
                                 " stored, ", FormatBytes(tt.bytes_loaded), " loaded, holds ",
                                 FormatBytes(tt.peak_bytes), " at most"));
  }
  std::string out;
  for (const std::string& s : parts) absl::StrAppend(&out, out.empty() ? "" : "; ", s);
  return out;
}

}  // namespace

std::string OutcomeNote(const Trace& t, int32_t it, const PlannerOutcome& row) {
  if (!row.planned) return row.infeasible_reason;
  if (!row.valid) return absl::StrCat("invalid policy (fails the checker): ", row.invalid_reason);
  if (!row.sim) return "not simulated";
  const SimulationResult& r = *row.sim;
  if (!row.unlimited_memory && !row.feasible && !r.oom.occurred && row.reserved_modelled &&
      !row.reserved_fits) {
    return absl::StrCat("fits by allocated bytes only: the allocator model cannot place it "
                        "within the budget as reserved bytes (",
                        BytesWithExact(row.reserved_peak_bytes), " reserved)");
  }
  if (!row.unlimited_memory && r.oom.occurred && r.oom.pool_class >= 0) {
    return absl::StrCat("simulated OOM at ", LocalOpText(t, it, r.oom.op), ": pool class ",
                        r.oom.pool_class, " needed ", r.oom.requested_bytes, " objects with ",
                        r.oom.free_bytes, " free");
  }
  if (!row.unlimited_memory && r.oom.occurred) {
    return absl::StrCat("simulated OOM at ", LocalOpText(t, it, r.oom.op), ": requested ",
                        BytesWithExact(r.oom.requested_bytes), " with ",
                        BytesWithExact(r.oom.free_bytes), " free");
  }
  return Limit(t, it, row);
}

}  // namespace swapplan
