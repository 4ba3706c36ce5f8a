// Options of the Chameleon planner (seeds 000/001 §4–5). Every knob of the
// method is here, including the places where the papers are vague; the
// default of each choice and why is stated on the field. The device budget
// and bandwidths are not options: they come with the PlanningProblem (the
// caller subtracts any reserve from the capacity).
//
//   ChameleonOptions o;
//   o.layers = 32;
//   o.score_c = 2.0;
//   SWAPPLAN_RETURN_IF_ERROR(o.Validate());
//   ChameleonPlanner planner(o);
#ifndef SWAPPLAN_PLANNERS_CHAMELEON_OPTIONS_H_
#define SWAPPLAN_PLANNERS_CHAMELEON_OPTIONS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/option_table.h"
#include "swapplan/trace/op_times.h"

namespace swapplan {

// Logical layers per forward or backward segment when neither the option,
// the ops' layer hints nor the trace metadata give a count. Seed 001 Fig. 4:
// Eq. (1) stays accurate while the group count does not exceed the model's
// layer count; 12 is at or below the layer count of nearly every transformer
// trained with swapping (BERT-base and GPT-2 small have 12, Llama-2-7B 32).
inline constexpr int32_t kDefaultLogicalLayers = 12;

// How the two terms of Eq. (2) are normalised over the candidate list. The
// papers say only "normalized".
enum class ScoreNormalization : uint8_t {
  // x / max(x) over the candidates (default: keeps ratios, so a tensor twice
  // as large scores twice the size term; both terms lie in (0, 1]).
  kMax = 0,
  // (x - min) / (max - min); 1 for every candidate when max == min.
  kMinMax = 1,
};

// Transfer-time budget of a logical layer.
enum class LinkBudget : uint8_t {
  // One remaining time per direction (default): PCIe/HCCS links are duplex,
  // a swap-out and a swap-in proceed in parallel.
  kPerDirection = 0,
  // The papers' single remaining_time per layer, charged by both directions.
  kShared = 1,
};

// How the release point (end of a swap-out) is found (§5.4.2 / §4.4.2).
enum class SwapOutCompletion : uint8_t {
  // Default. The d2h copies run as one FIFO stream in swap-out order on the
  // per-op time estimates (Eq. (1) per op); the release point is the op
  // running when the copy completes — exactly what the checker replays. The
  // papers' layer search made exact at op granularity: a copy may span
  // layers, and queueing behind earlier copies is accounted for.
  kD2hQueue = 0,
  // The papers as written: from the layer of the last forward use, search
  // forward for a layer whose remaining d2h time covers the copy, charge it
  // there, and release after the last op of that layer (the layer model
  // cannot say where inside the layer the copy ends). Two fixes, since the
  // layer model ignores FIFO order and copies longer than a layer: the
  // release is never earlier than the d2h-queue completion, and when no
  // layer fits before the swap-in the queue completion is used. A release
  // that leaves no op off the device (release >= swap-in - 1) drops the
  // swap, in both modes.
  kLayerSearch = 1,
};

// Where a candidate's idle window starts when counting the MREs it covers
// (Eq. (2)) and deciding whether it is a candidate at all.
enum class IdleWindowStart : uint8_t {
  // Default: after the op during which its copy out could complete at the
  // earliest (idle d2h stream). Ops before that can never be relieved by it.
  kEarliestRelease = 0,
  // The papers: right after the last forward use.
  kLastForwardUse = 1,
};

// When the candidate list is rebuilt and rescored.
enum class CandidateRebuild : uint8_t {
  // Default, Algorithm 2 as written: the simulator walks the whole CL in
  // score order per pass (skipping candidates whose window no longer covers
  // an MRE); the CL is rebuilt when the pass ends with MREs left.
  kPerPass = 0,
  // After every selected tensor (exact greedy on current MRE counts; one
  // pass per selection, so O(selections × candidates) — small traces).
  kPerSelection = 1,
};

// What happens when a pass ends with no candidate fitting any layer.
enum class StallFallback : uint8_t {
  // Default. Walk the pass's CL once more, in the same order: every
  // candidate that still covers an MRE is placed — in a layer if one fits
  // now (its last MRE may have moved earlier), else with the stall fallback
  // — until the MRL is empty; then the CL is rebuilt as usual. Normal
  // placements already work this way within a pass (Algorithm 2 schedules a
  // whole CL per pass); this treats stall placements alike. One pass per
  // round in the stall regime.
  kBatched = 0,
  // The papers as written (§5.4.1 / Algorithm 2): one stall placement, then
  // the CL is rebuilt and rescored and every candidate retried. Exact, but a
  // pass costs O(c log c) for c candidates and the stall regime (a link too
  // slow for any layer to hide a copy) needs one pass per swapped tensor:
  // O(swaps × c log c) — hours on a 1M-op trace over a slow link.
  kOnePerPass = 1,
};

// Whether a release point may come before the copy out completes. The copy
// out of a tensor can only start after its last forward use, and the d2h
// link moves bandwidth × time: when the bytes that must be off the device by
// an op exceed what the link can copy before it, no release point "where the
// copy completes" reaches the budget, however the swaps are chosen.
enum class ReleaseWait : uint8_t {
  // Default. When Algorithm 2, its repair rounds and the maximal fallback
  // leave ops above the budget, the release-wait fallback (release_wait.cc)
  // lets releases come early: op k's allocation then waits for the copy out
  // to finish (the custom record-stream event wait, seed 001 §6.2), a stall
  // on the compute stream priced by the planner and the simulator. Budgets
  // that only a stall can reach become feasible — with the stall, instead of
  // a ResourceExhausted — and the items carry release_waits_for_copy.
  kWhenNeeded = 0,
  // The papers as written: a block is released only once its copy out has
  // completed (§5.4.2); such budgets are infeasible.
  kNever = 1,
};

struct ChameleonOptions {
  // Logical layers L per forward and per backward segment (each micro-batch
  // has its own segments). 0: the number of distinct layer hints on the
  // iteration's FORWARD ops, else the trace metadata's model_layers, else
  // kDefaultLogicalLayers. Hints come first because on a pipeline stage they
  // count this rank's layers while model_layers counts the whole model.
  int32_t layers = 0;
  // Logical layers per OPTIMIZER segment (the optimizer is grouped apart).
  int32_t optimizer_layers = 1;
  // C of Eq. (2): weight of the size term against the MRE-count term.
  double score_c = 1.0;
  // Tensors smaller than this are never swapped (seed 001 §5.3: small copies
  // use the link poorly). 1 MiB takes ~42 us at 25 GB/s, an order above the
  // ~5-10 us launch cost of a copy.
  int64_t min_tensor_bytes = 1 << 20;
  ScoreNormalization normalization = ScoreNormalization::kMax;
  LinkBudget link_budget = LinkBudget::kPerDirection;
  SwapOutCompletion swap_out_completion = SwapOutCompletion::kD2hQueue;
  IdleWindowStart idle_window_start = IdleWindowStart::kEarliestRelease;
  CandidateRebuild candidate_rebuild = CandidateRebuild::kPerPass;
  StallFallback stall_fallback = StallFallback::kBatched;
  // Per-op time estimates; auto = recorded durations when every op has one,
  // else Eq. (1). `swapplan check` uses the same default.
  OpTimeModel op_time_model = OpTimeModel::kAuto;
  // > 0: T_iter for Eq. (1) instead of the recorded wall time (ns).
  int64_t iteration_time_ns = 0;
  // Width of the runtime-key op mask (seed 001 Appendix A): 32 or 64.
  int32_t runtime_key_mask_bits = 32;
  // Rounds of Algorithm 2 (the first plus release-point repair rounds)
  // before giving up on it. Each round costs O(ops + windows log ops); on
  // random traces 99% of plans need at most 3, but a saturated d2h link
  // near the feasibility boundary can make each round gain little (a 1M-op
  // trace took 165 rounds and 13 s uncapped).
  int32_t max_rounds = 8;
  // Last resort when Algorithm 2 and the release-point repair rounds end
  // with MREs left: swap every candidate for its whole idle window (swap-in
  // at its first backward use, then moved earlier where memory allows). The
  // budget is declared infeasible only when that fails too.
  bool maximal_fallback = true;
  // Early releases that make the compute stream wait for a copy out, when
  // nothing else reaches the budget (see ReleaseWait).
  ReleaseWait release_wait = ReleaseWait::kWhenNeeded;

  // InvalidArgument naming the field when a value is out of range.
  absl::Status Validate() const;
  // Every option as (name, value) in declaration order, as policies record
  // them (ChameleonOptionTable()).
  std::vector<std::pair<std::string, std::string>> ToParameters() const;
  // Sets one option by its ToParameters() name, with '-' accepted for '_'
  // (`compare --planner-option chameleon.min-tensor-bytes=0`, `plan
  // --min-tensor-bytes 0`), and the value as ToParameters() writes it (sizes
  // also as `512KiB`, durations as `1.5s`, booleans also as 1/0). So every
  // parameter a policy records can be set again. Changes nothing and
  // returns a usage error for an unknown name or a bad value; range checks
  // are Validate()'s.
  absl::Status Set(absl::string_view name, absl::string_view value);
};

// The one declaration of every option (planners/option_table.h): names,
// help, defaults and parsers for ToParameters, Set, `plan`'s flags and
// `compare --planner-option chameleon.NAME=VALUE`.
const OptionTable<ChameleonOptions>& ChameleonOptionTable();

absl::string_view ScoreNormalizationName(ScoreNormalization v);  // "max", "minmax"
absl::string_view LinkBudgetName(LinkBudget v);                  // "per-direction", "shared"
absl::string_view SwapOutCompletionName(SwapOutCompletion v);    // "d2h-queue", "layer-search"
absl::string_view IdleWindowStartName(IdleWindowStart v);  // "earliest-release", "last-forward-use"
absl::string_view CandidateRebuildName(CandidateRebuild v);  // "per-pass", "per-selection"
absl::string_view StallFallbackName(StallFallback v);        // "batched", "one-per-pass"
absl::string_view ReleaseWaitName(ReleaseWait v);            // "when-needed", "never"
bool ParseScoreNormalization(absl::string_view s, ScoreNormalization* out);
bool ParseLinkBudget(absl::string_view s, LinkBudget* out);
bool ParseSwapOutCompletion(absl::string_view s, SwapOutCompletion* out);
bool ParseIdleWindowStart(absl::string_view s, IdleWindowStart* out);
bool ParseCandidateRebuild(absl::string_view s, CandidateRebuild* out);
bool ParseStallFallback(absl::string_view s, StallFallback* out);
bool ParseReleaseWait(absl::string_view s, ReleaseWait* out);

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_CHAMELEON_OPTIONS_H_
