// Megatron selective recomputation baseline (see practice.h).
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "planners/baselines/common.h"
#include "swapplan/planners/baselines/practice.h"
#include "swapplan/sim/checker.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

bool HasAny(absl::string_view name, std::initializer_list<absl::string_view> parts) {
  for (absl::string_view p : parts) {
    if (absl::StrContains(name, p)) return true;
  }
  return false;
}

// Lower-cased names of the op-name table, and per name its role.
enum class Role : uint8_t { kNone, kFused, kSoftmax, kBatchedMatmul, kDropout };

Role RoleOf(const std::string& raw) {
  const std::string n = absl::AsciiStrToLower(raw);
  if (HasAny(n, {"backward", "_bwd", "grad"})) return Role::kNone;
  if (HasAny(n, {"flash_attention", "flash_attn", "fusion_attention", "efficient_attention",
                 "cudnn_attention", "fused_attn", "dot_product_attention"})) {
    return Role::kFused;
  }
  if (absl::StrContains(n, "softmax") && !absl::StrContains(n, "log_softmax")) {
    return Role::kSoftmax;
  }
  if (HasAny(n, {"bmm", "matmul"})) return Role::kBatchedMatmul;
  if (absl::StrContains(n, "dropout")) return Role::kDropout;
  return Role::kNone;
}

// The first FORWARD op after `after` (local) that reads one of `tensors`
// and has role `want` (or `alt`); -1 when none before op `limit`.
int32_t FirstConsumerWithRole(const Trace& trace, const IterationInfo& iter,
                              const std::vector<Role>& roles, absl::Span<const TensorId> tensors,
                              int32_t after, int32_t limit, Role want, Role alt) {
  int32_t best = -1;
  for (TensorId t : tensors) {
    absl::Span<const OpIndex> uses = trace.tensor_uses(t);
    for (auto it = std::upper_bound(uses.begin(), uses.end(), iter.op_begin + after);
         it != uses.end() && *it < iter.op_begin + limit; ++it) {
      const OpInfo& op = trace.op(*it);
      if (op.phase != Phase::kForward || (roles[op.name] != want && roles[op.name] != alt)) {
        continue;
      }
      const int32_t local = *it - iter.op_begin;
      if (best < 0 || local < best) best = local;
      break;
    }
  }
  return best;
}

// Ops the matcher follows back from a softmax to QKᵀ at most.
constexpr int kMaxScoreHops = 8;
// Ops from the softmax to attention × V at most.
constexpr int32_t kMaxCoreSpanOps = 64;

}  // namespace

std::vector<AttentionCore> AttentionCores(const Trace& trace, int32_t iteration) {
  const IterationInfo& iter = trace.iteration(iteration);
  std::vector<Role> roles(trace.num_op_names());
  for (NameId i = 0; i < trace.num_op_names(); ++i) roles[i] = RoleOf(trace.op_name(i));
  const int32_t n = iter.num_ops();
  auto role = [&](int32_t local) {
    const OpInfo& op = trace.op(iter.op_begin + local);
    return op.phase == Phase::kForward ? roles[op.name] : Role::kNone;
  };
  // Producer (local op) of each tensor made in this iteration.
  std::vector<int32_t> producer(trace.num_tensors(), -1);
  for (int32_t i = 0; i < n; ++i) {
    for (TensorId t : trace.outputs(iter.op_begin + i)) {
      if (producer[t] < 0) producer[t] = i;
    }
  }
  std::vector<AttentionCore> cores;
  for (int32_t s = 0; s < n; ++s) {
    const Role r = role(s);
    if (r == Role::kFused) {
      cores.push_back({{s}, true});
      continue;
    }
    if (r != Role::kSoftmax) continue;
    // Back from the softmax along its largest input (the scores, not a mask)
    // through scaling / masking ops to the batched matmul that made them.
    int32_t qk = -1, at = s;
    for (int hop = 0; hop < kMaxScoreHops && qk < 0; ++hop) {
      TensorId big = kNoTensor;
      for (TensorId t : trace.inputs(iter.op_begin + at)) {
        if (producer[t] >= 0 && producer[t] < at &&
            (big == kNoTensor || trace.tensor(t).size_bytes > trace.tensor(big).size_bytes)) {
          big = t;
        }
      }
      if (big == kNoTensor) break;
      at = producer[big];
      const Role pr = role(at);
      if (pr == Role::kBatchedMatmul) qk = at;
      if (trace.op(iter.op_begin + at).phase != Phase::kForward || pr == Role::kSoftmax ||
          pr == Role::kFused) {
        break;
      }
    }
    if (qk < 0) continue;  // a router or loss softmax
    // Forward to attention × V: the first batched matmul reading the
    // probabilities, or the output of a dropout on them.
    const int32_t limit = std::min(n, s + kMaxCoreSpanOps);
    int32_t av = FirstConsumerWithRole(trace, iter, roles, trace.outputs(iter.op_begin + s), s,
                                       limit, Role::kBatchedMatmul, Role::kDropout);
    if (av >= 0 && role(av) == Role::kDropout) {
      av = FirstConsumerWithRole(trace, iter, roles, trace.outputs(iter.op_begin + av), av, limit,
                                 Role::kBatchedMatmul, Role::kBatchedMatmul);
    }
    const int32_t last = av >= 0 ? av : s;
    AttentionCore core;
    for (int32_t i = qk; i <= last; ++i) {
      if (trace.op(iter.op_begin + i).phase == Phase::kForward) core.ops.push_back(i);
    }
    cores.push_back(std::move(core));
    s = last;
  }
  return cores;
}

absl::Status SelectiveOptions::Validate() const { return absl::OkStatus(); }

const OptionTable<SelectiveOptions>& SelectiveOptionTable() {
  using O = SelectiveOptions;
  static const OptionTable<O> table({
      {"fused_cores", OptionType::kBool,
       "Treat fused (flash) attention kernels as attention cores (Megatron checkpoints core_attn "
       "with them too)",
       "", [](const O& o) { return std::string(o.fused_cores ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.fused_cores); }},
  });
  return table;
}

absl::Status SelectivePlanner::SetOption(absl::string_view name, absl::string_view value) {
  return SelectiveOptionTable().SetValidated("selective", &options_, name, value);
}

absl::StatusOr<Policy> SelectivePlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  const IterationInfo& iter = trace.iteration(it);
  SWAPPLAN_ASSIGN_OR_RETURN(
      OpDurations durations,
      ComputeOpDurations(trace, it, OpTimeModel::kAuto, 0, problem.device.compute_time_scale));
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));

  std::vector<AttentionCore> cores = AttentionCores(trace, it);
  if (!options_.fused_cores) {
    cores.erase(std::remove_if(cores.begin(), cores.end(),
                               [](const AttentionCore& c) { return c.fused; }),
                cores.end());
  }
  std::vector<int32_t> core_of_op(iter.num_ops(), -1);
  for (size_t c = 0; c < cores.size(); ++c) {
    for (int32_t op : cores[c].ops) core_of_op[op] = static_cast<int32_t>(c);
  }
  // Dropped per core: activations produced by a core op whose every forward
  // use is an op of the same core (not its output, which the projection
  // reads, nor its inputs, which an earlier op made).
  std::map<int32_t, std::vector<ActivationWindow>> groups;
  for (const ActivationWindow& w : ActivationWindows(trace, it)) {
    absl::Span<const OpIndex> uses = trace.tensor_uses(w.tensor);
    auto first = std::lower_bound(uses.begin(), uses.end(), iter.op_begin);
    const int32_t producer = *first - iter.op_begin;
    const int32_t core = core_of_op[producer];
    if (core < 0) continue;
    absl::Span<const TensorId> outs = trace.outputs(*first);
    if (std::find(outs.begin(), outs.end(), w.tensor) == outs.end()) continue;
    bool inside = true;
    for (auto u = first; u != uses.end() && *u < iter.op_end; ++u) {
      if (trace.op(*u).phase == Phase::kForward && core_of_op[*u - iter.op_begin] != core) {
        inside = false;
      }
    }
    if (inside) groups[core].push_back(w);
  }
  Policy p = BaselinePolicy(problem, name(), SelectiveOptionTable().ToParameters(options_));
  for (auto& [core, windows] : groups) {
    int64_t core_ns = 0;
    for (int32_t op : cores[core].ops) core_ns += durations.duration_ns[op];
    AppendGroupRecompute(trace, it, windows, core_ns, &p);
  }
  // Exact recipes (policy/resolver.h): the attention core's stated time
  // covers its own ops; a chain reaching further is charged, and an item
  // whose recipe cannot run (a dropout without a restorable RNG state) is
  // kept on the device.
  SWAPPLAN_RETURN_IF_ERROR(MakeRecomputeExact(problem, &p));
  int64_t total_recompute = 0;
  for (const PolicyItem& item : p.items) total_recompute += item.recompute_ns;
  p.expected_overhead_ns = total_recompute;
  const std::string what =
      cores.empty()
          ? absl::StrCat("no attention core found in iteration ", it,
                         " (no softmax fed by a batched matmul, no fused attention kernel: "
                         "docs/baselines.md), nothing to recompute; the unswapped iteration")
          : absl::StrCat("dropping ", p.items.size(), " activations of ", groups.size(), " of ",
                         cores.size(), " attention cores");
  SWAPPLAN_RETURN_IF_ERROR(CheckPolicyFits(problem, unswapped, what, &p));
  // The peak with the recipes' transients (the checker's exact account).
  CheckOptions check;
  check.device = problem.device;
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport report, CheckPolicy(trace, p, check));
  p.expected_peak_bytes = report.peak_bytes;
  if (report.peak_bytes > problem.budget_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        name(), ": ", what, " peaks at ", report.peak_bytes, " bytes at op ", report.peak_op,
        " while an attention core is recomputed (its transient), ",
        report.peak_bytes - problem.budget_bytes(), " bytes over the budget of ",
        problem.budget_bytes()));
  }
  return p;
}

}  // namespace swapplan
