// The swap MILP: windows and their domains, columns and rows (swap_model.h).
// Extraction and starting points are in swap_model_io.cc.
#include "swapplan/optimum/swap_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan {

absl::string_view WindowKindName(WindowKind k) {
  switch (k) {
    case WindowKind::kClean:
      return "clean";
    case WindowKind::kRecompute:
      return "recompute";
    case WindowKind::kWrap:
      return "wrap";
    case WindowKind::kWrapClean:
      return "wrap-clean";
    case WindowKind::kSwap:
      break;
  }
  return "swap";
}

int64_t SwapModel::ToNs(double us) { return static_cast<int64_t>(std::llround(us * 1000.0)); }

namespace {

bool HasCopyOut(WindowKind k) { return k == WindowKind::kSwap || k == WindowKind::kWrap; }
bool HasCopyIn(WindowKind k) { return k != WindowKind::kRecompute; }
bool IsWrap(WindowKind k) { return k == WindowKind::kWrap || k == WindowKind::kWrapClean; }

}  // namespace

absl::StatusOr<SwapModel> SwapModel::Build(const Trace& trace, int32_t iteration,
                                           const SimulatorOptions& sim_options,
                                           const SwapModelOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(sim_options.Validate());
  auto unsupported = [](absl::string_view what) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("optimum: the MILP does not model ", what,
                              " (docs/optimum.md: default host, full duplex, custom record "
                              "stream, OOM reported)"));
  };
  if (sim_options.device.half_duplex()) return unsupported("a half-duplex link");
  if (sim_options.record_stream != RecordStreamMode::kCustom) {
    return unsupported("the naive record stream");
  }
  if (sim_options.host_dispatch_ns != 0 || sim_options.host_event_query_ns != 0) {
    return unsupported("host dispatch time");
  }
  if (sim_options.oom_handling != OomHandling::kReport) return unsupported("Algorithm 3");
  if (sim_options.memory_limit_bytes() == kUnlimitedBytes) {
    return Error(ErrorKind::kUsage, "optimum: a device budget is required");
  }
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("optimum: iteration ", iteration, " is out of range: ",
                              trace.source(), " has ", trace.num_iterations(), " iterations"));
  }
  SwapModel m;
  m.trace_ = &trace;
  m.iteration_ = iteration;
  m.budget_ = sim_options.memory_limit_bytes();
  SimulatorOptions so = sim_options;
  so.record_timeline = true;
  so.model_pool = false;
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(trace, iteration, so));
  m.sim_.emplace(std::move(sim));
  m.n_ = m.sim_->num_ops();
  m.ideal_ns_ = m.sim_->ideal_time_ns();
  m.duration_ns_ = m.sim_->durations().duration_ns;
  // The unswapped bytes of every op, as the simulator counts them.
  Policy empty;
  empty.fingerprint = ComputeFingerprint(trace, iteration);
  SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult none, m.sim_->Run(empty));
  m.unswapped_ = none.bytes_in_use;
  m.over_.assign(m.n_, 0);
  m.stats_.ops = m.n_;
  m.stats_.unswapped_peak_bytes = none.peak_bytes;
  for (int32_t k = 0; k < m.n_; ++k) {
    m.over_[k] = m.unswapped_[k] > m.budget_;
    m.stats_.over_budget_ops += m.over_[k];
  }
  SWAPPLAN_RETURN_IF_ERROR(m.FindWindows(options));
  m.AddColumnsAndRows(options.max_order_pairs);
  m.stats_.columns = m.milp_.num_columns();
  m.stats_.binaries = m.milp_.num_integer();
  m.stats_.rows = m.milp_.num_rows();
  m.stats_.nonzeros = m.milp_.num_nonzeros();
  return m;
}

absl::Status SwapModel::FindWindows(const SwapModelOptions& options) {
  const Trace& trace = *trace_;
  const IterationInfo& iter = trace.iteration(iteration_);
  const int32_t n = n_;
  const SimulatorOptions& so = sim_->options();
  const DeviceModel& dev = so.device;
  const double h2d_bw = dev.h2d_bandwidth_bytes_per_s > 0 ? dev.h2d_bandwidth_bytes_per_s
                                                          : trace.metadata().h2d_bandwidth_bytes_per_s;
  const double d2h_bw = dev.d2h_bandwidth_bytes_per_s > 0 ? dev.d2h_bandwidth_bytes_per_s
                                                          : trace.metadata().d2h_bandwidth_bytes_per_s;
  const int64_t latency = dev.copy_latency_ns;
  // Ops over the budget, ascending.
  std::vector<int32_t> over_ops;
  for (int32_t k = 0; k < n; ++k) {
    if (over_[k]) over_ops.push_back(k);
  }
  if (over_ops.empty()) return absl::OkStatus();
  if (!(h2d_bw > 0) || !(d2h_bw > 0)) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("optimum: no copy bandwidth: none given and none in the metadata "
                              "of ",
                              trace.source()));
  }
  // Over-budget ops strictly inside (a, b).
  auto over_in = [&](int32_t a, int32_t b) {
    auto lo = std::upper_bound(over_ops.begin(), over_ops.end(), a);
    auto hi = std::lower_bound(lo, over_ops.end(), b);
    return absl::MakeConstSpan(over_ops).subspan(lo - over_ops.begin(), hi - lo);
  };
  // Local lifetime of a tensor (-1 / n outside the iteration); false when it
  // does not occupy the device during the iteration.
  auto local_life = [&](TensorId t, int32_t* alloc, int32_t* free) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device() || lt.free_op < iter.op_begin || lt.alloc_op >= iter.op_end) {
      return false;
    }
    *alloc = lt.alloc_op < iter.op_begin ? -1 : lt.alloc_op - iter.op_begin;
    *free = lt.free_op >= iter.op_end ? n : lt.free_op - iter.op_begin;
    return true;
  };
  auto writes = [&](int32_t local, TensorId t) {
    absl::Span<const TensorId> outs = trace.outputs(iter.op_begin + local);
    return std::find(outs.begin(), outs.end(), t) != outs.end();
  };
  // Most bytes the windows can take off each over-budget op (feasibility).
  std::vector<int64_t> removable(n, 0);
  std::vector<int32_t> uses;
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    int32_t alloc = 0, free = 0;
    if (!local_life(t, &alloc, &free)) continue;
    uses.clear();
    for (OpIndex g : trace.tensor_uses(t)) {
      if (g >= iter.op_begin && g < iter.op_end) uses.push_back(g - iter.op_begin);
    }
    if (uses.empty()) continue;
    const int64_t size = trace.tensor(t).size_bytes;
    const int64_t dd = TransferNs(size, d2h_bw, latency);
    const int64_t dh = TransferNs(size, h2d_bw, latency);
    const bool persistent = alloc < 0 && free >= n;
    const int32_t first = uses.front(), last = uses.back();
    auto make = [&](WindowKind kind, int32_t gap, int32_t out, int32_t use) {
      SwapWindowVar w;
      w.kind = kind;
      w.tensor = t;
      w.gap = gap;
      w.out_op = out;
      w.use_op = use;
      w.size_bytes = size;
      w.d2h_ns = HasCopyOut(kind) ? dd : 0;
      w.h2d_ns = HasCopyIn(kind) ? dh : 0;
      return w;
    };
    // --- wrap windows (first: CLEAN windows of gap 0 refer to them) --------
    bool has_wrap = false;
    if (persistent && options.advisor_kinds) {
      absl::Span<const int32_t> before = over_in(-1, first);
      absl::Span<const int32_t> after = over_in(last, n);
      if (!before.empty() || !after.empty()) {
        bool written = false;
        for (int32_t u : uses) written = written || writes(u, t);
        for (WindowKind kind : {WindowKind::kWrap, WindowKind::kWrapClean}) {
          if (kind == WindowKind::kWrapClean && written) continue;
          SwapWindowVar w = make(kind, -1, last, first);
          for (int32_t k : after) w.releases.push_back(k - 1);
          if (w.releases.empty() || w.releases.back() != n - 1) w.releases.push_back(n - 1);
          for (int32_t s = 0; s <= first; ++s) w.triggers.push_back(s);
          windows_.push_back(std::move(w));
        }
        for (int32_t k : before) removable[k] += size;
        for (int32_t k : after) removable[k] += size;
        has_wrap = true;
      }
    }
    // --- mid-iteration gaps -------------------------------------------------------
    // Recompute eligibility: an ACTIVATION made in this iteration by exactly
    // one op that does not also read it.
    int32_t producer = -1;
    bool recomputable = options.recompute && !persistent && alloc >= 0 &&
                        trace.tensor(t).kind == TensorKind::kActivation;
    if (recomputable) {
      for (int32_t u : uses) {
        if (!writes(u, t)) continue;
        if (producer >= 0) recomputable = false;
        producer = u;
      }
      if (producer < 0) recomputable = false;
      if (recomputable) {
        absl::Span<const TensorId> ins = trace.inputs(iter.op_begin + producer);
        recomputable = std::find(ins.begin(), ins.end(), t) == ins.end();
      }
    }
    bool previous_swapped = has_wrap;  // a window of the previous gap brings it from the host
    for (size_t j = 0; j + 1 < uses.size(); ++j) {
      const int32_t a = uses[j], b = uses[j + 1];
      absl::Span<const int32_t> covered = b - a >= 2 ? over_in(a, b) : absl::Span<const int32_t>();
      if (covered.empty()) {
        previous_swapped = false;
        continue;
      }
      for (int32_t k : covered) removable[k] += size;
      std::vector<int32_t> releases, triggers;
      for (int32_t k : covered) releases.push_back(k - 1);
      for (int32_t s = covered.front() + 1; s <= b; ++s) triggers.push_back(s);
      SwapWindowVar sw = make(WindowKind::kSwap, static_cast<int32_t>(j), a, b);
      sw.releases = releases;
      sw.triggers = triggers;
      windows_.push_back(std::move(sw));
      if (options.advisor_kinds && previous_swapped && !writes(a, t)) {
        SwapWindowVar cw = make(WindowKind::kClean, static_cast<int32_t>(j), a, b);
        cw.releases = releases;
        cw.triggers = triggers;
        windows_.push_back(std::move(cw));
      }
      if (recomputable && producer <= a) {
        // Every other input of the producer must occupy the device at s.
        SwapWindowVar rw = make(WindowKind::kRecompute, static_cast<int32_t>(j), a, b);
        rw.releases = releases;
        rw.recompute_ns = duration_ns_[producer];
        rw.producer_op = producer;
        if (options.recompute_transient) {
          for (TensorId o : trace.outputs(iter.op_begin + producer)) {
            if (o != t) rw.transient_bytes += trace.tensor(o).size_bytes;
          }
        }
        for (int32_t s : triggers) {
          bool ok = true;
          for (TensorId in : trace.inputs(iter.op_begin + producer)) {
            int32_t ia = 0, ifree = 0;
            ok = ok && local_life(in, &ia, &ifree) && ia <= s && s <= ifree;
          }
          if (ok) rw.triggers.push_back(s);
        }
        if (!rw.triggers.empty()) windows_.push_back(std::move(rw));
      }
      previous_swapped = true;
    }
  }
  for (int32_t k : over_ops) {
    if (unswapped_[k] - removable[k] > budget_) {
      return Error(ErrorKind::kInfeasible,
                   absl::StrCat(trace.source(), ": iteration ", iteration_, ": op ", k, " (",
                                trace.op_name_at(iter.op_begin + k), ") holds ",
                                FormatBytes(unswapped_[k]), " unswapped; even with every tensor "
                                "idle there off the device it needs ",
                                FormatBytes(unswapped_[k] - removable[k]),
                                ", over the budget of ", FormatBytes(budget_)));
    }
  }
  for (const SwapWindowVar& w : windows_) ++stats_.windows[static_cast<int>(w.kind)];
  return absl::OkStatus();
}

namespace {

// Index of the last entry of `domain` (ascending) below `k` (strictly, or
// at most k with `inclusive`); -1 when none.
int32_t LastIndex(const std::vector<int32_t>& domain, int32_t k, bool inclusive) {
  auto it = inclusive ? std::upper_bound(domain.begin(), domain.end(), k)
                      : std::lower_bound(domain.begin(), domain.end(), k);
  return static_cast<int32_t>(it - domain.begin()) - 1;
}

// The one-hot choice i of a cumulative family starting at `first`
// (c_i - c_{i-1}) times `scale`.
void ChoiceTerms(int32_t first, int32_t i, double scale, std::vector<MilpTerm>* terms) {
  terms->push_back({first + i, scale});
  if (i > 0) terms->push_back({first + i - 1, -scale});
}

}  // namespace

void SwapModel::OffTerms(const SwapWindowVar& w, int32_t k, double scale,
                         std::vector<MilpTerm>* terms, bool before_k) const {
  // Triggered by k (during op k), or strictly before k (just before op k).
  const int32_t s = LastIndex(w.triggers, k, /*inclusive=*/!before_k);
  if (IsWrap(w.kind) && (k < w.use_op || (before_k && k == w.use_op))) {
    // On the host until its swap-in: x - (triggered by k).
    terms->push_back({w.x, scale});
    if (s >= 0) terms->push_back({w.sigma + s, -scale});
    return;
  }
  // Released before k, and (mid-iteration windows) not yet triggered.
  const int32_t r = LastIndex(w.releases, k, /*inclusive=*/false);
  if (r >= 0) terms->push_back({w.rho + r, scale});
  if (!IsWrap(w.kind) && s >= 0) terms->push_back({w.sigma + s, -scale});
}

void SwapModel::AddColumnsAndRows(int32_t max_order_pairs) {
  const int32_t n = n_;
  MilpProblem& p = milp_;
  // Big M: no event of any policy ends later than every op and every copy
  // and recomputation one after the other.
  double total_ns = 0;
  for (int64_t d : duration_ns_) total_ns += static_cast<double>(d);
  for (const SwapWindowVar& w : windows_) {
    total_ns += static_cast<double>(w.d2h_ns + w.h2d_ns + w.recompute_ns);
  }
  const double M = total_ns / 1000.0 + 1.0;
  big_m_us_ = M;
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  auto d = [&](int32_t k) { return us(duration_ns_[k]); };

  start_ = -1;
  for (int32_t k = 0; k < n; ++k) {
    const int32_t c = p.AddColumn(0, M, 0, false);
    if (k == 0) start_ = c;
  }
  auto S = [&](int32_t k) { return start_ + k; };
  t_ = p.AddColumn(0, M, 1, false);
  // Per window: cumulative release and trigger binaries (rho + i: released
  // at or before releases[i]; sigma + i: triggered at or before
  // triggers[i]); the last trigger column is x.
  for (SwapWindowVar& w : windows_) {
    w.rho = p.num_columns();
    for (size_t i = 0; i < w.releases.size(); ++i) p.AddColumn(0, 1, 0, true);
    w.sigma = p.num_columns();
    for (size_t i = 0; i < w.triggers.size(); ++i) p.AddColumn(0, 1, 0, true);
    w.x = w.sigma + static_cast<int32_t>(w.triggers.size()) - 1;
    if (HasCopyOut(w.kind)) w.d2h_end = p.AddColumn(0, M, 0, false);
    if (HasCopyIn(w.kind)) w.h2d_end = p.AddColumn(0, M, 0, false);
  }
  // Stream columns: DF at every op some copy out follows, HF at every op
  // some copy in may be triggered at.
  std::vector<int32_t> df(n, -1), hf(n, -1);
  for (const SwapWindowVar& w : windows_) {
    if (HasCopyOut(w.kind) && df[w.out_op] < 0) df[w.out_op] = p.AddColumn(0, M, 0, false);
    if (HasCopyIn(w.kind)) {
      for (int32_t s : w.triggers) {
        if (hf[s] < 0) hf[s] = p.AddColumn(0, M, 0, false);
      }
    }
  }
  std::vector<int32_t> df_prev(n + 1, -1), hf_prev(n + 1, -1);  // latest column before op k
  for (int32_t k = 0; k < n; ++k) {
    df_prev[k + 1] = df[k] >= 0 ? df[k] : df_prev[k];
    hf_prev[k + 1] = hf[k] >= 0 ? hf[k] : hf_prev[k];
  }

  std::vector<MilpTerm> terms;
  // --- choice structure -----------------------------------------------------------
  // Group: the windows of one (tensor, gap), or the wrap windows of a tensor.
  for (size_t i = 0; i < windows_.size();) {
    size_t e = i;
    while (e < windows_.size() && windows_[e].tensor == windows_[i].tensor &&
           windows_[e].gap == windows_[i].gap) {
      ++e;
    }
    terms.clear();
    for (size_t j = i; j < e; ++j) terms.push_back({windows_[j].x, 1});
    if (e - i > 1) p.AddRow(terms, -kMilpInfinity, 1);
    i = e;
  }
  for (const SwapWindowVar& w : windows_) {
    const int32_t nr = static_cast<int32_t>(w.releases.size());
    const int32_t ns = static_cast<int32_t>(w.triggers.size());
    for (int32_t i = 0; i + 1 < nr; ++i) p.AddRow({{w.rho + i, 1}, {w.rho + i + 1, -1}}, -kMilpInfinity, 0);
    for (int32_t i = 0; i + 1 < ns; ++i) p.AddRow({{w.sigma + i, 1}, {w.sigma + i + 1, -1}}, -kMilpInfinity, 0);
    p.AddRow({{w.rho + nr - 1, 1}, {w.x, -1}}, 0, 0);  // released iff chosen
    if (!IsWrap(w.kind)) {
      // Triggered by s only if released before s.
      for (int32_t i = 0; i < ns; ++i) {
        const int32_t r = LastIndex(w.releases, w.triggers[i], /*inclusive=*/false);
        if (r >= 0) {
          p.AddRow({{w.sigma + i, 1}, {w.rho + r, -1}}, -kMilpInfinity, 0);
        } else {
          p.AddRow({{w.sigma + i, 1}}, -kMilpInfinity, 0);
        }
      }
    }
    if (w.kind == WindowKind::kClean) {
      // Came back from the host at out_op: the previous gap's SWAP or CLEAN
      // window (or the tensor's wrap window) is chosen.
      terms.clear();
      terms.push_back({w.x, 1});
      for (const SwapWindowVar& v : windows_) {
        if (v.tensor != w.tensor) continue;
        const bool prev_gap = v.gap == w.gap - 1 &&
                              (v.kind == WindowKind::kSwap || v.kind == WindowKind::kClean);
        const bool wrap_in = w.gap == 0 && IsWrap(v.kind);
        if (prev_gap || wrap_in) terms.push_back({v.x, -1});
      }
      p.AddRow(terms, -kMilpInfinity, 0);
    }
  }
  // --- memory: every op over the budget --------------------------------------------
  // (and, with transients, every trigger op of a RECOMPUTE window that has
  // one: the re-made other outputs of its producer count there).
  std::vector<std::vector<MilpTerm>> transient_at(n);
  for (const SwapWindowVar& w : windows_) {
    if (w.kind != WindowKind::kRecompute || w.transient_bytes == 0) continue;
    for (size_t i = 0; i < w.triggers.size(); ++i) {
      ChoiceTerms(w.sigma, static_cast<int32_t>(i), -static_cast<double>(w.transient_bytes),
                  &transient_at[w.triggers[i]]);
    }
  }
  std::vector<bool> needs_row(n);
  for (int32_t k = 0; k < n; ++k) needs_row[k] = over_[k] || !transient_at[k].empty();
  std::vector<std::vector<int32_t>> covering(n);
  for (size_t gi = 0; gi < windows_.size(); ++gi) {
    const SwapWindowVar& w = windows_[gi];
    auto cover = [&](int32_t lo, int32_t hi) {  // ops [lo, hi)
      for (int32_t k = lo; k < hi; ++k) {
        if (needs_row[k]) covering[k].push_back(static_cast<int32_t>(gi));
      }
    };
    if (IsWrap(w.kind)) {
      cover(0, w.use_op);
      cover(w.out_op + 1, n);
    } else {
      cover(w.out_op + 1, w.use_op);
    }
  }
  for (int32_t k = 0; k < n; ++k) {
    if (!needs_row[k]) continue;
    terms.clear();
    for (int32_t gi : covering[k]) {
      OffTerms(windows_[gi], k, static_cast<double>(windows_[gi].size_bytes), &terms);
    }
    terms.insert(terms.end(), transient_at[k].begin(), transient_at[k].end());
    p.AddRow(terms, static_cast<double>(unswapped_[k] - budget_), kMilpInfinity);
  }
  // RECOMPUTE: every other input of the producer on the device when the
  // recomputation runs, just before op s (the resolver's and simulator's
  // view): off_{in} counted before s, so a copy in triggered at s itself
  // (still on the link) excludes the trigger; an input RECOMPUTEd at s too
  // is re-made in the same group first (counted during s).
  {
    const IterationInfo& iter = trace_->iteration(iteration_);
    std::vector<std::vector<int32_t>> windows_of(trace_->num_tensors());
    for (size_t gi = 0; gi < windows_.size(); ++gi) {
      windows_of[windows_[gi].tensor].push_back(static_cast<int32_t>(gi));
    }
    for (const SwapWindowVar& w : windows_) {
      if (w.kind != WindowKind::kRecompute) continue;
      for (size_t i = 0; i < w.triggers.size(); ++i) {
        const int32_t s = w.triggers[i];
        terms.clear();
        ChoiceTerms(w.sigma, static_cast<int32_t>(i), 1.0, &terms);
        const size_t mine = terms.size();
        for (TensorId in : trace_->inputs(iter.op_begin + w.producer_op)) {
          for (int32_t gi : windows_of[in]) {
            const SwapWindowVar& v = windows_[gi];
            const bool copied_in = v.kind != WindowKind::kRecompute;
            const int32_t last_off = copied_in ? v.use_op : v.use_op - 1;
            const bool off_possible = IsWrap(v.kind) ? (s <= last_off || s > v.out_op)
                                                     : (s > v.out_op && s <= last_off);
            if (off_possible) OffTerms(v, s, 1.0, &terms, /*before_k=*/copied_in);
          }
        }
        if (terms.size() > mine) p.AddRow(terms, -kMilpInfinity, 1);
      }
    }
  }
  // --- time ---------------------------------------------------------------------------
  // Compute chain with recomputation before op k.
  std::vector<std::vector<MilpTerm>> recompute_at(n);
  for (const SwapWindowVar& w : windows_) {
    if (w.kind != WindowKind::kRecompute) continue;
    for (size_t i = 0; i < w.triggers.size(); ++i) {
      ChoiceTerms(w.sigma, static_cast<int32_t>(i), -us(w.recompute_ns), &recompute_at[w.triggers[i]]);
    }
  }
  for (int32_t k = 0; k < n; ++k) {
    terms.assign(recompute_at[k].begin(), recompute_at[k].end());
    terms.push_back({S(k), 1});
    if (k > 0) terms.push_back({S(k - 1), -1});
    p.AddRow(terms, k > 0 ? d(k - 1) : 0.0, kMilpInfinity);
  }
  p.AddRow({{t_, 1}, {S(n - 1), -1}}, d(n - 1), kMilpInfinity);
  // d2h stream.
  std::vector<std::vector<int32_t>> out_at(n);
  for (size_t gi = 0; gi < windows_.size(); ++gi) {
    if (HasCopyOut(windows_[gi].kind)) out_at[windows_[gi].out_op].push_back((int32_t)gi);
  }
  int32_t last_df = -1;
  for (int32_t a = 0; a < n; ++a) {
    if (df[a] < 0) continue;
    const int32_t prev = df_prev[a];
    std::vector<MilpTerm> batch_e = {{df[a], 1}, {S(a), -1}};
    std::vector<MilpTerm> batch_p = {{df[a], 1}};
    if (prev >= 0) {
      p.AddRow({{df[a], 1}, {prev, -1}}, 0, kMilpInfinity);
      batch_p.push_back({prev, -1});
    }
    for (int32_t gi : out_at[a]) {
      const SwapWindowVar& w = windows_[gi];
      const double dd = us(w.d2h_ns);
      p.AddRow({{w.d2h_end, 1}, {S(a), -1}, {w.x, -M}}, d(a) + dd - M, kMilpInfinity);
      if (prev >= 0) p.AddRow({{w.d2h_end, 1}, {prev, -1}, {w.x, -M}}, dd - M, kMilpInfinity);
      p.AddRow({{df[a], 1}, {w.d2h_end, -1}, {w.x, -M}}, -M, kMilpInfinity);
      batch_e.push_back({w.x, -dd});
      batch_p.push_back({w.x, -dd});
    }
    p.AddRow(batch_e, d(a), kMilpInfinity);
    p.AddRow(batch_p, 0, kMilpInfinity);
    last_df = df[a];
  }
  if (last_df >= 0) p.AddRow({{t_, 1}, {last_df, -1}}, 0, kMilpInfinity);
  // h2d stream, release waits, uses.
  std::vector<std::vector<MilpTerm>> in_batch(n);
  for (const SwapWindowVar& w : windows_) {
    if (HasCopyOut(w.kind)) {
      for (size_t i = 0; i < w.releases.size(); ++i) {
        const int32_t r = w.releases[i];
        if (r + 1 >= n) continue;  // a wrapping copy out may end after the last op (T >= DF)
        terms = {{S(r + 1), 1}, {w.d2h_end, -1}};
        ChoiceTerms(w.rho, static_cast<int32_t>(i), -M, &terms);
        p.AddRow(terms, -M, kMilpInfinity);
      }
    }
    if (!HasCopyIn(w.kind)) continue;
    const double dh = us(w.h2d_ns);
    p.AddRow({{S(w.use_op), 1}, {w.h2d_end, -1}, {w.x, -M}}, -M, kMilpInfinity);
    if (w.kind == WindowKind::kSwap) {
      p.AddRow({{w.h2d_end, 1}, {w.d2h_end, -1}, {w.x, -M}}, dh - M, kMilpInfinity);
    }
    for (size_t i = 0; i < w.triggers.size(); ++i) {
      const int32_t s = w.triggers[i];
      const int32_t ci = static_cast<int32_t>(i);
      terms = {{w.h2d_end, 1}};
      if (s > 0) terms.push_back({S(s - 1), -1});
      ChoiceTerms(w.sigma, ci, -M, &terms);
      p.AddRow(terms, (s > 0 ? d(s - 1) : 0.0) + dh - M, kMilpInfinity);
      if (hf_prev[s] >= 0) {
        terms = {{w.h2d_end, 1}, {hf_prev[s], -1}};
        ChoiceTerms(w.sigma, ci, -M, &terms);
        p.AddRow(terms, dh - M, kMilpInfinity);
      }
      terms = {{hf[s], 1}, {w.h2d_end, -1}};
      ChoiceTerms(w.sigma, ci, -M, &terms);
      p.AddRow(terms, -M, kMilpInfinity);
      ChoiceTerms(w.sigma, ci, -dh, &in_batch[s]);
    }
  }
  for (int32_t s = 0; s < n; ++s) {
    if (hf[s] < 0) continue;
    terms.assign(in_batch[s].begin(), in_batch[s].end());
    terms.push_back({hf[s], 1});
    if (s > 0) terms.push_back({S(s - 1), -1});
    p.AddRow(terms, s > 0 ? d(s - 1) : 0.0, kMilpInfinity);
    if (hf_prev[s] >= 0) {
      terms.assign(in_batch[s].begin(), in_batch[s].end());
      terms.push_back({hf[s], 1});
      terms.push_back({hf_prev[s], -1});
      p.AddRow(terms, 0, kMilpInfinity);
    }
  }
  // --- stream energy (no big M): what the LP relaxation needs to see that
  // copies take time. Copies out after op a or later start at E_a; those
  // released at or before r must be done when op r + 1 starts:
  //   S_{r+1} >= S_a + d_a + sum_{out_g >= a} dd_g * released_g(<= r).
  // Copies in triggered at s or later start at E_{s-1}; those first used at
  // or before u must be done when op u starts:
  //   S_u >= S_{s-1} + d_{s-1} + sum_{use_g <= u} dh_g * (x_g - triggered_g(<= s-1)).
  // Every real timeline satisfies both (one stream, serial copies).
  {
    std::vector<int32_t> outs, rels, starts, uses;
    for (const SwapWindowVar& w : windows_) {
      if (HasCopyOut(w.kind)) {
        outs.push_back(w.out_op);
        for (int32_t r : w.releases) {
          if (r + 1 < n) rels.push_back(r);
        }
      }
      if (HasCopyIn(w.kind)) {
        starts.push_back(w.triggers.front());
        uses.push_back(w.use_op);
      }
    }
    auto unique = [](std::vector<int32_t>* v) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    };
    unique(&outs);
    unique(&rels);
    unique(&starts);
    unique(&uses);
    constexpr size_t kMaxEnergyRows = 5000;
    size_t added = 0;
    for (int32_t a : outs) {
      for (int32_t r : rels) {
        if (r < a || added >= kMaxEnergyRows) continue;
        terms = {{S(r + 1), 1}, {S(a), -1}};
        for (const SwapWindowVar& w : windows_) {
          if (!HasCopyOut(w.kind) || w.out_op < a) continue;
          const int32_t i = LastIndex(w.releases, r, /*inclusive=*/true);
          if (i >= 0) terms.push_back({w.rho + i, -us(w.d2h_ns)});
        }
        if (terms.size() > 2) {
          p.AddRow(terms, d(a), kMilpInfinity);
          ++added;
        }
      }
    }
    for (int32_t st : starts) {
      for (int32_t u : uses) {
        if (u < st || added >= 2 * kMaxEnergyRows) continue;
        terms = {{S(u), 1}};
        if (st > 0) terms.push_back({S(st - 1), -1});
        const size_t fixed = terms.size();
        for (const SwapWindowVar& w : windows_) {
          if (!HasCopyIn(w.kind) || w.use_op > u || w.triggers.back() < st) continue;
          terms.push_back({w.x, -us(w.h2d_ns)});
          const int32_t i = LastIndex(w.triggers, st - 1, /*inclusive=*/true);
          if (i >= 0) terms.push_back({w.sigma + i, us(w.h2d_ns)});
        }
        if (terms.size() > fixed) {
          p.AddRow(terms, st > 0 ? d(st - 1) : 0.0, kMilpInfinity);
          ++added;
        }
      }
    }
    stats_.energy_rows = static_cast<int32_t>(added);
  }
  // --- exact batches: pairwise order of copies that may share an op -----------
  struct Pair {
    int32_t a, b;   // windows
    bool out;       // d2h (else h2d)
  };
  std::vector<Pair> pairs;
  auto other_group = [&](int32_t a, int32_t b) {
    return windows_[a].tensor != windows_[b].tensor || windows_[a].gap != windows_[b].gap;
  };
  for (int32_t a = 0; a < n; ++a) {
    for (size_t i = 0; i < out_at[a].size(); ++i) {
      for (size_t j = i + 1; j < out_at[a].size(); ++j) {
        if (other_group(out_at[a][i], out_at[a][j])) pairs.push_back({out_at[a][i], out_at[a][j], true});
      }
    }
  }
  std::vector<int32_t> in_windows;
  for (size_t gi = 0; gi < windows_.size(); ++gi) {
    if (HasCopyIn(windows_[gi].kind)) in_windows.push_back(static_cast<int32_t>(gi));
  }
  for (size_t i = 0; i < in_windows.size() && pairs.size() <= static_cast<size_t>(max_order_pairs); ++i) {
    const SwapWindowVar& u = windows_[in_windows[i]];
    for (size_t j = i + 1; j < in_windows.size(); ++j) {
      const SwapWindowVar& v = windows_[in_windows[j]];
      const bool overlap = u.triggers.front() <= v.triggers.back() && v.triggers.front() <= u.triggers.back();
      if (overlap && other_group(in_windows[i], in_windows[j])) {
        pairs.push_back({in_windows[i], in_windows[j], false});
      }
    }
  }
  if (pairs.empty() || pairs.size() > static_cast<size_t>(max_order_pairs)) return;
  for (const Pair& pr : pairs) {
    const SwapWindowVar& u = windows_[pr.a];
    const SwapWindowVar& v = windows_[pr.b];
    const int32_t eu = pr.out ? u.d2h_end : u.h2d_end, ev = pr.out ? v.d2h_end : v.h2d_end;
    const double du = us(pr.out ? u.d2h_ns : u.h2d_ns), dv = us(pr.out ? v.d2h_ns : v.h2d_ns);
    const int32_t y = p.AddColumn(0, 1, 0, true);
    // y = 1: u first (v ends at least its own duration after u); y = 0: v
    // first. Both rows hold only when both windows are chosen.
    p.AddRow({{ev, 1}, {eu, -1}, {y, -M}, {u.x, -M}, {v.x, -M}}, dv - 3 * M, kMilpInfinity);
    p.AddRow({{eu, 1}, {ev, -1}, {y, M}, {u.x, -M}, {v.x, -M}}, du - 2 * M, kMilpInfinity);
  }
  stats_.order_pairs = static_cast<int32_t>(pairs.size());
}

}  // namespace swapplan
