#include "swapplan/sim/chrome_trace.h"
#include "swapplan/trace/tensor_label.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace swapplan {
namespace {

using Json = nlohmann::json;

constexpr int kPid = 1;
constexpr int kHostTid = 1, kComputeTid = 2, kD2HTid = 3, kH2DTid = 4;

double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

Json Track(int tid, const std::string& name) {
  return {{"name", "thread_name"},
          {"ph", "M"},
          {"pid", kPid},
          {"tid", tid},
          {"args", {{"name", name}}}};
}

Json Span(const std::string& name, const char* cat, int tid, const TimelineSpan& s, Json args) {
  return {{"name", name},
          {"cat", cat},
          {"ph", "X"},
          {"pid", kPid},
          {"tid", tid},
          {"ts", Us(s.start_ns)},
          {"dur", Us(s.end_ns - s.start_ns)},
          {"args", std::move(args)}};
}

}  // namespace

std::string TimelineToChromeTrace(const Trace& trace, const Policy& policy,
                                  const SimulationResult& r) {
  const IterationInfo& iter = trace.iteration(r.iteration);
  Json events = Json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"args",
                     {{"name", absl::StrCat("swapplan simulate: ", trace.source(), ", iteration ",
                                            r.iteration)}}}});
  events.push_back(Track(kHostTid, "host"));
  events.push_back(Track(kComputeTid, "compute"));
  events.push_back(Track(kD2HTid, r.device.half_duplex() ? "link (d2h + h2d)" : "d2h"));
  if (!r.device.half_duplex()) events.push_back(Track(kH2DTid, "h2d"));
  const int h2d_tid = r.device.half_duplex() ? kD2HTid : kH2DTid;
  // Tier k >= 1: its store and load tracks after the host's (one "link"
  // track when half duplex).
  const int num_tiers = r.device.num_tiers();
  auto tier_tid = [&](int32_t tier, bool out) {
    if (tier <= 0 || tier >= num_tiers) return out ? kD2HTid : h2d_tid;
    const int base = kH2DTid + 1 + 2 * (tier - 1);
    return out || r.device.half_duplex() ? base : base + 1;
  };
  for (int32_t k = 1; k < num_tiers; ++k) {
    const std::string& name = r.device.TierName(k);
    if (r.device.half_duplex()) {
      events.push_back(Track(tier_tid(k, true), absl::StrCat(name, " link (store + load)")));
    } else {
      events.push_back(Track(tier_tid(k, true), absl::StrCat(name, " store")));
      events.push_back(Track(tier_tid(k, false), absl::StrCat(name, " load")));
    }
  }
  // The memory counter: bytes in use from the start of each op.
  std::vector<int64_t> op_start(r.bytes_in_use.size(), -1);
  const TensorLabeler names(trace);
  for (const TimelineSpan& s : r.timeline) {
    const std::string op_name = s.kind == SpanKind::kD2H || s.kind == SpanKind::kH2D
                                    ? std::string()
                                    : trace.op_name_at(iter.op_begin + s.index);
    const Phase phase = s.kind == SpanKind::kD2H || s.kind == SpanKind::kH2D
                            ? Phase::kOther
                            : trace.op(iter.op_begin + s.index).phase;
    switch (s.kind) {
      case SpanKind::kOp:
        events.push_back(Span(op_name, "op", kComputeTid, s,
                              {{"op", s.index}, {"phase", std::string(PhaseName(phase))}}));
        if (static_cast<size_t>(s.index) < op_start.size()) op_start[s.index] = s.start_ns;
        break;
      case SpanKind::kRecompute:
        events.push_back(Span(absl::StrCat("recompute for ", op_name), "recompute", kComputeTid, s,
                              {{"op", s.index}}));
        break;
      case SpanKind::kStall:
        events.push_back(Span(absl::StrCat("stall before ", op_name), "stall", kComputeTid, s,
                              {{"op", s.index}}));
        break;
      case SpanKind::kDispatch:
        events.push_back(Span(op_name, "dispatch", kHostTid, s, {{"op", s.index}}));
        break;
      case SpanKind::kD2H:
      case SpanKind::kH2D: {
        const PolicyItem& it = policy.items[s.index];
        const bool out = s.kind == SpanKind::kD2H;
        events.push_back(
            Span(absl::StrCat(out ? "out " : "in ", names.Label(it.tensor_id, LabelForm::kShort)),
                 out ? "d2h" : "h2d", tier_tid(it.tier, out), s,
                 {{"tensor", it.tensor_id},
                  {"label", names.Label(it.tensor_id)},
                  {"bytes", it.size_bytes},
                  {"item", s.index},
                  {"tier", it.tier}}));
        break;
      }
    }
  }
  for (size_t op = 0; op < op_start.size(); ++op) {
    if (op_start[op] < 0) continue;
    events.push_back({{"name", "device memory"},
                      {"ph", "C"},
                      {"pid", kPid},
                      {"ts", Us(op_start[op])},
                      {"args", {{"bytes", r.bytes_in_use[op]}}}});
  }
  Json root = {{"displayTimeUnit", "ns"}, {"traceEvents", std::move(events)}};
  return root.dump() + "\n";
}

}  // namespace swapplan
