#include "swapplan/planners/chameleon/options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace swapplan {
namespace {

template <typename E, size_t N>
bool ParseByName(absl::string_view s, const E (&values)[N], absl::string_view (*name)(E), E* out) {
  for (E v : values) {
    if (s == name(v)) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace

absl::string_view ScoreNormalizationName(ScoreNormalization v) {
  return v == ScoreNormalization::kMax ? "max" : "minmax";
}
absl::string_view LinkBudgetName(LinkBudget v) {
  return v == LinkBudget::kPerDirection ? "per-direction" : "shared";
}
absl::string_view SwapOutCompletionName(SwapOutCompletion v) {
  return v == SwapOutCompletion::kD2hQueue ? "d2h-queue" : "layer-search";
}
absl::string_view IdleWindowStartName(IdleWindowStart v) {
  return v == IdleWindowStart::kEarliestRelease ? "earliest-release" : "last-forward-use";
}
absl::string_view CandidateRebuildName(CandidateRebuild v) {
  return v == CandidateRebuild::kPerPass ? "per-pass" : "per-selection";
}

absl::string_view StallFallbackName(StallFallback v) {
  return v == StallFallback::kBatched ? "batched" : "one-per-pass";
}

absl::string_view ReleaseWaitName(ReleaseWait v) {
  return v == ReleaseWait::kWhenNeeded ? "when-needed" : "never";
}

bool ParseScoreNormalization(absl::string_view s, ScoreNormalization* out) {
  constexpr ScoreNormalization kAll[] = {ScoreNormalization::kMax, ScoreNormalization::kMinMax};
  return ParseByName(s, kAll, &ScoreNormalizationName, out);
}
bool ParseLinkBudget(absl::string_view s, LinkBudget* out) {
  constexpr LinkBudget kAll[] = {LinkBudget::kPerDirection, LinkBudget::kShared};
  return ParseByName(s, kAll, &LinkBudgetName, out);
}
bool ParseSwapOutCompletion(absl::string_view s, SwapOutCompletion* out) {
  constexpr SwapOutCompletion kAll[] = {SwapOutCompletion::kD2hQueue,
                                        SwapOutCompletion::kLayerSearch};
  return ParseByName(s, kAll, &SwapOutCompletionName, out);
}
bool ParseIdleWindowStart(absl::string_view s, IdleWindowStart* out) {
  constexpr IdleWindowStart kAll[] = {IdleWindowStart::kEarliestRelease,
                                      IdleWindowStart::kLastForwardUse};
  return ParseByName(s, kAll, &IdleWindowStartName, out);
}
bool ParseCandidateRebuild(absl::string_view s, CandidateRebuild* out) {
  constexpr CandidateRebuild kAll[] = {CandidateRebuild::kPerPass,
                                       CandidateRebuild::kPerSelection};
  return ParseByName(s, kAll, &CandidateRebuildName, out);
}

absl::Status ChameleonOptions::Validate() const {
  auto bad = [](absl::string_view field, auto value, absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("chameleon options: ", field, " is ", value, "; ", rule));
  };
  if (layers < 0) return bad("layers", layers, "must be >= 0 (0 = from the trace)");
  if (optimizer_layers < 1) return bad("optimizer_layers", optimizer_layers, "must be >= 1");
  if (!(score_c >= 0) || !std::isfinite(score_c)) {
    return bad("score_c", score_c, "must be a finite value >= 0");
  }
  if (min_tensor_bytes < 0) return bad("min_tensor_bytes", min_tensor_bytes, "must be >= 0");
  if (iteration_time_ns < 0) {
    return bad("iteration_time_ns", iteration_time_ns, "must be >= 0 (0 = recorded)");
  }
  if (max_rounds < 1) return bad("max_rounds", max_rounds, "must be >= 1");
  if (runtime_key_mask_bits != 32 && runtime_key_mask_bits != 64) {
    return bad("runtime_key_mask_bits", runtime_key_mask_bits, "must be 32 or 64");
  }
  return absl::OkStatus();
}

bool ParseStallFallback(absl::string_view s, StallFallback* out) {
  constexpr StallFallback kAll[] = {StallFallback::kBatched, StallFallback::kOnePerPass};
  return ParseByName(s, kAll, &StallFallbackName, out);
}

bool ParseReleaseWait(absl::string_view s, ReleaseWait* out) {
  constexpr ReleaseWait kAll[] = {ReleaseWait::kWhenNeeded, ReleaseWait::kNever};
  return ParseByName(s, kAll, &ReleaseWaitName, out);
}

const OptionTable<ChameleonOptions>& ChameleonOptionTable() {
  using O = ChameleonOptions;
  using T = OptionType;
  static const OptionTable<O> table({
      {"layers", T::kInt,
       "Logical layers per forward/backward segment (0: layer hints, else metadata "
       "model_layers, else 12)",
       "", [](const O& o) { return absl::StrCat(o.layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.layers); }},
      {"optimizer_layers", T::kInt, "Logical layers per optimizer run", "",
       [](const O& o) { return absl::StrCat(o.optimizer_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.optimizer_layers); }},
      {"score_c", T::kDecimal, "C of Eq. (2): weight of the size term against the MRE count", "",
       [](const O& o) { return absl::StrCat(o.score_c); },
       [](O& o, absl::string_view v) { return ParseOptionDecimal(v, &o.score_c); }},
      {"min_tensor_bytes", T::kBytes, "Smallest tensor to swap, e.g. 1MiB", "",
       [](const O& o) { return absl::StrCat(o.min_tensor_bytes); },
       [](O& o, absl::string_view v) { return ParseOptionBytes(v, &o.min_tensor_bytes); }},
      {"normalization", T::kChoice, "Eq. (2) normalisation", "max, minmax",
       [](const O& o) { return std::string(ScoreNormalizationName(o.normalization)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseScoreNormalization, &o.normalization, "max, minmax");
       }},
      {"link_budget", T::kChoice,
       "Transfer budget of a logical layer: one per direction, or one shared by both (the "
       "papers')",
       "per-direction, shared",
       [](const O& o) { return std::string(LinkBudgetName(o.link_budget)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseLinkBudget, &o.link_budget, "per-direction, shared");
       }},
      {"swap_out_completion", T::kChoice,
       "Release point: d2h-queue (exact FIFO) or layer-search (the papers' per-layer search)",
       "d2h-queue, layer-search",
       [](const O& o) { return std::string(SwapOutCompletionName(o.swap_out_completion)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseSwapOutCompletion, &o.swap_out_completion,
                                  "d2h-queue, layer-search");
       }},
      {"idle_window_start", T::kChoice,
       "Where coverage starts: earliest-release or last-forward-use (the papers')",
       "earliest-release, last-forward-use",
       [](const O& o) { return std::string(IdleWindowStartName(o.idle_window_start)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseIdleWindowStart, &o.idle_window_start,
                                  "earliest-release, last-forward-use");
       }},
      {"candidate_rebuild", T::kChoice, "per-pass (Algorithm 2) or per-selection",
       "per-pass, per-selection",
       [](const O& o) { return std::string(CandidateRebuildName(o.candidate_rebuild)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseCandidateRebuild, &o.candidate_rebuild,
                                  "per-pass, per-selection");
       }},
      {"stall_fallback", T::kChoice, "batched (rest of the pass too) or one-per-pass (the papers')",
       "batched, one-per-pass",
       [](const O& o) { return std::string(StallFallbackName(o.stall_fallback)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseStallFallback, &o.stall_fallback,
                                  "batched, one-per-pass");
       }},
      {"op_time_model", T::kChoice,
       "Per-op times: recorded durations, Eq. (1), or auto (recorded when every op has one)",
       "auto, eq1, recorded",
       [](const O& o) { return std::string(OpTimeModelName(o.op_time_model)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseOpTimeModel, &o.op_time_model, "auto, eq1, recorded");
       }},
      {"iteration_time_ns", T::kDurationNs,
       "T_iter for Eq. (1), e.g. 850ms (0: the recorded wall time)", "",
       [](const O& o) { return absl::StrCat(o.iteration_time_ns); },
       [](O& o, absl::string_view v) { return ParseOptionDurationNs(v, &o.iteration_time_ns); }},
      {"runtime_key_mask_bits", T::kInt, "Width of the runtime-key op mask: 32 or 64", "",
       [](const O& o) { return absl::StrCat(o.runtime_key_mask_bits); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.runtime_key_mask_bits); }},
      {"max_rounds", T::kInt,
       "Rounds of Algorithm 2 (first + release-point repairs) before the fallback", "",
       [](const O& o) { return absl::StrCat(o.max_rounds); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.max_rounds); }},
      {"maximal_fallback", T::kBool,
       "When Algorithm 2 runs out of candidates, swap every candidate for its whole idle window "
       "(false: report infeasible)",
       "", [](const O& o) { return std::string(o.maximal_fallback ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.maximal_fallback); }},
      {"release_wait", T::kChoice,
       "when-needed: releases may precede the copy out (the next op waiting for it) when nothing "
       "else fits; never: the papers'",
       "when-needed, never",
       [](const O& o) { return std::string(ReleaseWaitName(o.release_wait)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseReleaseWait, &o.release_wait, "when-needed, never");
       }},
  });
  return table;
}

std::vector<std::pair<std::string, std::string>> ChameleonOptions::ToParameters() const {
  return ChameleonOptionTable().ToParameters(*this);
}

absl::Status ChameleonOptions::Set(absl::string_view name, absl::string_view value) {
  return ChameleonOptionTable().Set("chameleon", this, name, value);
}

}  // namespace swapplan
