#include "device_flags.h"

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "swapplan/device/presets.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

std::string Tflops(double flops) { return absl::StrFormat("%.0f TFLOP/s", flops / 1e12); }

std::string Factor(double x) { return absl::StrFormat("%.4g", x); }

std::string DoesNotRecord(const DeviceDefaults& d) {
  return d.source.empty() ? std::string() : absl::StrCat(" (", d.source, " does not record it)");
}

// Chooses the compute time scale and says why.
void ResolveComputeScale(const DeviceFlags& f, const DeviceDefaults& d,
                         const DevicePresetInfo* target, ResolvedDevice* r) {
  DeviceModel& m = r->model;
  const bool cpu = IsCpuDeviceName(d.recorded_device);
  if (f.compute_scale) {
    m.compute_time_scale = *f.compute_scale;
    r->compute_scale_source = absl::StrCat("--compute-scale ", Factor(*f.compute_scale), "x");
    return;
  }
  m.compute_time_scale = d.compute_time_scale;
  r->compute_scale_source = d.compute_time_scale == 1.0 ? "as recorded" : "the policy's";
  if (d.recorded_device.empty()) return;  // nothing was recorded: nothing to rescale
  if (cpu) {
    r->compute_scale_source = "as recorded (CPU times)";
    r->warnings.push_back(absl::StrCat(
        d.source, " was recorded on a CPU: its op durations are CPU times",
        target != nullptr ? absl::StrCat(" and no CPU-to-", m.name, " factor is known") : "",
        "; give --compute-scale F to plan with device times"));
    return;
  }
  if (target == nullptr || !f.device) return;
  const DevicePresetInfo* recorded = MatchRecordedDevice(d.recorded_device);
  if (recorded == nullptr) {
    r->warnings.push_back(absl::StrCat("the recording device '", d.recorded_device,
                                       "' of ", d.source, " is no preset: op durations are kept "
                                       "as recorded; give --compute-scale F to rescale them for ",
                                       m.name));
    return;
  }
  if (recorded == target) {
    r->compute_scale_source = absl::StrCat("as recorded (recorded on ", target->name, ")");
    m.compute_time_scale = 1.0;
    return;
  }
  const double from = recorded->model.peak_flops_per_s, to = target->model.peak_flops_per_s;
  m.compute_time_scale = from / to;
  r->compute_scale_source =
      absl::StrCat("--device ", m.name, ": peak 16-bit FLOP/s of ", recorded->name, " (",
                   Tflops(from), ") / ", target->name, " (", Tflops(to), ")");
}

}  // namespace

void AddDeviceFlags(CLI::App* sub, FlagSet* flags, DeviceFlags* f, const DeviceFlagChoice& c) {
  flags->Custom(
      sub, "--device",
      [f](const std::string& name) -> std::string {
        if (FindDevicePreset(name) == nullptr) {
          return std::string(DevicePresetModel(name).status().message());
        }
        f->device = name;
        return "";
      },
              absl::StrCat("Device preset (", absl::StrJoin(DevicePresetNames(), ", "),
                           "; `swapplan devices`); the flags below override its figures",
                           c.default_device.empty() ? "" : absl::StrCat(" (default ",
                                                                        c.default_device, ")")),
      "NAME");
  flags->Size(sub, "--device-memory", &f->device_memory_bytes,
              "Device memory capacity, e.g. 80GiB (default: the preset's, else the trace's)");
  if (c.reserve) {
    flags->Size(sub, "--reserve", &f->reserve_bytes,
                "Kept free for fragmentation and workspace, e.g. 2GiB; budget = device memory - "
                "reserve (default 0B)");
  }
  flags->Bandwidth(sub, "--h2d-bandwidth", &f->h2d_bandwidth_bytes_per_s,
                   "Host-to-device copy bandwidth, e.g. 25GB/s (default: the preset's, else the "
                   "trace's)");
  flags->Bandwidth(sub, "--d2h-bandwidth", &f->d2h_bandwidth_bytes_per_s,
                   "Device-to-host copy bandwidth, e.g. 25GB/s (default: the preset's, else the "
                   "trace's)");
  flags->Duration(sub, "--copy-latency", &f->copy_latency_ns,
                  "Fixed cost of every copy, e.g. 10us (default: the preset's, else 0ns)");
  sub->add_flag("--half-duplex", f->half_duplex,
                "Both directions share one copy engine: copies run one at a time");
  if (c.compute_scale) {
    flags->Ratio(sub, "--compute-scale", &f->compute_scale,
                 "Multiply recorded op durations by this, e.g. 0.5x for a device twice as fast "
                 "as the recording one (default: from --device's peak FLOP/s, else 1x)");
  }
  if (c.roofline) {
    flags->Number(sub, "--peak-flops", &f->peak_flops_per_s,
                  "Peak dense 16-bit FLOP/s for roofline durations, e.g. 312e12", 1, 1e20);
    flags->Bandwidth(sub, "--memory-bandwidth", &f->memory_bandwidth_bytes_per_s,
                     "Device memory (HBM) bandwidth for roofline durations, e.g. 2TB/s");
    flags->Bandwidth(sub, "--interconnect-bandwidth", &f->interconnect_bandwidth_bytes_per_s,
                     "Device-to-device link bandwidth per direction for collectives, e.g. "
                     "300GB/s");
  }
  if (c.remote_tier) {
    flags->Size(sub, "--remote-memory", &f->remote_memory_bytes,
                "Add a remote memory tier (a node's shared pool, tier 1 of a policy) of this "
                "capacity, e.g. 1TiB");
    flags->Bandwidth(sub, "--remote-bandwidth", &f->remote_bandwidth_bytes_per_s,
                     "Remote tier bandwidth in both directions, e.g. 50GB/s (needed with "
                     "--remote-memory)");
    flags->Bandwidth(sub, "--remote-store-bandwidth", &f->remote_store_bandwidth_bytes_per_s,
                     "Device-to-remote (Store) bandwidth (default --remote-bandwidth)");
    flags->Bandwidth(sub, "--remote-load-bandwidth", &f->remote_load_bandwidth_bytes_per_s,
                     "Remote-to-device (Prefetch) bandwidth (default --remote-bandwidth)");
    flags->Duration(sub, "--remote-latency", &f->remote_latency_ns,
                    "Fixed cost of every copy to or from the remote tier, e.g. 5us (default 0ns)");
    flags->Int(sub, "--remote-shared-by", &f->remote_shared_by_ranks,
               "Ranks of a node sharing the remote tier; each gets 1/N of its capacity and "
               "bandwidth (default 1)",
               1, 1 << 20);
  }
}

namespace {

// The remote tier of --remote-memory and its figures; problems to `flags`.
void ResolveRemoteTier(const DeviceFlags& f, FlagSet* flags, DeviceModel* m) {
  const bool any = f.remote_bandwidth_bytes_per_s || f.remote_store_bandwidth_bytes_per_s ||
                   f.remote_load_bandwidth_bytes_per_s || f.remote_latency_ns ||
                   f.remote_shared_by_ranks;
  if (!f.remote_memory_bytes) {
    if (any && !flags->Given("--remote-memory")) {
      flags->Add("the --remote-* figures need --remote-memory (the remote tier's capacity)");
    }
    return;
  }
  MemoryTier t;
  t.name = "remote";
  t.capacity_bytes = *f.remote_memory_bytes;
  const std::optional<double> both = f.remote_bandwidth_bytes_per_s;
  const std::optional<double> store =
      f.remote_store_bandwidth_bytes_per_s ? f.remote_store_bandwidth_bytes_per_s : both;
  const std::optional<double> load =
      f.remote_load_bandwidth_bytes_per_s ? f.remote_load_bandwidth_bytes_per_s : both;
  if (!store || !load) {
    flags->Add("--remote-memory: give --remote-bandwidth (or both --remote-store-bandwidth and "
               "--remote-load-bandwidth)");
    return;
  }
  t.store_bandwidth_bytes_per_s = *store;
  t.load_bandwidth_bytes_per_s = *load;
  t.latency_ns = f.remote_latency_ns.value_or(0);
  t.shared_by_ranks = static_cast<int32_t>(f.remote_shared_by_ranks.value_or(1));
  if (absl::Status s = t.Validate(); !s.ok()) {
    flags->Add(absl::StrCat("--remote-memory: ", s.message()));
    return;
  }
  m->tiers.push_back(std::move(t));
}

}  // namespace

DeviceDefaults TraceDeviceDefaults(const Trace& trace) {
  const TraceMetadata& md = trace.metadata();
  DeviceDefaults d;
  d.source = trace.source();
  d.capacity_bytes = md.device_memory_bytes;
  d.h2d_bandwidth_bytes_per_s = md.h2d_bandwidth_bytes_per_s;
  d.d2h_bandwidth_bytes_per_s = md.d2h_bandwidth_bytes_per_s;
  d.recorded_device = md.device_name.empty() ? std::string("unknown") : md.device_name;
  return d;
}

ResolvedDevice ResolveDevice(const DeviceFlags& f, const DeviceDefaults& d, const DeviceNeeds& needs,
                             FlagSet* flags) {
  ResolvedDevice r;
  DeviceModel& m = r.model;
  m.name = "custom";
  m.capacity_bytes = d.capacity_bytes;
  m.h2d_bandwidth_bytes_per_s = d.h2d_bandwidth_bytes_per_s;
  m.d2h_bandwidth_bytes_per_s = d.d2h_bandwidth_bytes_per_s;
  const std::string preset_name =
      f.device ? *f.device : (flags->Given("--device") ? std::string() : d.preset);
  // A --device that names no preset is a problem FlagSet::Parse reported
  // (its parser checks the name); `d.preset` is always a preset.
  const DevicePresetInfo* preset = nullptr;
  if (absl::StatusOr<DeviceModel> p = DevicePresetModel(preset_name);
      !preset_name.empty() && p.ok()) {
    m = *std::move(p);
    preset = FindDevicePreset(preset_name);
  }
  const std::string with = flags->Given("--device") ? "" : " or --device";
  if (f.device_memory_bytes) m.capacity_bytes = *f.device_memory_bytes;
  if (f.reserve_bytes) m.reserve_bytes = *f.reserve_bytes;
  if (f.h2d_bandwidth_bytes_per_s) m.h2d_bandwidth_bytes_per_s = *f.h2d_bandwidth_bytes_per_s;
  if (f.d2h_bandwidth_bytes_per_s) m.d2h_bandwidth_bytes_per_s = *f.d2h_bandwidth_bytes_per_s;
  if (f.copy_latency_ns) m.copy_latency_ns = *f.copy_latency_ns;
  if (f.half_duplex) m.copy_engines = 1;
  if (f.peak_flops_per_s) m.peak_flops_per_s = *f.peak_flops_per_s;
  if (f.memory_bandwidth_bytes_per_s) m.memory_bandwidth_bytes_per_s = *f.memory_bandwidth_bytes_per_s;
  if (f.interconnect_bandwidth_bytes_per_s) {
    m.interconnect_bandwidth_bytes_per_s = *f.interconnect_bandwidth_bytes_per_s;
  }
  ResolveRemoteTier(f, flags, &m);
  bool complete = true;
  if (flags->Given("--device") && !f.device) {
    // A bad --device is a problem already; what it would have given is not
    // missing.
    ResolveComputeScale(f, d, nullptr, &r);
    return r;
  }
  if (m.capacity_bytes <= 0) {
    if (needs.capacity) {
      if (flags->Given("--device-memory") && !f.device_memory_bytes) {
        // Its bad value is a problem already.
      } else if (!f.device_memory_bytes) {
        flags->Add(absl::StrCat("no device memory: give --device-memory", with, DoesNotRecord(d)));
      } else {
        flags->Add("--device-memory: must be more than 0B");
      }
      complete = false;
    } else {
      m.capacity_bytes = kUnlimitedCapacityBytes;
    }
  }
  for (auto [dir, bw, given] :
       {std::tuple<const char*, double, bool>{"h2d", m.h2d_bandwidth_bytes_per_s,
                                               f.h2d_bandwidth_bytes_per_s.has_value()},
        {"d2h", m.d2h_bandwidth_bytes_per_s, f.d2h_bandwidth_bytes_per_s.has_value()}}) {
    if (bw > 0 || given) continue;
    complete = false;
    if (needs.bandwidths && !flags->Given(absl::StrCat("--", dir, "-bandwidth"))) {
      flags->Add(absl::StrCat("no ", dir, " bandwidth: give --", dir, "-bandwidth", with,
                              DoesNotRecord(d)));
    }
  }
  if (m.capacity_bytes > 0 && m.capacity_bytes != kUnlimitedCapacityBytes &&
      m.reserve_bytes >= m.capacity_bytes) {
    flags->Add(absl::StrCat("--reserve ", FormatBytes(m.reserve_bytes), " leaves no budget out of ",
                            FormatBytes(m.capacity_bytes), " of device memory"));
    complete = false;
  }
  if (f.copy_latency_ns && *f.copy_latency_ns > kMaxCopyNs) {
    // The device model's own bound (DeviceModel::Validate), named by the
    // flag that broke it rather than by the model's field.
    flags->Add(absl::StrCat("--copy-latency: ", FormatDurationNs(*f.copy_latency_ns),
                            " is more than a copy may take (1e17 ns, about 3 years)"));
    complete = false;
  }
  ResolveComputeScale(f, d, preset, &r);
  if (complete && flags->ok()) {
    if (absl::Status s = m.Validate(); !s.ok()) flags->Add(std::string(s.message()));
  }
  return r;
}

void AddOversubscriptionFlag(CLI::App* sub, FlagSet* flags, std::optional<double>* ratio) {
  flags->Ratio(sub, "--oversubscription", ratio,
               "Budget as a ratio r >= 1x instead of --device-memory: persistent bytes + "
               "(unswapped peak - persistent bytes) / r, e.g. 2x");
}

double CheckOversubscription(const std::optional<double>& ratio, const DeviceFlags& device,
                             FlagSet* flags) {
  if (!ratio) return 0;
  if (device.device_memory_bytes || device.reserve_bytes) {
    flags->Add("--oversubscription replaces --device-memory and --reserve: give one or the other");
  }
  if (!(*ratio >= 1.0)) {
    flags->Add(
        absl::StrCat("--oversubscription: ", *ratio, "x must be >= 1x (1x = the peak fits)"));
  }
  return *ratio;
}

std::string ComputeScaleText(const ResolvedDevice& d) {
  if (d.model.compute_time_scale == 1.0 && absl::StartsWith(d.compute_scale_source, "as recorded")) {
    return absl::StrCat("op durations ", d.compute_scale_source);
  }
  return absl::StrCat("op durations x", Factor(d.model.compute_time_scale), " (",
                      d.compute_scale_source, ")");
}

void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::cerr << "swapplan: warning: " << w << "\n";
}

}  // namespace swapplan::cli
