// HyperOffload planner: lifetime analysis, candidates, tier choice,
// selection to the budget, cache operators and execution-order refinement
// (see hyperoffload_planner.h).
#include "swapplan/planners/hyperoffload/hyperoffload_planner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "planners/baselines/common.h"
#include "planners/chameleon/range_max_tree.h"
#include "planners/hyperoffload/load_queue.h"
#include "planners/hyperoffload/persistent.h"
#include "planners/hyperoffload/refine.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/dataflow.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/util/error.h"
#include "swapplan/util/shortfall.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

// The planned bytes in use per op (chameleon/range_max_tree.h): range
// adds as windows are taken, the peak, where it is. O(log n) each.
using MaxTree = RangeMaxTree<int64_t>;
int64_t Peak(const MaxTree& t) { return t.Max(0, t.size() - 1); }
// The first op holding the peak.
int32_t PeakOp(const MaxTree& t) { return t.FirstAtLeast(0, t.size() - 1, Peak(t)); }

// One offloadable idle gap of a tensor: its last use before the gap (the
// Store's op) and the use after it (the Prefetch's consumer), local ops.
// A wrapping window (a persistent tensor, persistent.h) is off the device
// at the iteration boundary: its Store follows its last use (store_op),
// its Prefetch precedes its first use (consumer).
struct Candidate {
  TensorId tensor = kNoTensor;
  int32_t store_op = 0;
  int32_t consumer = 0;
  int64_t bytes = 0;
  int64_t gap_ns = 0;
  int32_t tier = 0;
  // A KV-cache window (kv_cache.h): read-only tensor, one Store for all its
  // windows on a tier; `forced` with kv_offload=all.
  bool read_only = false;
  bool forced = false;
  bool wraps = false;
  // A persistent tensor's group (persistent.h), taken whole; -1 for an
  // activation's window.
  int32_t group = -1;
  // Filled when planned.
  int32_t release_op = 0;
  int32_t issue_op = 0;
  bool clean = false;

  // The first op the Prefetch may be issued at.
  int32_t earliest() const { return wraps ? 0 : release_op + 1; }
};

// Adds `sign` x the candidate's bytes to the ops it is off the device
// (between its Detach and its Prefetch; a wrapping one's before the
// Prefetch and after the Detach).
template <typename Tree>
void OffDevice(Tree* tree, const Candidate& c, int32_t n, int64_t sign) {
  if (c.wraps) {
    tree->Add(0, c.issue_op - 1, sign * c.bytes);
    tree->Add(c.release_op + 1, n - 1, sign * c.bytes);
  } else {
    tree->Add(c.release_op + 1, c.issue_op - 1, sign * c.bytes);
  }
}

}  // namespace

absl::string_view TierChoiceName(TierChoice t) {
  switch (t) {
    case TierChoice::kAuto: return "auto";
    case TierChoice::kHost: return "host";
    case TierChoice::kRemote: return "remote";
  }
  return "auto";
}

bool ParseTierChoice(absl::string_view name, TierChoice* out) {
  for (TierChoice t : {TierChoice::kAuto, TierChoice::kHost, TierChoice::kRemote}) {
    if (name == TierChoiceName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

absl::Status HyperOffloadOptions::Validate() const {
  auto bad = [](absl::string_view field, absl::string_view rule) {
    return absl::InvalidArgumentError(absl::StrCat("hyperoffload options: ", field, " ", rule));
  };
  if (min_tensor_bytes < 0) return bad("min_tensor_bytes", "must be >= 0");
  if (!std::isfinite(min_idle_ratio) || min_idle_ratio < 0) {
    return bad("min_idle_ratio", "must be finite and >= 0");
  }
  if (max_uses < 2) return bad("max_uses", "must be >= 2 (a gap lies between two uses)");
  if (!std::isfinite(residency_weight) || residency_weight < 0) {
    return bad("residency_weight", "must be finite and >= 0");
  }
  if (reorder_scan_ops < 0) return bad("reorder_scan_ops", "must be >= 0");
  if (max_hoisted_ops < 0) return bad("max_hoisted_ops", "must be >= 0");
  return absl::OkStatus();
}

const OptionTable<HyperOffloadOptions>& HyperOffloadOptionTable() {
  using O = HyperOffloadOptions;
  static const OptionTable<O> table({
      {"min_tensor_bytes", OptionType::kBytes, "Tensors smaller than this stay on the device", "",
       [](const O& o) { return absl::StrCat(o.min_tensor_bytes); },
       [](O& o, absl::string_view v) { return ParseOptionBytes(v, &o.min_tensor_bytes); }},
      {"min_idle_ratio", OptionType::kDecimal,
       "A gap qualifies when its compute time is at least this times the Store + Prefetch time",
       "", [](const O& o) { return absl::StrCat(o.min_idle_ratio); },
       [](O& o, absl::string_view v) { return ParseOptionDecimal(v, &o.min_idle_ratio); }},
      {"max_uses", OptionType::kInt,
       "Tensors used more often than this in the iteration stay (finely accessed)", "",
       [](const O& o) { return absl::StrCat(o.max_uses); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.max_uses); }},
      {"tier", OptionType::kChoice,
       "Where offloaded windows go: the remote tier while it has room, the host, or the remote "
       "tier only",
       "auto, host, remote", [](const O& o) { return std::string(TierChoiceName(o.tier)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseTierChoice, &o.tier, "auto, host, remote");
       }},
      {"residency_weight", OptionType::kDecimal,
       "Refinement cost of one ns of device residency against one ns of exposed transfer", "",
       [](const O& o) { return absl::StrCat(o.residency_weight); },
       [](O& o, absl::string_view v) { return ParseOptionDecimal(v, &o.residency_weight); }},
      {"reorder", OptionType::kBool,
       "Reorder independent ops around prefetch consumers (the policy then has a schedule)", "",
       [](const O& o) { return std::string(o.reorder ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.reorder); }},
      {"reorder_scan_ops", OptionType::kInt,
       "Ops after a consumer scanned for independent ones", "",
       [](const O& o) { return absl::StrCat(o.reorder_scan_ops); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.reorder_scan_ops); }},
      {"max_hoisted_ops", OptionType::kInt, "Independent ops hoisted before one consumer at most",
       "", [](const O& o) { return absl::StrCat(o.max_hoisted_ops); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.max_hoisted_ops); }},
      {"stream_contention", OptionType::kBool,
       "Place prefetches backward from the last consumer so that each tier's load stream "
       "(a queue) finishes every copy in time",
       "", [](const O& o) { return std::string(o.stream_contention ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.stream_contention); }},
      {"offload_parameters", OptionType::kBool,
       "Also offload parameters and optimizer states (across iterations) when every activation "
       "window leaves the peak over the budget",
       "", [](const O& o) { return std::string(o.offload_parameters ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.offload_parameters); }},
      {"release_waits", OptionType::kBool,
       "When every candidate leaves the peak over the budget, Detach before the queued Store "
       "completes (the next op waits for it)",
       "", [](const O& o) { return std::string(o.release_waits ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.release_waits); }},
      {"offload_all", OptionType::kBool,
       "Keep every candidate, not only those needed to fit the budget", "",
       [](const O& o) { return std::string(o.offload_all ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.offload_all); }},
      {"kv_offload", OptionType::kChoice,
       "KV-cache tensors of inference traces: every gap a candidate (fit), every gap offloaded "
       "(all), or like any activation (off)",
       "off, fit, all", [](const O& o) { return std::string(KvOffloadName(o.kv_offload)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseKvOffload, &o.kv_offload, "off, fit, all");
       }},
  });
  return table;
}

absl::Status HyperOffloadPlanner::SetOption(absl::string_view name, absl::string_view value) {
  return HyperOffloadOptionTable().SetValidated("hyperoffload", &options_, name, value);
}

namespace {

// Rounds of selection, Store queueing and Prefetch queueing at most (each
// O(C log C)); the loop ends as soon as the planned peak fits.
constexpr int kSelectionRounds = 16;

// Everything one planning run shares.
struct Run {
  const PlanningProblem& problem;
  const HyperOffloadOptions& o;
  const Trace& trace;
  int32_t it = 0;
  OpIndex begin = 0;
  int32_t n = 0;
  std::vector<int64_t> duration;
  std::vector<int64_t> start;  // n + 1 prefix sums (recorded order)
  std::vector<int64_t> unswapped;

  int64_t Store(int32_t tier, int64_t bytes) const {
    return problem.device.TierBandwidth(tier, Direction::kDeviceToHost) > 0
               ? problem.device.TierCopyNs(tier, Direction::kDeviceToHost, bytes)
               : 0;
  }
  int64_t Load(int32_t tier, int64_t bytes) const {
    return problem.device.TierBandwidth(tier, Direction::kHostToDevice) > 0
               ? problem.device.TierCopyNs(tier, Direction::kHostToDevice, bytes)
               : 0;
  }
  // First position p >= from whose op ends at or after t (n - 1 at most).
  int32_t EndingAtOrAfter(int32_t from, int64_t t) const {
    const auto it_ = std::lower_bound(start.begin() + from + 1, start.end(), t);
    return std::min<int32_t>(static_cast<int32_t>(it_ - start.begin()) - 1, n - 1);
  }
  // The op during which c's Store, issued after its store_op and alone on
  // its stream, completes: where its Detach goes.
  int32_t DetachAlone(const Candidate& c) const {
    return EndingAtOrAfter(c.store_op, start[c.store_op + 1] + Store(c.tier, c.bytes));
  }
};

// A candidate for the remote tier that does not fit its room: on the host
// instead, or (tier=remote) not taken at all — false.
bool FitTier(Candidate* c, int64_t remote_room, TierChoice choice) {
  if (c->tier != 1 || c->bytes <= remote_room) return true;
  if (choice == TierChoice::kRemote) return false;
  c->tier = 0;
  return true;
}

// Steps 1-3: the qualifying gaps, each with its tier.
std::vector<Candidate> FindCandidates(const Run& r, int32_t remote_tier) {
  std::vector<Candidate> out;
  const IterationInfo& iter = r.trace.iteration(r.it);
  for (TensorId t = 0; t < r.trace.num_tensors(); ++t) {
    const TensorInfo& info = r.trace.tensor(t);
    if (info.kind != TensorKind::kActivation || info.size_bytes < r.o.min_tensor_bytes ||
        info.size_bytes <= 0) {
      continue;
    }
    if (r.o.kv_offload != KvOffload::kOff &&
        IsKvCacheTensor(r.trace, r.it, t, r.o.min_tensor_bytes)) {
      continue;  // AddKvCandidates
    }
    absl::Span<const OpIndex> in_iteration = UsesIn(r.trace, iter, t);
    const auto lo = in_iteration.begin(), hi = in_iteration.end();
    const int64_t uses = hi - lo;
    if (uses < 2 || uses > r.o.max_uses) continue;
    const int32_t tier = r.o.tier == TierChoice::kHost ? 0 : remote_tier;
    const int64_t copy = r.Store(tier, info.size_bytes) + r.Load(tier, info.size_bytes);
    for (auto u = lo; u + 1 < hi; ++u) {
      const int32_t a = *u - r.begin, b = *(u + 1) - r.begin;
      if (b - a < 2) continue;
      const int64_t gap = r.start[b] - r.start[a + 1];
      if (static_cast<double>(gap) < r.o.min_idle_ratio * static_cast<double>(copy)) continue;
      out.push_back({t, a, b, info.size_bytes, gap, tier});
    }
  }
  return out;
}

// KV-cache windows (kv_offload fit / all): every gap, no idle-ratio or
// use-count test; the score's gap is its compute time.
void AddKvCandidates(const Run& r, int32_t remote_tier, std::vector<Candidate>* out) {
  if (r.o.kv_offload == KvOffload::kOff) return;
  const int32_t tier = r.o.tier == TierChoice::kHost ? 0 : remote_tier;
  for (const KvWindow& w : FindKvWindows(r.trace, r.it, r.o.min_tensor_bytes)) {
    Candidate c{w.tensor, w.last_use, w.next_use, r.trace.tensor(w.tensor).size_bytes,
                r.start[w.next_use] - r.start[w.last_use + 1], tier};
    c.read_only = true;
    c.forced = r.o.kv_offload == KvOffload::kAll;
    out->push_back(c);
  }
}

// The latest op from the candidate's earliest issue through its consumer
// whose start leaves the Prefetch's copy time before the consumer (the
// earliest when none does). O(log n).
int32_t JustInTime(const Run& r, const Candidate& c) {
  const int64_t need = r.start[c.consumer] - r.Load(c.tier, c.bytes);
  const auto at =
      std::upper_bound(r.start.begin() + c.earliest(), r.start.begin() + c.consumer + 1, need);
  return std::max<int32_t>(c.earliest(), static_cast<int32_t>(at - r.start.begin()) - 1);
}

// Appends the parameters' and optimizer states' windows (persistent.h), in
// its group order, after `cands`.
void AppendPersistent(const Run& r, int32_t tier, std::vector<Candidate>* cands) {
  const PersistentWindowOptions po{.min_tensor_bytes = r.o.min_tensor_bytes,
                                   .max_uses = r.o.max_uses,
                                   .min_idle_ratio = r.o.min_idle_ratio};
  const std::vector<PersistentWindow> windows = PersistentWindows(
      r.trace, r.it, r.start, po, [&](int64_t b) { return r.Load(tier, b); },
      [&](int64_t b) { return r.Store(tier, b); });
  for (const PersistentWindow& w : windows) {
    Candidate c;
    c.tensor = w.tensor;
    c.store_op = w.store_op;
    c.consumer = w.consumer;
    c.bytes = w.bytes;
    c.gap_ns = w.idle_ns;
    c.tier = tier;
    c.wraps = w.wraps;
    c.clean = w.clean;
    c.group = w.group;
    cands->push_back(c);
  }
}

// Release waits (Chameleon's when-needed, src/planners/chameleon/
// release_wait.cc): when every candidate leaves the peak over the budget
// because the queued Stores complete too late, Detaches move back, in
// Store order, to where each Store would complete alone on its stream,
// then, at the peak op, to the Store's own op, until the peak fits. The op after such a Detach waits for its Store (a
// planned stall, release_waits_for_copy, marked by the final check).
// O(C log C + C log n).
void ReleaseEarly(const Run& r, int64_t budget, std::vector<Candidate>* spare,
                  std::vector<Candidate>* chosen, MaxTree* tree, int64_t* remote_room) {
  std::sort(chosen->begin(), chosen->end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.store_op, a.consumer, a.tensor) < std::tie(b.store_op, b.consumer, b.tensor);
  });
  for (Candidate& c : *chosen) {
    if (Peak(*tree) <= budget) return;
    if (c.clean) continue;
    const int32_t alone = r.DetachAlone(c);
    if (alone >= c.release_op) continue;
    OffDevice(tree, c, r.n, 1);
    c.release_op = alone;
    OffDevice(tree, c, r.n, -1);
  }
  // Still over: at the peak op, the window stored last before it whose
  // Detach is at or after it is Detached right after its Store's op (the
  // next op waits for the whole copy) — else a window left out of the
  // selection (`spare`) is taken that way; repeated while the peak is
  // over. O(C) per window moved.
  while (Peak(*tree) > budget) {
    const int32_t peak = PeakOp(*tree);
    Candidate* best = nullptr;
    for (Candidate& c : *chosen) {
      if (c.clean || c.store_op >= peak || c.release_op < peak) continue;
      if (c.wraps && c.issue_op <= peak) continue;
      if (best == nullptr || c.store_op > best->store_op) best = &c;
    }
    if (best == nullptr) {
      // A window left out (its Store outlasted its gap) that, Detached at
      // its Store's op, is off the device at the peak.
      size_t pick = spare->size();
      for (size_t k = 0; k < spare->size(); ++k) {
        Candidate& c = (*spare)[k];
        if (c.store_op >= peak || c.consumer <= peak + 1) continue;
        if (c.tier == 1 && c.bytes > *remote_room) continue;
        if (pick == spare->size() || c.store_op > (*spare)[pick].store_op) pick = k;
      }
      if (pick == spare->size()) return;
      Candidate c = (*spare)[pick];
      spare->erase(spare->begin() + static_cast<std::ptrdiff_t>(pick));
      c.release_op = c.store_op;
      c.issue_op = JustInTime(r, c);
      if (c.issue_op <= peak) continue;  // the peak stays; it is not taken
      if (c.tier == 1) *remote_room -= c.bytes;
      OffDevice(tree, c, r.n, -1);
      chosen->push_back(c);
      continue;
    }
    OffDevice(tree, *best, r.n, 1);
    best->release_op = best->store_op;
    OffDevice(tree, *best, r.n, -1);
  }
}

// Load-stream contention (load_queue.h): the chosen windows' Prefetches
// placed as late as possible without a stall on their tier's load stream,
// backward from the last consumer; a Prefetch that moves earlier keeps its
// tensor on the device longer (the tree follows). A window left with no op
// off the device is dropped (its copies would buy nothing). O(C log C +
// C log n).
void QueueLoads(const Run& r, std::vector<Candidate>* chosen, MaxTree* tree,
                   int64_t* remote_room) {
  std::vector<QueuedLoad> loads;
  loads.reserve(chosen->size());
  for (const Candidate& c : *chosen) {
    // KV-cache windows stay just in time and out of the queue (their
    // Prefetches are link-bound by design under kv_offload=all).
    if (c.read_only) continue;
    loads.push_back({.ready_ns = r.start[c.earliest()],
                     .deadline_ns = r.start[c.consumer],
                     .copy_ns = r.Load(c.tier, c.bytes),
                     .tier = c.tier});
  }
  const std::vector<LoadSlot> slots = LatestLoadStarts(loads);
  std::vector<Candidate> kept;
  kept.reserve(chosen->size());
  size_t slot = 0;
  for (size_t k = 0; k < chosen->size(); ++k) {
    Candidate c = (*chosen)[k];
    if (c.read_only) {
      kept.push_back(c);
      continue;
    }
    const auto at = std::upper_bound(r.start.begin() + c.earliest(),
                                     r.start.begin() + c.consumer + 1, slots[slot++].latest_start_ns);
    const int32_t issue =
        std::max<int32_t>(c.earliest(), static_cast<int32_t>(at - r.start.begin()) - 1);
    if (issue != c.issue_op) {
      OffDevice(tree, c, r.n, 1);
      if (!c.wraps && issue <= c.release_op + 1) {
        if (c.tier == 1 && c.group < 0) *remote_room += c.bytes;  // c is not read-only here
        continue;
      }
      c.issue_op = issue;
      OffDevice(tree, c, r.n, -1);
    }
    kept.push_back(c);
  }
  *chosen = std::move(kept);
}

}  // namespace

absl::StatusOr<Policy> HyperOffloadPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const HyperOffloadOptions& o = options_;
  const bool has_remote = !problem.device.tiers.empty();
  if (o.tier == TierChoice::kRemote && !has_remote) {
    return absl::InvalidArgumentError(
        "hyperoffload: tier=remote, but the device model has no remote tier (give "
        "--remote-memory and --remote-bandwidth)");
  }
  Run r{problem, o, *problem.trace, problem.iteration};
  const IterationInfo& iter = r.trace.iteration(r.it);
  r.begin = iter.op_begin;
  r.n = iter.num_ops();
  SWAPPLAN_ASSIGN_OR_RETURN(OpDurations d,
                            ComputeOpDurations(r.trace, r.it, OpTimeModel::kAuto, 0,
                                               problem.device.compute_time_scale));
  r.duration = std::move(d.duration_ns);
  r.start.assign(r.n + 1, 0);
  for (int32_t i = 0; i < r.n; ++i) r.start[i + 1] = r.start[i] + r.duration[i];
  SWAPPLAN_ASSIGN_OR_RETURN(r.unswapped, IterationUnswappedBytes(problem));
  Policy p = BaselinePolicy(problem, name(), HyperOffloadOptionTable().ToParameters(o));
  const int64_t budget = problem.budget_bytes();

  const int32_t first_tier = has_remote && o.tier != TierChoice::kHost ? 1 : 0;
  std::vector<Candidate> cands = FindCandidates(r, first_tier);
  AddKvCandidates(r, first_tier, &cands);
  // Step 4: largest memory-time first (forced KV windows before all).
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.forced != b.forced) return a.forced;
    const double x = static_cast<double>(a.bytes) * a.gap_ns;
    const double y = static_cast<double>(b.bytes) * b.gap_ns;
    if (x != y) return x > y;
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.store_op < b.store_op;
  });
  // Then the parameters' and optimizer states' groups, taken only while
  // every activation window together leaves the peak over the budget.
  if (o.offload_parameters) AppendPersistent(r, first_tier, &cands);
  MaxTree tree(r.unswapped);
  int64_t remote_room = has_remote ? problem.device.TierCapacityBytes(1) : 0;
  std::vector<Candidate> chosen;
  size_t next = 0;
  // Takes candidates in score order until the planned peak fits; the
  // Detach where the Store would complete alone on its stream, the
  // Prefetch at its latest hiding position (refined below).
  int32_t group_tier = -1;  // the tier of the persistent group being taken
  // Activation windows left out because their Store would end too late:
  // release waits may still take them.
  std::vector<Candidate> spare;
  std::vector<char> useful(cands.size(), 0);  // a group's clean windows taken
  // KV-cache tensors with a window taken: the tier all their windows use
  // (its room counted once).
  absl::flat_hash_map<TensorId, int32_t> kv_tier;
  auto select = [&]() {
    for (; next < cands.size(); ++next) {
      Candidate c = cands[next];
      if (c.group >= 0) {
        if (!c.wraps) {  // the rest of a group whose wrapping window was taken
          if (group_tier < 0 || !useful[next]) continue;
          c.tier = group_tier;
          c.release_op = c.store_op;
          c.issue_op = JustInTime(r, c);
          OffDevice(&tree, c, r.n, -1);
          chosen.push_back(c);
          continue;
        }
        group_tier = -1;
        if (Peak(tree) <= budget) break;
        // Only the group's windows that are off the device at an op still
        // over the budget (each costs a Prefetch every iteration); none:
        // the group stays.
        bool any = tree.Max(0, c.consumer - 1) > budget ||
                   tree.Max(c.store_op + 1, r.n - 1) > budget;
        for (size_t j = next + 1; j < cands.size() && cands[j].group == c.group; ++j) {
          useful[j] = tree.Max(cands[j].store_op + 1, cands[j].consumer - 1) > budget;
          any = any || useful[j];
        }
        if (!any || !FitTier(&c, remote_room, o.tier)) continue;
        if (c.tier == 1) remote_room -= c.bytes;
        c.release_op = r.DetachAlone(c);
        c.issue_op = JustInTime(r, c);
        OffDevice(&tree, c, r.n, -1);
        group_tier = c.tier;
        chosen.push_back(c);
        continue;
      }
      if (!o.offload_all && !c.forced && Peak(tree) <= budget) break;
      const auto kv = c.read_only ? kv_tier.find(c.tensor) : kv_tier.end();
      if (kv != kv_tier.end()) {
        // A later window of a stored KV tensor: Detach at once (clean).
        c.tier = kv->second;
        c.release_op = c.store_op;
      } else {
        if (!FitTier(&c, remote_room, o.tier)) continue;
        c.release_op = r.DetachAlone(c);
        if (c.release_op + 1 >= c.consumer) {
          if (!c.read_only) spare.push_back(c);  // its Store alone outlasts the gap
          continue;
        }
        if (c.tier == 1) remote_room -= c.bytes;
        if (c.read_only) kv_tier.emplace(c.tensor, c.tier);
      }
      c.issue_op = JustInTime(r, c);  // an activation window: not wrapping
      OffDevice(&tree, c, r.n, -1);
      chosen.push_back(c);
    }
  };
  // The Stores of each tier queue on its stream (FIFO in Store order, ties
  // in consumer order as the policy's items are sorted): a Detach moves to
  // the op during which its queued Store completes, which frees memory
  // later; the Prefetches queue on the load stream (QueueLoads), which
  // moves them earlier. While that leaves the peak over the budget, more
  // candidates are taken (rounds).
  const int32_t num_tiers = problem.device.num_tiers();
  for (int round = 0; round < kSelectionRounds; ++round) {
    select();
    std::sort(chosen.begin(), chosen.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.store_op, a.consumer, a.tensor) <
             std::tie(b.store_op, b.consumer, b.tensor);
    });
    std::vector<int64_t> stream_free(num_tiers, 0);
    std::vector<Candidate> kept;
    kept.reserve(chosen.size());
    absl::flat_hash_set<TensorId> kv_stored;  // KV tensors with a kept Store
    for (Candidate c : chosen) {
      if (c.clean) {  // no Store
        kept.push_back(c);
        continue;
      }
      // A KV window after a kept one of its tensor copies nothing.
      const bool kv_clean = c.read_only && kv_stored.contains(c.tensor);
      const int64_t begin = std::max(r.start[c.store_op + 1], stream_free[c.tier]);
      const int64_t done = kv_clean ? r.start[c.store_op + 1] : begin + r.Store(c.tier, c.bytes);
      const int32_t rel = kv_clean ? c.store_op : r.EndingAtOrAfter(c.store_op, done);
      if (rel != c.release_op) {
        OffDevice(&tree, c, r.n, 1);
        if (!c.wraps && rel + 1 >= c.consumer) {
          if (c.tier == 1 && !c.read_only) remote_room += c.bytes;
          if (!c.read_only) spare.push_back(c);
          continue;  // the queued Store leaves no time off the device
        }
        c.release_op = rel;
        if (!c.wraps) c.issue_op = std::max(c.issue_op, rel + 1);
        OffDevice(&tree, c, r.n, -1);
      }
      if (!kv_clean) stream_free[c.tier] = done;
      if (c.read_only) kv_stored.insert(c.tensor);
      kept.push_back(c);
    }
    chosen = std::move(kept);
    if (o.stream_contention) QueueLoads(r, &chosen, &tree, &remote_room);
    if (o.offload_all || Peak(tree) <= budget || next >= cands.size()) break;
  }
  // Every candidate, parameters and optimizer states included, leaves the
  // peak over the budget: release waits. (Tried before the parameters on
  // the Fig. 6 trace, bench/hyperoffload_fig6.sh, they were slower at 55
  // GB/s and did not fit at 33.6 GB/s.)
  if (o.release_waits && !o.offload_all && Peak(tree) > budget) {
    ReleaseEarly(r, budget, &spare, &chosen, &tree, &remote_room);
  }
  // Clean windows: a later window of a tensor on the same tier with no
  // write since it came back (Detach without Store, at the last use).
  std::sort(chosen.begin(), chosen.end(), [](const Candidate& a, const Candidate& b) {
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.store_op < b.store_op;
  });
  for (size_t k = 1; k < chosen.size(); ++k) {
    Candidate& c = chosen[k];
    const Candidate& prev = chosen[k - 1];
    if (c.group >= 0 || prev.tensor != c.tensor || prev.tier != c.tier) continue;
    bool written = false;
    for (int32_t op = prev.consumer; op <= c.store_op && !written; ++op) {
      written = OpWrites(r.trace, r.begin + op, c.tensor);
    }
    if (written) continue;
    c.clean = true;
    c.release_op = c.store_op;
  }

  // Step 5: execution-order refinement of the Prefetches.
  RefineProblem rp;
  rp.duration_ns = r.duration;
  rp.order.resize(r.n);
  for (int32_t i = 0; i < r.n; ++i) rp.order[i] = i;
  std::vector<int32_t> schedule;
  int64_t exposed = 0;
  if (!chosen.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(DataflowGraph g, DataflowGraph::Build(r.trace, r.it));
    rp.pred_begin.assign(1, 0);
    rp.preds.reserve(static_cast<size_t>(g.num_edges()));
    for (int32_t v = 0; v < r.n; ++v) {
      absl::Span<const int32_t> pr = g.predecessors(v);
      rp.preds.insert(rp.preds.end(), pr.begin(), pr.end());
      rp.pred_begin.push_back(static_cast<int32_t>(rp.preds.size()));
    }
    rp.pinned.assign(r.n, false);
    for (const Candidate& c : chosen) {
      rp.pinned[c.store_op] = rp.pinned[c.release_op] = rp.pinned[c.consumer] = true;
      rp.prefetches.push_back(
          {c.consumer, c.earliest(), r.Load(c.tier, c.bytes), c.tier, !c.read_only});
    }
    RefineOptions ro;
    ro.residency_weight = o.residency_weight;
    ro.scan_ops = o.reorder ? o.reorder_scan_ops : 0;
    ro.max_hoisted = o.max_hoisted_ops;
    ro.stream_contention = o.stream_contention;
    SWAPPLAN_ASSIGN_OR_RETURN(RefineResult res, RefineOrder(rp, ro));
    for (size_t k = 0; k < chosen.size(); ++k) {
      chosen[k].issue_op = res.placements[k].issue_op;
      exposed += res.placements[k].exposed_ns;
    }
    if (res.hoisted_ops > 0) schedule = std::move(res.order);
  }
  for (const Candidate& c : chosen) {
    PolicyItem item = MakePolicyItem(r.trace, r.it, c.tensor, c.store_op, c.release_op, c.issue_op,
                                     c.consumer);
    item.tier = c.tier;
    item.clean = c.clean;
    item.wraps = c.wraps;
    p.items.push_back(std::move(item));
  }
  // In consumer order: the simulator runs the copies queued at one op in
  // item order, so two Prefetches issued at one op load in the order they
  // are needed, and two Stores after one op in the order the Detach
  // placement above assumed.
  std::sort(p.items.begin(), p.items.end(), [](const PolicyItem& a, const PolicyItem& b) {
    return std::tie(a.first_use_op, a.swap_out_op, a.tensor_id) <
           std::tie(b.first_use_op, b.swap_out_op, b.tensor_id);
  });
  p.schedule = std::move(schedule);
  p.expected_overhead_ns = exposed;

  // Step 6: check (releases the FIFO makes late become planned waits).
  const std::string what = absl::StrCat("offloading ", p.items.size(), " windows");
  if (p.items.empty()) {
    SWAPPLAN_RETURN_IF_ERROR(CheckPolicyFits(problem, r.unswapped, what, &p));
    return p;
  }
  CheckOptions co;
  co.device = problem.device;
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport rep, CheckMarkingReleaseWaits(r.trace, &p, co));
  // Over the budget is the planner's ResourceExhausted below; any other
  // violation is a rule the planner broke.
  const Violation* broken = nullptr;
  for (const Violation& v : rep.violations) {
    if (v.kind != ViolationKind::kOverBudget && broken == nullptr) broken = &v;
  }
  const bool fits = broken == nullptr && rep.peak_bytes <= budget;
  if (!fits && !p.schedule.empty()) {
    // The reordered policy does not check out: plan again in the recorded
    // order.
    HyperOffloadOptions plain = o;
    plain.reorder = false;
    HyperOffloadPlanner fallback(plain);
    return fallback.PlanPolicy(problem);
  }
  if (broken != nullptr) {
    return absl::InternalError(
        absl::StrCat("hyperoffload: the policy breaks a checker rule: ", broken->message));
  }
  p.expected_peak_bytes = rep.peak_bytes;
  const bool took_persistent = std::any_of(chosen.begin(), chosen.end(),
                                           [](const Candidate& c) { return c.group >= 0; });
  if (took_persistent && o.release_waits) {
    // Parameters and optimizer states cost a Prefetch per window and a
    // Store per iteration; release waits on the activations alone cost
    // forward stalls instead. Which is faster depends on the link: plan
    // the latter too and keep the faster under the evaluation simulator.
    HyperOffloadOptions alt = o;
    alt.offload_parameters = false;
    HyperOffloadPlanner other(alt);
    absl::StatusOr<Policy> q = other.PlanPolicy(problem);
    if (q.ok()) {
      if (rep.peak_bytes > budget) return q;
      // One simulator for both (their schedules are the refinement's own
      // reorderings, legal by construction: no dataflow re-check).
      SimulatorOptions so;
      so.device = problem.device;
      SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(r.trace, r.it, so));
      SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult a, sim.Run(p));
      absl::StatusOr<SimulationResult> b = sim.Run(*q);
      if (b.ok() && !b->oom.occurred && b->iteration_time_ns < a.iteration_time_ns) return q;
    }
  }
  if (rep.peak_bytes > budget) {
    return WithShortfall(absl::ResourceExhaustedError(absl::StrCat(
                             "hyperoffload: ", what, " peaks at ", rep.peak_bytes, " bytes at op ",
                             rep.peak_op, ", ", rep.peak_bytes - budget,
                             " bytes over the budget of ", budget, " bytes")),
                         rep.peak_bytes - budget);
  }
  return p;
}

}  // namespace swapplan
