#include "swapplan/planners/chameleon/chameleon_planner.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planners/chameleon/planner_run.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/error.h"
#include "swapplan/util/shortfall.h"

namespace swapplan {

absl::string_view ChameleonDecisionKindName(ChameleonDecisionKind k) {
  switch (k) {
    case ChameleonDecisionKind::kScheduled:
      return "scheduled";
    case ChameleonDecisionKind::kNoLayerFits:
      return "no-layer-fits";
    case ChameleonDecisionKind::kNoLongerNeeded:
      return "no-longer-needed";
    case ChameleonDecisionKind::kStallFallback:
      return "stall-fallback";
    case ChameleonDecisionKind::kReleased:
      return "released";
    case ChameleonDecisionKind::kDropped:
      return "dropped";
    case ChameleonDecisionKind::kRepairRound:
      return "repair-round";
    case ChameleonDecisionKind::kMaximalFallback:
      return "maximal-fallback";
    case ChameleonDecisionKind::kInfeasible:
      return "infeasible";
    case ChameleonDecisionKind::kReleaseWait:
      return "release-wait";
  }
  return "unknown";
}

namespace chameleon_internal {

std::string Ns(double ns) { return absl::StrFormat("%.1f ns", ns); }

std::string PlannerRun::OpText(int32_t local) const {
  const OpInfo& op = trace_.op(begin_ + local);
  return absl::StrCat("op ", local, " (", trace_.op_name(op.name), ", ", PhaseName(op.phase), ")");
}

std::string PlannerRun::LayerText(int32_t l) const {
  const LogicalLayer& layer = layers_.layers[l];
  std::string s = absl::StrCat("layer ", l, " (", LayerTypeName(layer.type), " ",
                               layer.index_in_segment);
  if (layer.micro_batch >= 0) absl::StrAppend(&s, ", micro-batch ", layer.micro_batch);
  return s + ")";
}

std::string PlannerRun::WindowText(int32_t w) const {
  const SwapWindow& win = windows_[w];
  return absl::StrCat(TensorLabel(trace_, win.tensor, LabelForm::kShort), " (", win.size_bytes,
                      " bytes, ops ", win.last_fwd_op, "->", win.first_bwd_op, ")");
}

void PlannerRun::Decide(ChameleonDecision d) {
  if (explanation_ == nullptr) return;
  d.mrl_entries_after = mrl_.size();
  if (explanation_->mrl_snapshots &&
      (d.kind == ChameleonDecisionKind::kScheduled ||
       d.kind == ChameleonDecisionKind::kStallFallback ||
       d.kind == ChameleonDecisionKind::kRepairRound)) {
    d.mrl_after = mrl_.Ranges();
  }
  explanation_->decisions.push_back(std::move(d));
}

absl::Status PlannerRun::Prepare() {
  SWAPPLAN_RETURN_IF_ERROR(problem_.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const IterationInfo& iter = trace_.iteration(problem_.iteration);
  begin_ = iter.op_begin;
  n_ = iter.num_ops();
  budget_ = problem_.budget_bytes();
  const MemoryCurve* curve = problem_.curve;
  std::optional<MemoryCurve> own;
  if (curve == nullptr) {
    SWAPPLAN_ASSIGN_OR_RETURN(own, ComputeMemoryCurve(trace_));
    curve = &*own;
  }
  base_.assign(curve->unswapped_bytes().begin() + begin_,
               curve->unswapped_bytes().begin() + begin_ + n_);
  SWAPPLAN_ASSIGN_OR_RETURN(timeline_, OpTimeline::Build(trace_, problem_.iteration,
                                                         options_.op_time_model,
                                                         options_.iteration_time_ns,
                                                         problem_.device.compute_time_scale));
  if (overlay_ != nullptr) {
    const ChameleonOverlay& o = *overlay_;
    if ((!o.bytes_delta.empty() && static_cast<int32_t>(o.bytes_delta.size()) != n_) ||
        (!o.extra_compute_ns.empty() && static_cast<int32_t>(o.extra_compute_ns.size()) != n_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("chameleon overlay: per-op vectors must have ", n_, " entries, got ",
                       o.bytes_delta.size(), " and ", o.extra_compute_ns.size()));
    }
    for (int32_t i = 0; i < n_ && !o.bytes_delta.empty(); ++i) base_[i] += o.bytes_delta[i];
    if (!o.extra_compute_ns.empty()) {
      SWAPPLAN_RETURN_IF_ERROR(timeline_->AddComputeBefore(o.extra_compute_ns));
    }
  }
  layers_per_segment_ =
      ResolveLayerCount(trace_, problem_.iteration, options_.layers, &layers_source_);
  layers_ = BuildLogicalLayers(trace_, problem_.iteration, *timeline_, layers_per_segment_,
                               options_.optimizer_layers);
  budgets_.emplace(layers_, options_.link_budget);
  SWAPPLAN_ASSIGN_OR_RETURN(ranking_,
                            OpFrequencyRanking::ForIteration(trace_, problem_.iteration,
                                                             options_.runtime_key_mask_bits));
  peak_unswapped_op_ = static_cast<int32_t>(std::max_element(base_.begin(), base_.end()) -
                                            base_.begin());
  if (explanation_ != nullptr) {
    ChameleonExplanation& x = *explanation_;
    x = ChameleonExplanation{};
    x.iteration = problem_.iteration;
    x.num_ops = n_;
    x.budget_bytes = budget_;
    x.peak_unswapped_bytes = base_[peak_unswapped_op_];
    x.peak_unswapped_op = peak_unswapped_op_;
    x.layers_per_segment = layers_per_segment_;
    x.layers_source = layers_source_;
    x.durations = timeline_->source();
    x.iteration_time_ns = timeline_->iteration_time_ns();
    x.link_budget = options_.link_budget;
    x.layers = layers_.layers;
    x.mrl_snapshots = n_ <= ChameleonExplanation::kMaxSnapshotOps;
  }
  return absl::OkStatus();
}

PlannerRun::Assessment PlannerRun::Assess(int32_t window) const {
  const SwapWindow& w = windows_[window];
  Assessment a;
  a.m_last = mrl_.LastIn(w.cover_begin, w.cover_end());
  a.release = timeline_->OpEndingAtOrAfter(queue_->CompletionIfActive(fifo_slot_[window]));
  return a;
}

bool PlannerRun::Usable(int32_t window, const Assessment& a, int32_t round, int32_t pass) {
  const SwapWindow& w = windows_[window];
  if (a.m_last < 0) {
    Decide({.kind = ChameleonDecisionKind::kNoLongerNeeded,
            .round = round,
            .pass = pass,
            .window = window,
            .reason = absl::StrCat(WindowText(window), ": its window no longer covers an MRE")});
    return false;
  }
  if (a.release > w.first_bwd_op - 2) {
    // Queued behind the copies selected so far, it cannot leave the device
    // before its first backward use; the queue only grows.
    state_[window] = WindowState::kRejected;
    Decide({.kind = ChameleonDecisionKind::kDropped,
            .round = round,
            .pass = pass,
            .window = window,
            .reason = absl::StrCat(WindowText(window), ": queued behind the copies selected so "
                                   "far, its copy out would complete during op ",
                                   a.release, ", too late to leave the device: dropped")});
    return false;
  }
  if (a.release >= a.m_last) {
    Decide({.kind = ChameleonDecisionKind::kNoLongerNeeded,
            .round = round,
            .pass = pass,
            .window = window,
            .reason = absl::StrCat(WindowText(window), ": queued behind the copies selected so "
                                   "far, its copy out would complete during op ",
                                   a.release, ", after its last MRE (op ", a.m_last, ")")});
    return false;
  }
  return true;
}

bool PlannerRun::SelectionPasses(int32_t round) {
  std::vector<int32_t> available;
  for (int32_t pass = 0; !mrl_.empty(); ++pass) {
    available.clear();
    for (int32_t w = 0; w < static_cast<int32_t>(windows_.size()); ++w) {
      if (state_[w] == WindowState::kAvailable) available.push_back(w);
    }
    std::vector<ScoredCandidate> cl = ScoreCandidates(windows_, available, mrl_, options_.score_c,
                                                      options_.normalization);
    if (explanation_ != nullptr) {
      explanation_->passes.push_back({round, pass, mrl_.size(), cl});
    }
    if (cl.empty()) return false;
    bool scheduled = false;
    int32_t best = -1;  // first usable candidate, for the stall fallback
    for (const ScoredCandidate& c : cl) {
      if (mrl_.empty()) break;
      const Assessment a = Assess(c.window);
      if (!Usable(c.window, a, round, pass)) continue;
      if (best < 0) best = c.window;
      const SwapWindow& w = windows_[c.window];
      SwapInPlacement p;
      if (!PlaceSwapIn(w, a.m_last, a.release, layers_, &*budgets_, &p)) {
        if (explanation_ != nullptr) {
          const int32_t after = std::max(a.m_last, a.release);
          const int32_t lo = layers_.layer_of_op[after] + 1;
          const int32_t hi = layers_.layer_of_op[w.first_bwd_op] - 1;
          std::string why =
              lo > hi ? absl::StrCat("no whole layer lies between op ", after,
                                     " (its last MRE) and its first use at ",
                                     OpText(w.first_bwd_op))
                      : absl::StrCat("no layer among ", lo, "..", hi, " has ", Ns(w.in_ns),
                                     " of h2d time left");
          Decide({.kind = ChameleonDecisionKind::kNoLayerFits,
                  .round = round,
                  .pass = pass,
                  .window = c.window,
                  .reason = absl::StrCat(WindowText(c.window), ": ", why)});
        }
        continue;
      }
      Schedule(c.window, p, a, round, pass);
      scheduled = true;
      if (options_.candidate_rebuild == CandidateRebuild::kPerSelection) break;
    }
    if (scheduled) continue;
    // Nothing was scheduled, so the MRL is as it was when the CL was built.
    if (best < 0) return false;  // no candidate can relieve any MRE
    const Assessment a = Assess(best);
    Schedule(best, PlaceSwapInWithStall(windows_[best], a.m_last, a.release, layers_, *timeline_,
                                        &*budgets_),
             a, round, pass);
    if (options_.stall_fallback != StallFallback::kBatched ||
        options_.candidate_rebuild != CandidateRebuild::kPerPass) {
      continue;
    }
    // The rest of the CL, same order: in a layer when one fits now, else
    // with a stall.
    bool after_best = false;
    for (const ScoredCandidate& c : cl) {
      if (mrl_.empty()) break;
      if (c.window == best) {
        after_best = true;
        continue;
      }
      if (!after_best || state_[c.window] != WindowState::kAvailable) continue;
      const Assessment b = Assess(c.window);
      if (!Usable(c.window, b, round, pass)) continue;
      SwapInPlacement q;
      if (!PlaceSwapIn(windows_[c.window], b.m_last, b.release, layers_, &*budgets_, &q)) {
        q = PlaceSwapInWithStall(windows_[c.window], b.m_last, b.release, layers_, *timeline_,
                                 &*budgets_);
      }
      Schedule(c.window, q, b, round, pass, /*after_best=*/true);
    }
  }
  return true;
}

void PlannerRun::Schedule(int32_t window, const SwapInPlacement& p, const Assessment& a,
                          int32_t round, int32_t pass, bool after_best) {
  const SwapWindow& w = windows_[window];
  state_[window] = WindowState::kSelected;
  queue_->SetActive(fifo_slot_[window], true);
  mrl_.Reduce(a.release + 1, p.swap_in_op - 1, w.size_bytes);
  selections_.push_back({window, p, -1});
  if (explanation_ == nullptr) return;
  std::string where = absl::StrCat("swap-in triggered at ", OpText(p.swap_in_op), ", first op of ",
                                   LayerText(p.layer));
  if (p.swap_in_op != layers_.layers[p.layer].begin_op) {
    where = absl::StrCat("swap-in triggered at ", OpText(p.swap_in_op), " in ",
                         LayerText(p.layer), ", right after its last MRE (op ", a.m_last, ")");
  }
  std::string reason;
  if (!p.fallback) {
    reason = absl::StrCat(WindowText(window), ": ", where, "; its ", Ns(w.in_ns),
                          " copy fits the layer's h2d time left; off the device during ops ",
                          a.release + 1, "..", p.swap_in_op - 1, " (estimated)");
  } else {
    reason = absl::StrCat(WindowText(window),
                          after_best ? ": no layer fits it either (stall fallback, batched): "
                                     : ": no candidate fits any layer; the best one: ",
                          where, "; ", Ns(p.stall_ns), " of its ", Ns(w.in_ns),
                          " copy cannot be hidden (expected stall); off the device during ops ",
                          a.release + 1, "..", p.swap_in_op - 1, " (estimated)");
  }
  Decide({.kind = p.fallback ? ChameleonDecisionKind::kStallFallback
                             : ChameleonDecisionKind::kScheduled,
          .round = round,
          .pass = pass,
          .window = window,
          .layer = p.layer,
          .swap_in_op = p.swap_in_op,
          .stall_ns = p.stall_ns,
          .reason = std::move(reason)});
}

void PlannerRun::SortFifo(std::vector<Selection>* s) const {
  std::sort(s->begin(), s->end(), [&](const Selection& a, const Selection& b) {
    const int32_t oa = windows_[a.window].last_fwd_op, ob = windows_[b.window].last_fwd_op;
    return oa != ob ? oa < ob : a.window < b.window;
  });
}

std::vector<SwapOutResult> PlannerRun::Releases(std::vector<Selection>* s, SwapOutCompletion mode,
                                                LayerBudgets* budgets) const {
  SortFifo(s);
  std::vector<SwapOutRequest> requests;
  requests.reserve(s->size());
  for (const Selection& sel : *s) {
    const SwapWindow& w = windows_[sel.window];
    requests.push_back({w.last_fwd_op, sel.in.swap_in_op, w.size_bytes, w.out_ns});
  }
  std::vector<SwapOutResult> results = CompleteSwapOuts(requests, mode, layers_, *timeline_,
                                                        budgets);
  for (size_t i = 0; i < s->size(); ++i) (*s)[i].release_op = results[i].release_op;
  return results;
}

void PlannerRun::ComputeReleases(int32_t round) {
  last_releases_ = Releases(&selections_, options_.swap_out_completion, &*budgets_);
  std::vector<Selection> kept;
  std::vector<SwapOutResult> kept_results;
  for (size_t i = 0; i < selections_.size(); ++i) {
    const Selection& sel = selections_[i];
    const SwapOutResult& r = last_releases_[i];
    if (!r.dropped) {
      kept.push_back(sel);
      kept_results.push_back(r);
      continue;
    }
    state_[sel.window] = WindowState::kRejected;
    queue_->SetActive(fifo_slot_[sel.window], false);
    budgets_->ChargeH2d(sel.in.layer, -sel.in.charged_ns);
    if (explanation_ != nullptr) {
      const SwapWindow& w = windows_[sel.window];
      Decide({.kind = ChameleonDecisionKind::kDropped,
              .round = round,
              .window = sel.window,
              .swap_in_op = sel.in.swap_in_op,
              .reason = absl::StrCat(WindowText(sel.window), ": its ", Ns(w.out_ns),
                                     " copy out completes too late to leave any op off the "
                                     "device before its swap-in at ",
                                     OpText(sel.in.swap_in_op), ": dropped")});
    }
  }
  selections_ = std::move(kept);
  last_releases_ = std::move(kept_results);
}

std::vector<int64_t> PlannerRun::Replay(const std::vector<Selection>& s) const {
  std::vector<int64_t> off(n_ + 1, 0);
  for (const Selection& sel : s) {
    if (sel.release_op + 1 <= sel.in.swap_in_op - 1) {
      off[sel.release_op + 1] += windows_[sel.window].size_bytes;
      off[sel.in.swap_in_op] -= windows_[sel.window].size_bytes;
    }
  }
  std::vector<int64_t> bytes(n_);
  int64_t running = 0;
  for (int32_t i = 0; i < n_; ++i) {
    running += off[i];
    bytes[i] = base_[i] - running;
  }
  return bytes;
}

void PlannerRun::RecordReleases(int32_t round, const std::vector<Selection>& s,
                                const std::vector<SwapOutResult>& results) {
  if (explanation_ == nullptr) return;
  for (size_t i = 0; i < s.size(); ++i) {
    const SwapOutResult& r = results[i];
    std::string how = absl::StrCat("its ", Ns(windows_[s[i].window].out_ns),
                                   " copy out runs on the d2h stream ", Ns(r.start_ns), " .. ",
                                   Ns(r.end_ns));
    if (r.layer >= 0) {
      absl::StrAppend(&how, "; charged to ", LayerText(r.layer),
                      r.layer_later_than_queue ? ", whose last op is later" : "");
    }
    Decide({.kind = ChameleonDecisionKind::kReleased,
            .round = round,
            .window = s[i].window,
            .layer = r.layer,
            .swap_in_op = s[i].in.swap_in_op,
            .release_op = s[i].release_op,
            .reason = absl::StrCat(WindowText(s[i].window), ": ", how,
                                   "; released after ", OpText(s[i].release_op))});
  }
}

absl::Status PlannerRun::Infeasible(const std::vector<int64_t>& bytes, int32_t candidates,
                                    bool release_waits) {
  int32_t worst = 0;
  for (int32_t i = 1; i < n_; ++i) {
    if (bytes[i] > bytes[worst]) worst = i;
  }
  const int64_t missing = bytes[worst] - budget_;
  std::string msg = absl::StrCat(
      trace_.source(), ": iteration ", problem_.iteration, ": ", missing, " bytes (",
      FormatBytes(missing), ") still missing at ", OpText(worst), " to fit the budget of ",
      budget_, " bytes, even with every one of the ", candidates,
      release_waits ? " candidate tensors off the device from the op after its last forward use "
                      "(the compute stream waiting for the copies out) to its swap-in"
                    : " candidate tensors off the device from its release to its first backward "
                      "use",
      " (candidates: non-persistent tensors of at least ", FormatBytes(options_.min_tensor_bytes),
      " whose idle window covers an over-budget op)");
  if (explanation_ != nullptr) {
    FinishExplanation(bytes);
    explanation_->infeasible = msg;
    Decide({.kind = ChameleonDecisionKind::kInfeasible, .reason = msg});
  }
  return WithShortfall(absl::ResourceExhaustedError(msg), missing);
}

void PlannerRun::FinishExplanation(const std::vector<int64_t>& bytes) {
  if (explanation_ == nullptr) return;
  const int32_t peak =
      static_cast<int32_t>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  explanation_->peak_bytes = bytes[peak];
  explanation_->peak_op = peak;
  explanation_->windows = windows_;
  explanation_->h2d_used_ns.clear();
  explanation_->d2h_used_ns.clear();
  for (int32_t l = 0; l < budgets_->num_layers(); ++l) {
    explanation_->h2d_used_ns.push_back(budgets_->h2d_used_ns(l));
    explanation_->d2h_used_ns.push_back(budgets_->d2h_used_ns(l));
  }
}

Policy PlannerRun::BuildPolicy(const std::vector<Selection>& s,
                               const std::vector<int64_t>& bytes, double overhead_ns) {
  Policy p;
  p.fingerprint = overlay_ != nullptr && overlay_->fingerprint.has_value()
                      ? *overlay_->fingerprint
                      : ComputeFingerprint(trace_, problem_.iteration);
  p.planner = "chameleon";
  // The options as configured (ChameleonOptionTable): planning again with
  // them reproduces this policy. What they resolved to (layer count, op
  // time source) is in the explanation.
  p.parameters = options_.ToParameters();
  int32_t peak = 0;
  for (int32_t i = 1; i < n_; ++i) {
    if (bytes[i] > bytes[peak]) peak = i;
  }
  p.expected_peak_bytes = bytes[peak];
  p.expected_overhead_ns = std::llround(overhead_ns);
  for (const Selection& sel : s) {
    const SwapWindow& w = windows_[sel.window];
    PolicyItem item;
    item.tensor_id = trace_.tensor(w.tensor).trace_id;
    item.runtime_key = MakeRuntimeKey(
        KeyStateAt(trace_, problem_.iteration, ranking_, w.tensor, w.last_fwd_op), trace_,
        w.tensor, options_.runtime_key_mask_bits);
    item.swap_out_op = w.last_fwd_op;
    item.release_op = sel.release_op;
    item.swap_in_op = sel.in.swap_in_op;
    item.first_use_op = w.first_bwd_op;
    item.size_bytes = w.size_bytes;
    item.release_waits_for_copy = sel.release_waits;
    p.items.push_back(std::move(item));
  }
  FinishExplanation(bytes);
  return p;
}

void PlannerRun::ApplyOverlayToWindows() {
  absl::flat_hash_set<TensorId> excluded(overlay_->excluded.begin(), overlay_->excluded.end());
  absl::flat_hash_map<TensorId, std::vector<int32_t>> pins;
  for (const auto& [t, op] : overlay_->pinned) pins[t].push_back(op);
  std::vector<SwapWindow> kept;
  kept.reserve(windows_.size());
  for (SwapWindow w : windows_) {
    if (excluded.contains(w.tensor)) continue;
    if (auto f = pins.find(w.tensor); f != pins.end()) {
      for (int32_t op : f->second) {
        if (op > w.last_fwd_op && op < w.first_bwd_op) w.first_bwd_op = op;
      }
      // Off the device during release+1 .. swap_in-1 with swap_in <= use.
      if (w.earliest_release_op > w.first_bwd_op - 2 || w.cover_begin > w.cover_end()) continue;
    }
    kept.push_back(w);
  }
  windows_ = std::move(kept);
}

absl::StatusOr<Policy> PlannerRun::Execute() {
  SWAPPLAN_RETURN_IF_ERROR(Prepare());
  mrl_.Reset(base_, budget_);
  if (explanation_ != nullptr) {
    explanation_->initial_mrl = mrl_.Ranges();
    explanation_->initial_mrl_entries = mrl_.size();
  }
  if (mrl_.empty()) return BuildPolicy({}, base_, 0);
  windows_ = FindSwapWindows(trace_, problem_.iteration, layers_, *timeline_,
                             problem_.device.h2d_bandwidth_bytes_per_s,
                             problem_.device.d2h_bandwidth_bytes_per_s, options_.min_tensor_bytes,
                             options_.idle_window_start);
  if (overlay_ != nullptr) ApplyOverlayToWindows();
  state_.assign(windows_.size(), WindowState::kAvailable);
  {
    // Slots of the d2h queue estimate: windows in FIFO order (swap-out op,
    // then window index), as CompleteSwapOuts orders them.
    std::vector<int32_t> order(windows_.size());
    for (size_t w = 0; w < order.size(); ++w) order[w] = static_cast<int32_t>(w);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return windows_[a].last_fwd_op < windows_[b].last_fwd_op;
    });
    fifo_slot_.assign(windows_.size(), 0);
    std::vector<double> ready(order.size()), copy(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      fifo_slot_[order[i]] = static_cast<int32_t>(i);
      ready[i] = timeline_->end_ns(windows_[order[i]].last_fwd_op);
      copy[i] = windows_[order[i]].out_ns;
    }
    queue_.emplace(ready, copy);
  }
  for (int32_t w = 0; w < static_cast<int32_t>(windows_.size()); ++w) {
    if (mrl_.CountIn(windows_[w].cover_begin, windows_[w].cover_end()) > 0) {
      initial_candidates_.push_back(w);
    }
  }
  std::vector<int64_t> bytes;
  for (int32_t round = 0;; ++round) {
    if (explanation_ != nullptr) explanation_->rounds = round + 1;
    const bool satisfied = SelectionPasses(round);
    ComputeReleases(round);
    bytes = Replay(selections_);
    mrl_.Reset(bytes, budget_);
    if (mrl_.empty()) {
      RecordReleases(round, selections_, last_releases_);
      double stall = 0;
      for (const Selection& sel : selections_) stall += sel.in.stall_ns;
      return BuildPolicy(selections_, bytes, stall);
    }
    if (!satisfied) break;
    if (round + 1 >= options_.max_rounds) {
      Decide({.kind = ChameleonDecisionKind::kRepairRound,
              .round = round,
              .reason = absl::StrCat("with their release points the ", selections_.size(),
                                     " swaps leave ", mrl_.size(),
                                     " ops above the budget, and the ", options_.max_rounds,
                                     " rounds allowed are used up")});
      break;
    }
    if (explanation_ != nullptr) {
      const std::vector<MrlRange> runs = mrl_.Ranges();
      int64_t worst = 0;
      int32_t worst_op = -1;
      for (const MrlRange& r : runs) {
        if (r.max_need_bytes > worst) {
          worst = r.max_need_bytes;
          worst_op = r.max_op;
        }
      }
      Decide({.kind = ChameleonDecisionKind::kRepairRound,
              .round = round + 1,
              .reason = absl::StrCat("with their release points the ", selections_.size(),
                                     " swaps leave ", mrl_.size(), " ops above the budget (",
                                     worst, " bytes missing at ", OpText(worst_op),
                                     "): selecting more")});
    }
  }
  int32_t candidates = static_cast<int32_t>(initial_candidates_.size());
  if (options_.maximal_fallback) {
    std::optional<Policy> p = MaximalFallback(&bytes);
    if (p.has_value()) return *std::move(p);
  }
  if (options_.release_wait == ReleaseWait::kWhenNeeded) {
    std::optional<Policy> p = ReleaseWaitFallback(&bytes, &candidates);
    if (p.has_value()) return *std::move(p);
    return Infeasible(bytes, candidates, /*release_waits=*/true);
  }
  return Infeasible(bytes, candidates, /*release_waits=*/false);
}

}  // namespace chameleon_internal

absl::StatusOr<Policy> ChameleonPlanner::PlanExplained(const PlanningProblem& problem,
                                                       ChameleonExplanation* explanation) {
  explanation_ = explanation;
  absl::StatusOr<Policy> policy = Plan(problem);
  explanation_ = nullptr;
  return policy;
}

absl::StatusOr<Policy> ChameleonPlanner::PlanPolicy(const PlanningProblem& problem) {
  chameleon_internal::PlannerRun run(options_, problem, explanation_, overlay_);
  return run.Execute();
}

absl::StatusOr<Policy> ChameleonPlanner::PlanWithOverlay(const PlanningProblem& problem,
                                                         const ChameleonOverlay& overlay) {
  overlay_ = &overlay;
  absl::StatusOr<Policy> policy = PlanPolicy(problem);
  overlay_ = nullptr;
  return policy;
}

absl::Status ChameleonPlanner::SetOption(absl::string_view name, absl::string_view value) {
  ChameleonOptions next = options_;  // kept only when valid
  SWAPPLAN_RETURN_IF_ERROR(next.Set(name, value));
  SWAPPLAN_RETURN_IF_ERROR(next.Validate());
  options_ = next;
  return absl::OkStatus();
}

}  // namespace swapplan
