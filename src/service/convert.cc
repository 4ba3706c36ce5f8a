#include "swapplan/service/convert.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/policy_codec.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

// `value` as enum E when it is at most `last`; kMalformedInput naming `field`.
template <typename E>
absl::StatusOr<E> EnumFrom(int32_t value, E last, const char* field) {
  if (value < 0 || value > static_cast<int32_t>(last)) {
    return Error(ErrorKind::kMalformedInput,
                 absl::StrCat("SimulateResponse.", field, " ", value,
                              " is not a value this build knows (a newer server?)"));
  }
  return static_cast<E>(value);
}

}  // namespace

void DeviceModelToProto(const DeviceModel& m, proto::DeviceModel* out) {
  internal_policy::DeviceToProto(m, out);
}

DeviceModel DeviceModelFromProto(const proto::DeviceModel& p) {
  return internal_policy::DeviceFromProto(p);
}

void TiersToSpec(const DeviceModel& m, v1::DeviceSpec* spec) {
  spec->clear_tiers();
  for (const MemoryTier& t : m.tiers) internal_policy::TierToProto(t, spec->add_tiers());
}

std::vector<MemoryTier> TiersFromSpec(const v1::DeviceSpec& spec) {
  std::vector<MemoryTier> tiers;
  tiers.reserve(spec.tiers_size());
  for (const proto::MemoryTier& t : spec.tiers()) tiers.push_back(internal_policy::TierFromProto(t));
  return tiers;
}

void SimulatorSettingsToProto(const SimulatorOptions& o, v1::SimulatorSettings* out) {
  out->set_naive_record_stream(o.record_stream == RecordStreamMode::kNaive);
  out->set_host_dispatch_ns(o.host_dispatch_ns);
  out->set_host_event_query_ns(o.host_event_query_ns);
  out->set_launch_queue_depth(o.launch_queue_depth);
  out->set_top_stall_ops(o.top_stall_ops);
  out->set_algorithm3_oom_handling(o.oom_handling == OomHandling::kAlgorithm3);
}

void ApplySimulatorSettings(const v1::SimulatorSettings& s, SimulatorOptions* o) {
  o->record_stream = s.naive_record_stream() ? RecordStreamMode::kNaive : RecordStreamMode::kCustom;
  o->host_dispatch_ns = s.host_dispatch_ns();
  o->host_event_query_ns = s.host_event_query_ns();
  if (s.launch_queue_depth() > 0) o->launch_queue_depth = s.launch_queue_depth();
  o->top_stall_ops = s.has_top_stall_ops() ? s.top_stall_ops() : 10;
  o->oom_handling = s.algorithm3_oom_handling() ? OomHandling::kAlgorithm3 : OomHandling::kReport;
}

void SimulationToProto(const SimulationResult& r, v1::SimulateResponse* out) {
  out->set_iteration(r.iteration);
  out->set_num_ops(r.num_ops);
  DeviceModelToProto(r.device, out->mutable_device());
  out->set_iteration_time_ns(r.iteration_time_ns);
  out->set_ideal_time_ns(r.ideal_time_ns);
  out->set_overhead_vs_ideal_fraction(r.overhead_vs_ideal);
  out->set_compute_ns(r.compute_ns);
  out->set_stall_ns(r.stall_ns);
  out->set_peak_bytes(r.peak_bytes);
  out->set_peak_op(r.peak_op);
  out->set_oom(r.oom.occurred);
  out->set_oom_op(r.oom.occurred ? r.oom.op : -1);
  out->set_bytes_d2h(r.bytes_d2h);
  out->set_bytes_h2d(r.bytes_h2d);
  out->set_copies_d2h(r.copies_d2h);
  out->set_copies_h2d(r.copies_h2d);
  v1::SimulationDetail* d = out->mutable_detail();
  d->set_durations(static_cast<int32_t>(r.durations));
  d->set_record_stream(static_cast<int32_t>(r.record_stream));
  d->set_memory_limit_bytes(r.memory_limit_bytes);
  d->set_recompute_ns(r.recompute_ns);
  d->set_stall_swap_in_ns(r.stall_swap_in_ns);
  d->set_stall_release_ns(r.stall_release_ns);
  d->set_stall_passive_ns(r.stall_passive_ns);
  for (int64_t ns : r.stall_by_phase_ns) d->add_stall_by_phase_ns(ns);
  d->set_host_wait_ns(r.host_wait_ns);
  for (const StallSite& s : r.top_stalls) {
    v1::StallSite* o = d->add_top_stalls();
    o->set_op(s.op);
    o->set_stall_ns(s.stall_ns);
    o->set_cause(static_cast<int32_t>(s.cause));
    o->set_tensor_id(s.tensor_id);
  }
  d->set_ops_with_stall(r.ops_with_stall);
  d->set_oom_requested_bytes(r.oom.requested_bytes);
  d->set_oom_free_bytes(r.oom.free_bytes);
  d->set_oom_ops_over_capacity(r.oom.ops_over_capacity);
  d->set_oom_max_excess_bytes(r.oom.max_excess_bytes);
  d->set_oom_pool_class(r.oom.pool_class);
  d->set_oom_pool_ops_over_capacity(r.oom.pool_ops_over_capacity);
  const OomHandlingStats& h = r.oom_handling;
  d->set_allocation_failures(h.allocation_failures);
  d->set_early_releases(h.early_releases);
  d->set_passive_swap_outs(h.passive_swap_outs);
  d->set_passive_swap_ins(h.passive_swap_ins);
  d->set_passive_bytes_d2h(h.passive_bytes_d2h);
  d->set_passive_bytes_h2d(h.passive_bytes_h2d);
  d->set_passive_stall_ns(h.passive_stall_ns);
  d->set_unresolved(h.unresolved);
  d->set_first_unresolved_op(h.first_unresolved_op);
  d->set_first_unresolved_missing_bytes(h.first_unresolved_missing_bytes);
  d->set_no_bandwidth(h.no_bandwidth);
  d->set_pool_bytes(r.pool_bytes);
  d->set_d2h_busy_ns(r.d2h_busy_ns);
  d->set_h2d_busy_ns(r.h2d_busy_ns);
  d->set_recomputed_items(r.recomputed_items);
  d->set_reuse_blocks(r.reuse.blocks);
  d->set_reuse_mean_ops(r.reuse.mean_ops);
  d->set_reuse_max_ops(r.reuse.max_ops);
  d->set_reuse_unreleased_blocks(r.reuse.unreleased_blocks);
  d->set_host_event_queries(r.host_event_queries);
  d->set_host_syncs(r.host_syncs);
  d->set_events(r.events);
  for (const TierTraffic& t : r.tiers) {
    v1::TierTraffic* o = d->add_tiers();
    o->set_name(t.name);
    o->set_capacity_bytes(t.capacity_bytes);
    o->set_peak_bytes(t.peak_bytes);
    o->set_bytes_stored(t.bytes_stored);
    o->set_bytes_loaded(t.bytes_loaded);
    o->set_stores(t.stores);
    o->set_loads(t.loads);
    o->set_store_busy_ns(t.store_busy_ns);
    o->set_load_busy_ns(t.load_busy_ns);
  }
}

absl::StatusOr<SimulationResult> SimulationFromProto(const v1::SimulateResponse& p) {
  SimulationResult r;
  const v1::SimulationDetail& d = p.detail();
  r.iteration = p.iteration();
  r.num_ops = p.num_ops();
  absl::StatusOr<DurationSource> durations =
      EnumFrom(d.durations(), DurationSource::kMixed, "detail.durations");
  if (!durations.ok()) return durations.status();
  r.durations = *durations;
  absl::StatusOr<RecordStreamMode> mode =
      EnumFrom(d.record_stream(), RecordStreamMode::kNaive, "detail.record_stream");
  if (!mode.ok()) return mode.status();
  r.record_stream = *mode;
  r.device = DeviceModelFromProto(p.device());
  r.memory_limit_bytes = d.memory_limit_bytes();
  r.iteration_time_ns = p.iteration_time_ns();
  r.ideal_time_ns = p.ideal_time_ns();
  r.overhead_vs_ideal = p.overhead_vs_ideal_fraction();
  r.compute_ns = p.compute_ns();
  r.recompute_ns = d.recompute_ns();
  r.stall_ns = p.stall_ns();
  r.stall_swap_in_ns = d.stall_swap_in_ns();
  r.stall_release_ns = d.stall_release_ns();
  r.stall_passive_ns = d.stall_passive_ns();
  for (int i = 0; i < kNumPhases && i < d.stall_by_phase_ns_size(); ++i) {
    r.stall_by_phase_ns[i] = d.stall_by_phase_ns(i);
  }
  r.host_wait_ns = d.host_wait_ns();
  for (const v1::StallSite& s : d.top_stalls()) {
    StallSite o;
    o.op = s.op();
    o.stall_ns = s.stall_ns();
    absl::StatusOr<StallCause> cause = EnumFrom(s.cause(), StallCause::kPassive, "top_stalls.cause");
    if (!cause.ok()) return cause.status();
    o.cause = *cause;
    o.tensor_id = s.tensor_id();
    r.top_stalls.push_back(o);
  }
  r.ops_with_stall = d.ops_with_stall();
  r.peak_bytes = p.peak_bytes();
  r.peak_op = p.peak_op();
  r.oom.occurred = p.oom();
  r.oom.op = p.oom_op();
  r.oom.requested_bytes = d.oom_requested_bytes();
  r.oom.free_bytes = d.oom_free_bytes();
  r.oom.ops_over_capacity = d.oom_ops_over_capacity();
  r.oom.max_excess_bytes = d.oom_max_excess_bytes();
  r.oom.pool_class = d.oom_pool_class();
  r.oom.pool_ops_over_capacity = d.oom_pool_ops_over_capacity();
  OomHandlingStats& h = r.oom_handling;
  h.allocation_failures = d.allocation_failures();
  h.early_releases = d.early_releases();
  h.passive_swap_outs = d.passive_swap_outs();
  h.passive_swap_ins = d.passive_swap_ins();
  h.passive_bytes_d2h = d.passive_bytes_d2h();
  h.passive_bytes_h2d = d.passive_bytes_h2d();
  h.passive_stall_ns = d.passive_stall_ns();
  h.unresolved = d.unresolved();
  h.first_unresolved_op = d.first_unresolved_op();
  h.first_unresolved_missing_bytes = d.first_unresolved_missing_bytes();
  h.no_bandwidth = d.no_bandwidth();
  r.pool_bytes = d.pool_bytes();
  r.bytes_d2h = p.bytes_d2h();
  r.bytes_h2d = p.bytes_h2d();
  r.copies_d2h = p.copies_d2h();
  r.copies_h2d = p.copies_h2d();
  r.d2h_busy_ns = d.d2h_busy_ns();
  r.h2d_busy_ns = d.h2d_busy_ns();
  r.recomputed_items = d.recomputed_items();
  r.reuse.blocks = d.reuse_blocks();
  r.reuse.mean_ops = d.reuse_mean_ops();
  r.reuse.max_ops = d.reuse_max_ops();
  r.reuse.unreleased_blocks = d.reuse_unreleased_blocks();
  r.host_event_queries = d.host_event_queries();
  r.host_syncs = d.host_syncs();
  r.events = d.events();
  for (const v1::TierTraffic& t : d.tiers()) {
    TierTraffic o;
    o.name = t.name();
    o.capacity_bytes = t.capacity_bytes();
    o.peak_bytes = t.peak_bytes();
    o.bytes_stored = t.bytes_stored();
    o.bytes_loaded = t.bytes_loaded();
    o.stores = t.stores();
    o.loads = t.loads();
    o.store_busy_ns = t.store_busy_ns();
    o.load_busy_ns = t.load_busy_ns();
    r.tiers.push_back(std::move(o));
  }
  return r;
}

void GenerationToProto(const GenerationStats& g, v1::SearchProgress* out) {
  out->set_generation(g.generation);
  out->set_elapsed_ns(g.elapsed_ns);
  out->set_best_ns(g.best_ns);
  out->set_mean_ns(g.mean_ns);
  out->set_worst_ns(g.worst_ns);
  out->set_best_ever_ns(g.best_ever_ns);
  out->set_elite_ns(g.elite_ns);
  out->set_islands_best_ns(g.islands_best_ns);
  out->set_feasible(g.feasible);
  out->set_population(g.population);
  out->set_evaluations(g.evaluations);
  out->set_evaluations_per_s(g.evaluations_per_s);
}

GenerationStats GenerationFromProto(const v1::SearchProgress& p) {
  GenerationStats g;
  g.generation = p.generation();
  g.elapsed_ns = p.elapsed_ns();
  g.best_ns = p.best_ns();
  g.mean_ns = p.mean_ns();
  g.worst_ns = p.worst_ns();
  g.best_ever_ns = p.best_ever_ns();
  g.elite_ns = p.elite_ns();
  g.islands_best_ns = p.islands_best_ns();
  g.feasible = p.feasible();
  g.population = p.population();
  g.evaluations = p.evaluations();
  g.evaluations_per_s = p.evaluations_per_s();
  return g;
}

void SearchToProto(const SearchResult& r, v1::SearchResult* out) {
  out->set_stop_reason(r.stop_reason);
  out->set_generations(r.generations);
  out->set_evaluations(r.evaluations);
  out->set_infeasible_evaluations(r.infeasible_evaluations);
  out->set_search_time_ns(r.elapsed_ns);
  out->set_source(r.source);
  out->set_local_moves_tried(r.local_moves_tried);
  out->set_local_moves_kept(r.local_moves_kept);
  for (const SeedOutcome& sd : r.seeds) {
    v1::SeedOutcome* o = out->add_seeds();
    o->set_planner(sd.name);
    o->set_iteration_time_ns(sd.time_ns);
    o->set_chromosome(sd.chromosome);
    o->set_note(sd.note);
  }
  for (const GenerationStats& g : r.history) GenerationToProto(g, out->add_history());
  SimulationToProto(r.simulation, out->mutable_simulation());
}

absl::StatusOr<SearchResult> SearchFromProto(const v1::SearchResult& p) {
  SearchResult r;
  absl::StatusOr<SimulationResult> sim = SimulationFromProto(p.simulation());
  if (!sim.ok()) return sim.status();
  r.simulation = *std::move(sim);
  r.best_ns = r.simulation.iteration_time_ns;
  r.stop_reason = p.stop_reason();
  r.generations = p.generations();
  r.evaluations = p.evaluations();
  r.infeasible_evaluations = p.infeasible_evaluations();
  r.elapsed_ns = p.search_time_ns();
  r.source = p.source();
  r.local_moves_tried = p.local_moves_tried();
  r.local_moves_kept = p.local_moves_kept();
  for (const v1::SeedOutcome& o : p.seeds()) {
    r.seeds.push_back({.name = o.planner(), .time_ns = o.iteration_time_ns(),
                       .chromosome = o.chromosome(), .note = o.note()});
  }
  for (const v1::SearchProgress& g : p.history()) r.history.push_back(GenerationFromProto(g));
  return r;
}

void CheckToProto(const CheckReport& r, v1::CheckResponse* out) {
  out->set_clean(r.clean());
  out->set_iteration(r.iteration);
  out->set_items(r.items);
  out->set_budget_bytes(r.budget_bytes);
  out->set_peak_unswapped_bytes(r.peak_unswapped_bytes);
  out->set_peak_bytes(r.peak_bytes);
  out->set_peak_op(r.peak_op);
  out->set_bytes_out(r.bytes_out);
  out->set_late_swap_ins(r.late_swap_ins);
  out->set_swap_in_wait_ns(r.swap_in_wait_ns);
  out->set_release_waits(r.release_waits);
  out->set_release_wait_ns(r.release_wait_ns);
  for (const Violation& v : r.violations) {
    v1::Violation* o = out->add_violations();
    o->set_kind(std::string(ViolationTag(v.kind)));
    o->set_item(v.item);
    o->set_op(v.op);
    o->set_bytes(v.bytes);
    o->set_message(v.message);
  }
}

absl::StatusOr<CheckReport> CheckFromProto(const v1::CheckResponse& p) {
  CheckReport out;
  out.iteration = p.iteration();
  out.items = p.items();
  out.budget_bytes = p.budget_bytes();
  out.peak_unswapped_bytes = p.peak_unswapped_bytes();
  out.peak_bytes = p.peak_bytes();
  out.peak_op = p.peak_op();
  out.bytes_out = p.bytes_out();
  out.late_swap_ins = p.late_swap_ins();
  out.swap_in_wait_ns = p.swap_in_wait_ns();
  out.release_waits = p.release_waits();
  out.release_wait_ns = p.release_wait_ns();
  for (const v1::Violation& v : p.violations()) {
    Violation o;
    bool known = false;
    for (int k = 0; k <= static_cast<int>(ViolationKind::kBadAction) && !known; ++k) {
      if (ViolationTag(static_cast<ViolationKind>(k)) == v.kind()) {
        o.kind = static_cast<ViolationKind>(k);
        known = true;
      }
    }
    if (!known) {
      return Error(ErrorKind::kInternal,
                   absl::StrCat("unknown violation kind '", v.kind(), "' (a newer server?)"));
    }
    o.item = v.item();
    o.op = v.op();
    o.bytes = v.bytes();
    o.message = v.message();
    out.violations.push_back(std::move(o));
  }
  return out;
}

}  // namespace swapplan
