// Pairing an execution trace with a Kineto trace of the same run.
//
// LoadKinetoPairing keeps, per Kineto op, the device time of the work it
// launched itself (not inside a child op; host time when the trace has no
// device activity) and the allocator's Total Allocated when it ended.
// PairWithEt matches ET nodes to those ops by record-function id and checks
// the names (see et_capture.h).
#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "import/formats.h"
#include "import/kineto.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

constexpr double kMinAgreement = 0.9;

int64_t Median(std::vector<int64_t>* v) {
  if (v->empty()) return -1;
  std::nth_element(v->begin(), v->begin() + static_cast<long>(v->size() / 2), v->end());
  return (*v)[v->size() / 2];
}

}  // namespace

absl::StatusOr<EtPairing> LoadKinetoPairing(const std::string& path, const ImportOptions& options) {
  ImportOptions kopts = options;
  kopts.format = std::string(kFormatKineto);
  kopts.kineto_path.clear();
  SWAPPLAN_ASSIGN_OR_RETURN(
      std::unique_ptr<ImportInput> in,
      ImportInput::OpenFile(path, kopts, [](absl::string_view head, bool all) {
        return DetectContent(head, all).format == kFormatKineto;
      }));
  ContentGuess g = DetectContent(in->head(), in->head_is_all());
  if (g.format != kFormatKineto) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": --kineto expects a Kineto trace; found ", g.evidence,
        g.format.empty() ? "" : absl::StrCat(" (", g.format, ")"), " [unknown-format]"));
  }
  KinetoCapture cap;
  SWAPPLAN_RETURN_IF_ERROR(ParseKineto(in->stream(), path, kopts, in->ErrorFn(), &cap));
  KinetoIndex idx = IndexKineto(cap);

  const size_t n = cap.ops.size();
  std::vector<int64_t> self_device(n, 0), child_host(n, 0);
  for (size_t k = 0; k < cap.launches.size(); ++k) {
    const int32_t op = idx.launch_op[k];
    if (op < 0) continue;
    auto d = cap.device_ns.find(cap.launches[k].correlation);
    if (d != cap.device_ns.end()) self_device[op] = SatAdd(self_device[op], d->second);
  }
  for (size_t i = 0; i < n; ++i) {
    if (idx.parent[i] >= 0) {
      int64_t& c = child_host[idx.parent[i]];
      c = SatAdd(c, cap.ops[i].end_ns - cap.ops[i].ts_ns);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> totals;  // (ts, Total Allocated)
  int64_t peak = -1;
  for (uint32_t k : idx.device_memory) {
    const KMemory& m = cap.memory[k];
    if (m.total_allocated < 0) continue;
    totals.emplace_back(m.ts_ns, m.total_allocated);
    peak = std::max(peak, m.total_allocated);
  }
  int64_t before_first = -1;
  if (!idx.device_memory.empty()) {
    const KMemory& first = cap.memory[idx.device_memory.front()];
    if (first.total_allocated >= 0) before_first = SatSub(first.total_allocated, first.bytes);
  }
  EtPairing p;
  p.path = path;
  p.names = cap.names;
  for (size_t i = 0; i < p.names.size(); ++i) p.name_index.emplace(p.names[i], static_cast<int32_t>(i));
  p.ops.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const KOp& o = cap.ops[i];
    EtPairing::KOpRecord r;
    r.name = o.name;
    r.rf_id = o.rf_id;
    r.external_id = o.external_id;
    p.has_rf_ids = p.has_rf_ids || o.rf_id >= 0;
    r.timing.duration_ns = idx.any_device_activity
                               ? self_device[i]
                               : std::max<int64_t>(o.end_ns - o.ts_ns - child_host[i], 0);
    if (!totals.empty()) {
      auto it = std::upper_bound(totals.begin(), totals.end(), o.end_ns,
                                 [](int64_t v, const std::pair<int64_t, int64_t>& x) {
                                   return v < x.first;
                                 });
      r.timing.allocator_bytes = it == totals.begin() ? before_first : (it - 1)->second;
    }
    p.ops.push_back(r);
    const NameTraits& tr = idx.traits[o.name];
    if (tr.profiler_step && tr.step_number >= 0) p.step_wall_ns[tr.step_number] = o.end_ns - o.ts_ns;
  }
  p.timing_source = idx.any_device_activity
                        ? "device time of the kernels, copies and sets each op launched"
                        : "host time of each op (no device activity in the trace)";
  for (const KinetoCapture::Device& d : cap.devices) {
    if (d.id == std::max(idx.memory_device_id, 0)) {
      p.device.device_name = d.name;
      p.device.device_memory_bytes = std::max<int64_t>(d.memory_bytes, 0);
    }
  }
  p.allocator_peak_bytes = peak;
  return p;
}

absl::Status PairWithEt(const EtCapture& cap, const std::string& et_source, EtPairing* p) {
  // ET nodes that Kineto records too (everything but the ET's own roots), in
  // record-function order.
  std::vector<int32_t> kname(cap.names.size(), -1);  // ET name -> Kineto name
  for (size_t i = 0; i < cap.names.size(); ++i) {
    auto it = p->name_index.find(cap.names[i]);
    if (it != p->name_index.end()) kname[i] = it->second;
  }
  std::vector<uint32_t> nodes;
  for (uint32_t i = 0; i < cap.nodes.size(); ++i) {
    const EtNode& nd = cap.nodes[i];
    if (nd.rf_id < 0 || nd.gpu || absl::StartsWith(cap.names[nd.name], "[pytorch|profiler|")) {
      continue;
    }
    nodes.push_back(i);
  }
  std::sort(nodes.begin(), nodes.end(), [&](uint32_t x, uint32_t y) {
    return cap.nodes[x].rf_id < cap.nodes[y].rf_id;
  });
  p->by_node.assign(cap.nodes.size(), PairedTiming{});
  p->paired.assign(cap.nodes.size(), 0);
  if (nodes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        et_source, ": no node carries a record-function id (rf_id); cannot pair it with ",
        p->path, " [kineto-pairing]"));
  }
  // Kineto ops sorted by key (Record function id, else External id).
  std::vector<std::pair<int64_t, uint32_t>> keyed;
  for (uint32_t k = 0; k < p->ops.size(); ++k) {
    const int64_t key = p->has_rf_ids ? p->ops[k].rf_id : p->ops[k].external_id;
    if (key >= 0) keyed.emplace_back(key, k);
  }
  std::sort(keyed.begin(), keyed.end());
  auto find = [&](int64_t key) -> int64_t {
    auto it = std::lower_bound(keyed.begin(), keyed.end(), std::make_pair(key, uint32_t{0}));
    return it != keyed.end() && it->first == key ? it - keyed.begin() : -1;
  };
  auto agrees = [&](size_t s, int64_t d) {
    const EtNode& nd = cap.nodes[nodes[s]];
    const int64_t pos = find(nd.rf_id + d);
    return pos >= 0 && p->ops[keyed[pos].second].name == kname[nd.name];
  };
  // One alignment: start with offset d0 and, where names stop agreeing,
  // resynchronise on a later Kineto op (the offset between the two id
  // counters changes where the ET switches threads). Returns the Kineto op
  // of each node (-1 unpaired), or an empty vector when fewer than 90 %
  // can agree.
  const size_t n = nodes.size();
  const size_t allowed_misses = n - static_cast<size_t>(kMinAgreement * static_cast<double>(n));
  size_t best_agree = 0;
  auto walk = [&](int64_t d0) {
    std::vector<int64_t> match(n, -1);
    int64_t d = d0;
    int64_t last_pos = -1;
    size_t misses = 0, agree = 0;
    for (size_t s = 0; s < n; ++s) {
      const EtNode& nd = cap.nodes[nodes[s]];
      int64_t pos = find(nd.rf_id + d);
      if (pos > last_pos && p->ops[keyed[pos].second].name == kname[nd.name]) {
        match[s] = keyed[pos].second;
        last_pos = pos;
        ++agree;
        continue;
      }
      bool synced = false;
      if (kname[nd.name] >= 0) {
        const int64_t end = std::min<int64_t>(static_cast<int64_t>(keyed.size()), last_pos + 4097);
        for (int64_t q = last_pos + 1; q < end && !synced; ++q) {
          if (p->ops[keyed[q].second].name != kname[nd.name]) continue;
          const int64_t nd2 = keyed[q].first - nd.rf_id;
          int ok = 0, tried = 0;
          for (size_t t = s + 1; t < n && tried < 3; ++t, ++tried) ok += agrees(t, nd2) ? 1 : 0;
          if (tried == 0 || ok * 3 >= tried * 2) {
            d = nd2;
            match[s] = keyed[q].second;
            last_pos = q;
            ++agree;
            synced = true;
          }
        }
      }
      if (!synced && ++misses > allowed_misses) {
        best_agree = std::max(best_agree, agree);
        return std::vector<int64_t>();
      }
    }
    best_agree = std::max(best_agree, agree);
    return match;
  };
  std::vector<std::vector<int64_t>> accepted;
  size_t direct = 0;
  for (size_t s = 0; s < n; ++s) direct += agrees(s, 0) ? 1 : 0;
  best_agree = direct;
  bool aligned = false;
  if (direct >= n - allowed_misses) {
    std::vector<int64_t> m(n, -1);
    for (size_t s = 0; s < n; ++s) {
      if (agrees(s, 0)) m[s] = keyed[find(cap.nodes[nodes[s]].rf_id)].second;
    }
    accepted.push_back(std::move(m));
  } else if (!p->has_rf_ids) {
    // Every offset that makes the first nodes agree is a start (several
    // when the Kineto trace covers more iterations than the ET).
    aligned = true;
    size_t first = 0;
    while (first < n && kname[cap.nodes[nodes[first]].name] < 0) ++first;
    if (first < n) {
      const EtNode& a = cap.nodes[nodes[first]];
      for (const auto& [key, k] : keyed) {
        if (p->ops[k].name != kname[a.name]) continue;
        const int64_t d = key - a.rf_id;
        int ok = 0;
        for (size_t t = first; t < n && t < first + 8; ++t) ok += agrees(t, d) ? 1 : 0;
        if (ok < 6) continue;
        std::vector<int64_t> m = walk(d);
        if (!m.empty()) accepted.push_back(std::move(m));
      }
    }
    // A true alignment covers one iteration of the Kineto trace tightly; one
    // that starts in the middle of an iteration jumps into the next one.
    // Keep the tightest (one per matching iteration).
    auto span = [&](const std::vector<int64_t>& m) {
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (int64_t k : m) {
        if (k < 0) continue;
        const int64_t key = p->has_rf_ids ? p->ops[k].rf_id : p->ops[k].external_id;
        lo = std::min(lo, key);
        hi = std::max(hi, key);
      }
      return hi >= lo ? hi - lo : INT64_MAX;
    };
    int64_t tightest = INT64_MAX;
    for (const auto& m : accepted) tightest = std::min(tightest, span(m));
    std::vector<std::vector<int64_t>> kept;
    absl::flat_hash_set<int64_t> first_ops;
    for (auto& m : accepted) {
      if (span(m) > tightest + tightest / 20 + 16) continue;
      int64_t first_op = -1;
      for (int64_t k : m) {
        if (k >= 0) {
          first_op = k;
          break;
        }
      }
      if (first_ops.insert(first_op).second) kept.push_back(std::move(m));
    }
    accepted = std::move(kept);
  }
  if (accepted.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: does not pair with %s: %s; the best alignment agrees on %.0f%% of %d op names "
        "(at least %.0f%% needed) — the traces are probably of different runs [kineto-pairing]",
        p->path, et_source,
        p->has_rf_ids ? "paired by Record function id = rf_id"
                      : "no Record function id in the Kineto trace; aligned External id with rf_id",
        100.0 * static_cast<double>(best_agree) / static_cast<double>(n), static_cast<int>(n),
        100.0 * kMinAgreement));
  }
  std::vector<int64_t> durs, allocs;
  for (size_t s = 0; s < n; ++s) {
    durs.clear();
    allocs.clear();
    for (const std::vector<int64_t>& m : accepted) {
      if (m[s] < 0) continue;
      const PairedTiming& t = p->ops[m[s]].timing;
      durs.push_back(t.duration_ns);
      if (t.allocator_bytes >= 0) allocs.push_back(t.allocator_bytes);
    }
    if (durs.empty()) continue;
    p->paired[nodes[s]] = 1;
    p->by_node[nodes[s]].duration_ns = Median(&durs);
    p->by_node[nodes[s]].allocator_bytes = Median(&allocs);
  }
  const char* key = p->has_rf_ids ? "Record function id" : "External id";
  p->method = !aligned ? absl::StrCat(key, " = rf_id")
              : accepted.size() == 1
                  ? absl::StrCat(key, " aligned with rf_id on names")
                  : absl::StrCat(key, " aligned with rf_id on names: ", accepted.size(),
                                 " iterations of the Kineto trace match the execution trace, "
                                 "each op's median is used");
  return absl::OkStatus();
}

}  // namespace swapplan::import_internal
