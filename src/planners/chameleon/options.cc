#include "swapplan/planners/chameleon/options.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "swapplan/util/units.h"

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

std::vector<std::pair<std::string, std::string>> ChameleonOptions::ToParameters() const {
  return {
      {"layers", absl::StrCat(layers)},
      {"optimizer_layers", absl::StrCat(optimizer_layers)},
      {"score_c", absl::StrCat(score_c)},
      {"min_tensor_bytes", absl::StrCat(min_tensor_bytes)},
      {"normalization", std::string(ScoreNormalizationName(normalization))},
      {"link_budget", std::string(LinkBudgetName(link_budget))},
      {"swap_out_completion", std::string(SwapOutCompletionName(swap_out_completion))},
      {"idle_window_start", std::string(IdleWindowStartName(idle_window_start))},
      {"candidate_rebuild", std::string(CandidateRebuildName(candidate_rebuild))},
      {"stall_fallback", std::string(StallFallbackName(stall_fallback))},
      {"op_time_model", std::string(OpTimeModelName(op_time_model))},
      {"iteration_time_ns", absl::StrCat(iteration_time_ns)},
      {"runtime_key_mask_bits", absl::StrCat(runtime_key_mask_bits)},
      {"max_rounds", absl::StrCat(max_rounds)},
      {"maximal_fallback", maximal_fallback ? "true" : "false"},
      {"release_wait", std::string(ReleaseWaitName(release_wait))},
  };
}

bool ParseStallFallback(absl::string_view s, StallFallback* out) {
  constexpr StallFallback kAll[] = {StallFallback::kBatched, StallFallback::kOnePerPass};
  return ParseByName(s, kAll, &StallFallbackName, out);
}

bool ParseReleaseWait(absl::string_view s, ReleaseWait* out) {
  constexpr ReleaseWait kAll[] = {ReleaseWait::kWhenNeeded, ReleaseWait::kNever};
  return ParseByName(s, kAll, &ReleaseWaitName, out);
}

absl::Status ChameleonOptions::Set(absl::string_view name, absl::string_view value) {
  const std::string key = absl::StrReplaceAll(name, {{"-", "_"}});
  const auto bad = [&](absl::string_view want) {
    return absl::InvalidArgumentError(
        absl::StrCat("chameleon option ", name, ": '", value, "' is not ", want));
  };
  const auto int32 = [&](int32_t* field) {
    int32_t v = 0;
    if (!absl::SimpleAtoi(value, &v)) return bad("an integer");
    *field = v;
    return absl::OkStatus();
  };
  const auto bytes = [&](int64_t* field) {
    absl::StatusOr<int64_t> v = ParseBytes(value);
    if (!v.ok()) return bad("a size like 1048576 or 1MiB");
    *field = *v;
    return absl::OkStatus();
  };
  const auto choice = [&](auto parse, auto* field, absl::string_view names) {
    if (!parse(value, field)) return bad(names);
    return absl::OkStatus();
  };
  if (key == "layers") return int32(&layers);
  if (key == "optimizer_layers") return int32(&optimizer_layers);
  if (key == "score_c") {
    double v = 0;
    if (!absl::SimpleAtod(value, &v)) return bad("a number");
    score_c = v;
    return absl::OkStatus();
  }
  if (key == "min_tensor_bytes") return bytes(&min_tensor_bytes);
  if (key == "normalization") {
    return choice(&ParseScoreNormalization, &normalization, "max or minmax");
  }
  if (key == "link_budget") {
    return choice(&ParseLinkBudget, &link_budget, "per-direction or shared");
  }
  if (key == "swap_out_completion") {
    return choice(&ParseSwapOutCompletion, &swap_out_completion, "d2h-queue or layer-search");
  }
  if (key == "idle_window_start") {
    return choice(&ParseIdleWindowStart, &idle_window_start,
                  "earliest-release or last-forward-use");
  }
  if (key == "candidate_rebuild") {
    return choice(&ParseCandidateRebuild, &candidate_rebuild, "per-pass or per-selection");
  }
  if (key == "stall_fallback") {
    return choice(&ParseStallFallback, &stall_fallback, "batched or one-per-pass");
  }
  if (key == "op_time_model") {
    return choice(&ParseOpTimeModel, &op_time_model, "auto, eq1 or recorded");
  }
  if (key == "iteration_time_ns") {
    absl::StatusOr<int64_t> v = ParseDurationNs(value);
    if (!v.ok()) return bad("a duration like 1500000000 or 1.5s");
    iteration_time_ns = *v;
    return absl::OkStatus();
  }
  if (key == "runtime_key_mask_bits") return int32(&runtime_key_mask_bits);
  if (key == "max_rounds") return int32(&max_rounds);
  if (key == "maximal_fallback") {
    if (value == "true" || value == "1") {
      maximal_fallback = true;
    } else if (value == "false" || value == "0") {
      maximal_fallback = false;
    } else {
      return bad("true or false");
    }
    return absl::OkStatus();
  }
  if (key == "release_wait") {
    return choice(&ParseReleaseWait, &release_wait, "when-needed or never");
  }
  std::string known;
  for (const auto& [n, v] : ToParameters()) {
    absl::StrAppend(&known, known.empty() ? "" : ", ", absl::StrReplaceAll(n, {{"_", "-"}}));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("chameleon has no option '", name, "' (known: ", known, ")"));
}

}  // namespace swapplan
