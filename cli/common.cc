#include "common.h"

#include "absl/strings/str_cat.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/units.h"
#include "trace_input.h"

namespace swapplan::cli {

int32_t LastCompleteIteration(const Trace& trace) {
  for (int32_t it = trace.num_iterations() - 1; it >= 0; --it) {
    const IterationInfo& info = trace.iteration(it);
    bool forward = false, backward = false;
    for (OpIndex i = info.op_begin; i < info.op_end && !(forward && backward); ++i) {
      forward = forward || trace.op(i).phase == Phase::kForward;
      backward = backward || trace.op(i).phase == Phase::kBackward;
    }
    if (forward && backward) return it;
  }
  return trace.num_iterations() - 1;
}

void AddIterationFlag(CLI::App* sub, FlagSet* flags, std::optional<int64_t>* iteration) {
  flags->Int(sub, "--iteration", iteration,
             "Iteration to use (default: the last complete one: the last with forward and "
             "backward ops)",
             0, INT32_MAX);
}

int32_t ResolveIteration(const std::optional<int64_t>& flag, const Trace& trace, FlagSet* flags) {
  if (!flag) return LastCompleteIteration(trace);
  if (*flag >= trace.num_iterations()) {
    flags->Add(absl::StrCat("--iteration ", *flag, " is out of range: ", trace.source(), " has ",
                            trace.num_iterations(), " iterations"));
    return 0;
  }
  return static_cast<int32_t>(*flag);
}

absl::StatusOr<Trace> ReadTraceArg(const std::string& path, FlagSet* flags) {
  if (path.empty()) {
    if (flags->ok()) flags->Add("missing trace argument");
    return flags->Status();
  }
  absl::StatusOr<Trace> t = LoadTrace(path);  // any supported format (trace_input.h)
  if (t.ok() || flags->ok()) return t;
  flags->Add(std::string(t.status().message()));
  return flags->Status();
}

std::string BytesExact(int64_t b) {
  return b < 1024 ? FormatBytes(b) : absl::StrCat(FormatBytes(b), " (", b, " B)");
}

std::string OpText(const Trace& trace, int32_t iteration, int32_t op) {
  return absl::StrCat("op ", op, " (",
                      trace.op_name_at(trace.iteration(iteration).op_begin + op), ")");
}

nlohmann::json OpNameJson(const Trace& trace, int32_t iteration, int32_t op) {
  if (op < 0) return nullptr;
  return trace.op_name_at(trace.iteration(iteration).op_begin + op);
}

nlohmann::json OpJson(int32_t op) {
  if (op < 0) return nullptr;
  return op;
}

std::string LinkText(const DeviceModel& m) {
  auto bw = [](double b) { return b > 0 ? FormatBandwidth(b) : std::string("unknown"); };
  std::string out = absl::StrCat("h2d ", bw(m.h2d_bandwidth_bytes_per_s), ", d2h ",
                      bw(m.d2h_bandwidth_bytes_per_s), ", latency ",
                      FormatDurationNs(m.copy_latency_ns),
                      m.copy_engines == 1 ? ", half duplex" : ", full duplex");
  for (const MemoryTier& t : m.tiers) {
    absl::StrAppend(&out, "; tier ", t.name, " ", FormatBytes(t.capacity_bytes), ", store ",
                    FormatBandwidth(t.store_bandwidth_bytes_per_s), ", load ",
                    FormatBandwidth(t.load_bandwidth_bytes_per_s), ", latency ",
                    FormatDurationNs(t.latency_ns),
                    t.shared_by_ranks > 1 ? absl::StrCat(", shared by ", t.shared_by_ranks, " ranks")
                                          : std::string());
  }
  return out;
}

std::string DeviceText(const DeviceModel& m) {
  if (m.capacity_bytes == kUnlimitedCapacityBytes) return absl::StrCat(m.name, ": unlimited");
  return absl::StrCat(m.name, ": ", BytesExact(m.capacity_bytes));
}

nlohmann::json DeviceJson(const ResolvedDevice& d) {
  const DeviceModel& m = d.model;
  nlohmann::json j;
  j["name"] = m.name;
  j["capacity_bytes"] =
      m.capacity_bytes == kUnlimitedCapacityBytes ? nlohmann::json(nullptr) : nlohmann::json(m.capacity_bytes);
  j["reserve_bytes"] = m.reserve_bytes;
  j["h2d_bandwidth_bytes_per_s"] = m.h2d_bandwidth_bytes_per_s;
  j["d2h_bandwidth_bytes_per_s"] = m.d2h_bandwidth_bytes_per_s;
  j["copy_latency_ns"] = m.copy_latency_ns;
  j["copy_engines"] = m.copy_engines;
  j["compute_time_scale"] = m.compute_time_scale;
  j["compute_time_scale_source"] = d.compute_scale_source;
  j["peak_flops_per_s"] = m.peak_flops_per_s;
  j["memory_bandwidth_bytes_per_s"] = m.memory_bandwidth_bytes_per_s;
  j["interconnect_bandwidth_bytes_per_s"] = m.interconnect_bandwidth_bytes_per_s;
  if (!m.tiers.empty()) {
    nlohmann::json tiers = nlohmann::json::array();
    for (const MemoryTier& t : m.tiers) {
      tiers.push_back({{"name", t.name},
                       {"capacity_bytes", t.capacity_bytes},
                       {"store_bandwidth_bytes_per_s", t.store_bandwidth_bytes_per_s},
                       {"load_bandwidth_bytes_per_s", t.load_bandwidth_bytes_per_s},
                       {"latency_ns", t.latency_ns},
                       {"shared_by_ranks", t.shared_by_ranks}});
    }
    j["tiers"] = std::move(tiers);
  }
  return j;
}

nlohmann::json WarningsJson(const std::vector<std::string>& warnings) {
  nlohmann::json a = nlohmann::json::array();
  for (const std::string& w : warnings) a.push_back(w);
  return a;
}

}  // namespace swapplan::cli
