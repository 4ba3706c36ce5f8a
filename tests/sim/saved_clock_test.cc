// The saved-tensor clock (policy/saved_tensor_clock.h): the snapping rule
// with the worked values of python/runtime_tests/test_hookclock.py, the
// trace's saved-tensor events through both file forms and the builder's
// rules, and the simulator's --clock saved-tensors on a hand-made trace.
#include "swapplan/policy/saved_tensor_clock.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

// Positions (ops completed) of seven events: P P P U U U U.
//    event   0   1   2   3   4   5   6
//    pos     1   2   4   4   7   8   9
const std::vector<int32_t> kEvents = {1, 2, 4, 4, 7, 8, 9};

TEST_CASE("saved clock: the release moves to the first event at or after it", "[saved]") {
  // Released after 3 ops: the first event at pos >= 3 is event 2 (pos 4);
  // restored before op 7: the last event at pos <= 7 is event 4 (pos 7).
  SavedClockWindow w = SnapSavedWindow(kEvents, 0, 3, 7);
  CHECK(w.release_event == 2);
  CHECK(w.restore_event == 4);
  // Restored before op 6: the last event at pos <= 6 is event 3 (pos 4).
  w = SnapSavedWindow(kEvents, 0, 2, 6);
  CHECK(w.release_event == 1);
  CHECK(w.restore_event == 3);
}

TEST_CASE("saved clock: the release waits for the tensor's pack", "[saved]") {
  // Released after 1 op but packed only at event 2: the release is there.
  SavedClockWindow w = SnapSavedWindow(kEvents, 2, 1, 8);
  CHECK(w.release_event == 2);
  CHECK(w.restore_event == 5);
}

TEST_CASE("saved clock: no event between release and restore keeps it resident", "[saved]") {
  // Released after 5 ops, restored before op 6: events at 4 and 7 only.
  CHECK(SnapSavedWindow(kEvents, 0, 5, 6).resident());
  // Released after the last event.
  CHECK(SnapSavedWindow(kEvents, 0, 10, 10).resident());
  // Restore event == release event: nothing in between.
  CHECK(SnapSavedWindow(kEvents, 0, 7, 7).resident());
  // Released at event 4 (pos 7), restored at 8: event 5 — one event later.
  SavedClockWindow w = SnapSavedWindow(kEvents, 0, 7, 8);
  CHECK(w.release_event == 4);
  CHECK(w.restore_event == 5);
}

// Six 100 ns ops at 1 byte/ns; A (tensor 1, 100 bytes) made by op 0, used
// by op 5; B (tensor 2) a temporary of op 2. Saved-tensor events: A packed
// after op 0 (pos 1), B packed after op 2 (pos 3), B and A unpacked before
// ops 4 and 5.
std::string SixOps(const std::string& saved) {
  return R"({"format": "swapplan-trace", "metadata": {"device_name": "toy",
      "h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
      "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                  {"id": 2, "size_bytes": 100, "kind": "TEMPORARY"}],
      "iterations": [{"ops": [
        {"name": "f0", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
        {"name": "f1", "phase": "FORWARD", "duration_ns": 100},
        {"name": "f2", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
        {"name": "b0", "phase": "BACKWARD", "duration_ns": 100},
        {"name": "b1", "phase": "BACKWARD", "duration_ns": 100},
        {"name": "b2", "phase": "BACKWARD", "inputs": [1], "duration_ns": 100}])" +
         saved + "}]}";
}
const char* kSaved = R"(, "saved_tensor_events": [
    {"position": 1, "kind": "PACK", "tensor": 1}, {"position": 3, "kind": "PACK", "tensor": 2},
    {"position": 4, "kind": "UNPACK", "tensor": 2}, {"position": 5, "kind": "UNPACK"}])";

// A 100-byte SWAP item of `tensor` (support/planner_fixtures.h).
PolicyItem Swap(uint64_t tensor, int32_t out, int32_t release, int32_t in, int32_t use) {
  return testing::SwapItem(tensor, 100, out, release, in, use);
}

Policy PolicyFor(const Trace& t, std::vector<PolicyItem> items) {
  Policy p;
  p.fingerprint = ComputeFingerprint(t, 0);
  p.planner = "test";
  p.items = std::move(items);
  return p;
}

TEST_CASE("saved clock: trace events survive both file forms", "[saved]") {
  Trace t = testing::TraceFromJson(SixOps(kSaved));
  REQUIRE(t.iteration(0).saved_recorded);
  auto check = [](const Trace& u) {
    absl::Span<const SavedTensorEvent> e = u.iteration_saved_events(0);
    REQUIRE(e.size() == 4);
    CHECK(e[0].position == 1);
    CHECK(!e[0].unpack);
    CHECK(u.tensor(e[0].tensor).trace_id == 1);
    CHECK(e[2].unpack);
    CHECK(u.tensor(e[2].tensor).trace_id == 2);
    CHECK(e[3].tensor == kNoTensor);  // no tensor named
    CHECK(e[3].position == 5);
  };
  check(t);
  absl::StatusOr<Trace> json = ParseTraceJson(TraceToJson(t), "round.json");
  REQUIRE(json.ok());
  check(*json);
  absl::StatusOr<Trace> bin = ParseTraceBinary(TraceToBinary(t), "round.trace");
  REQUIRE(bin.ok());
  check(*bin);
  // Recorded with no event at all is not the same as not recorded.
  Trace none = testing::TraceFromJson(SixOps(R"(, "saved_tensor_events": [])"));
  CHECK(none.iteration(0).saved_recorded);
  absl::StatusOr<Trace> none_bin = ParseTraceBinary(TraceToBinary(none), "none.trace");
  REQUIRE(none_bin.ok());
  CHECK(none_bin->iteration(0).saved_recorded);
  CHECK(none_bin->iteration_saved_events(0).empty());
  Trace absent = testing::TraceFromJson(SixOps(""));
  CHECK(!absent.iteration(0).saved_recorded);
  absl::StatusOr<Trace> absent_bin = ParseTraceBinary(TraceToBinary(absent), "absent.trace");
  REQUIRE(absent_bin.ok());
  CHECK(!absent_bin->iteration(0).saved_recorded);
}

TEST_CASE("saved clock: the builder's rules for saved-tensor events", "[saved]") {
  auto rule = [](const std::string& saved) {
    absl::StatusOr<Trace> t = ParseTraceJson(SixOps(saved), "bad.json");
    REQUIRE(!t.ok());
    INFO(t.status().message());
    return RuleOf(t.status()).value_or("");
  };
  // Seven positions: 0 .. 6 (after the last op); 7 is out of range.
  CHECK(rule(R"(, "saved_tensor_events": [{"position": 7, "kind": "PACK", "tensor": 1}])") ==
        "op-index-out-of-range");
  CHECK(rule(R"(, "saved_tensor_events": [{"position": 3, "kind": "PACK", "tensor": 1},
                {"position": 2, "kind": "UNPACK"}])") == "saved-event-order");
  CHECK(rule(R"(, "saved_tensor_events": [{"position": 1, "kind": "PACK", "tensor": 9}])") ==
        "unknown-tensor");
  // A pack without a tensor (a storage the trace does not hold) is a moment
  // the clock acts at all the same.
  Trace untensored = testing::TraceFromJson(
      SixOps(R"(, "saved_tensor_events": [{"position": 1, "kind": "PACK"}])"));
  CHECK(untensored.iteration_saved_events(0)[0].tensor == kNoTensor);
  absl::StatusOr<Trace> kind = ParseTraceJson(
      SixOps(R"(, "saved_tensor_events": [{"position": 1, "kind": "SAVE", "tensor": 1}])"),
      "bad.json");
  REQUIRE(!kind.ok());
  CHECK(absl::StrContains(kind.status().message(), "PACK or UNPACK"));
}

TEST_CASE("saved clock: the simulator predicts the hook clock's later release", "[saved]") {
  // A out after op 0, released after op 1, back when op 4 is dispatched.
  // Per-op clock: r = 2, s = 4; A off during ops 2 .. 3, so op 2 holds B
  // alone: peak 100. Saved-tensor clock: the first event at pos >= 2 is B's
  // pack (pos 3), the last at pos <= 4 is B's unpack (pos 4): A is released
  // after op 2 and back before op 4, so op 2 holds A and B: peak 200.
  Trace t = testing::TraceFromJson(SixOps(kSaved));
  Policy p = PolicyFor(t, {Swap(1, 0, 1, 4, 5)});
  absl::StatusOr<SavedClockPolicy> s = SnapToSavedTensorEvents(t, 0, p);
  REQUIRE(s.ok());
  CHECK(s->per_op_reason.empty());
  CHECK(s->snapped_items == 1);
  REQUIRE(s->policy.items.size() == 1);
  CHECK(s->policy.items[0].swap_out_op == 2);
  CHECK(s->policy.items[0].release_op == 2);
  CHECK(s->policy.items[0].swap_in_op == 4);
  CHECK(s->policy.items[0].first_use_op == 5);
  CHECK(s->policy.items[0].release_waits_for_copy);

  SimulatorOptions ops;
  ops.device.capacity_bytes = 200;
  absl::StatusOr<SimulationResult> per_op = Simulate(t, p, ops);
  REQUIRE(per_op.ok());
  CHECK(per_op->peak_bytes == 100);
  CHECK(!per_op->saved_clock.modelled);
  SimulatorOptions hooks = ops;
  hooks.clock = TriggerClock::kSavedTensors;
  absl::StatusOr<SimulationResult> hooked = Simulate(t, p, hooks);
  REQUIRE(hooked.ok());
  CHECK(hooked->peak_bytes == 200);
  CHECK(hooked->saved_clock.modelled);
  CHECK(hooked->saved_clock.hook_clock);
  CHECK(hooked->saved_clock.snapped_items == 1);
  // The copy out starts after op 2 (ends at 400), op 3 waits for it (the
  // stream-ordered release): 100 ns stall; A's copy back (400 .. 500)
  // meets op 5 at 600.
  CHECK(hooked->stall_ns == 100);
  CHECK(hooked->iteration_time_ns == 700);
}

TEST_CASE("saved clock: an item with no event in its window stays resident", "[saved]") {
  // Released after op 1 (r = 2), back before op 3 (s = 3): the first event
  // at pos >= 2 is B's pack (pos 3), the last at pos <= 3 the same event.
  Trace t = testing::TraceFromJson(SixOps(kSaved));
  SimulatorOptions hooks;
  hooks.clock = TriggerClock::kSavedTensors;
  absl::StatusOr<SimulationResult> r = Simulate(t, PolicyFor(t, {Swap(1, 0, 1, 3, 5)}), hooks);
  REQUIRE(r.ok());
  CHECK(r->saved_clock.resident_items == 1);
  CHECK(r->saved_clock.snapped_items == 0);
  CHECK(r->copies_d2h == 0);
  CHECK(r->peak_bytes == 200);
}

TEST_CASE("saved clock: what the hook clock cannot run runs per op", "[saved]") {
  Trace t = testing::TraceFromJson(SixOps(kSaved));
  SimulatorOptions hooks;
  hooks.clock = TriggerClock::kSavedTensors;
  // A trace where A is never packed (only its unpack is recorded).
  Trace no_pack = testing::TraceFromJson(
      SixOps(R"(, "saved_tensor_events": [{"position": 5, "kind": "UNPACK"}])"));
  absl::StatusOr<SimulationResult> r =
      Simulate(no_pack, PolicyFor(no_pack, {Swap(1, 0, 1, 4, 5)}), hooks);
  REQUIRE(r.ok());
  CHECK(!r->saved_clock.hook_clock);
  CHECK(absl::StrContains(r->saved_clock.per_op_reason, "never saved for backward"));
  CHECK(r->peak_bytes == 100);  // the per-op run
  PolicyItem recompute = Swap(1, 0, 1, 4, 5);
  recompute.action = ItemAction::kRecompute;
  absl::StatusOr<SavedClockPolicy> s = SnapToSavedTensorEvents(t, 0, PolicyFor(t, {recompute}));
  REQUIRE(s.ok());
  CHECK(absl::StrContains(s->per_op_reason, "item 0 (tensor 1) is not a swap"));
  CHECK(s->policy.items.size() == 1);
}

TEST_CASE("saved clock: a tensor made before the forward stays resident", "[saved]") {
  // Op 0 (phase OTHER) makes the batch X (tensor 3), which b2 reads again:
  // the runtime's hook mode watches from the first FORWARD op (f0, op 1) on
  // and never sees X made, so its item does not run.
  Trace t = testing::TraceFromJson(R"({"format": "swapplan-trace", "metadata": {
      "h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
      "tensors": [{"id": 3, "size_bytes": 100, "kind": "INPUT"}],
      "iterations": [{"ops": [
        {"name": "load", "phase": "OTHER", "outputs": [3], "duration_ns": 100},
        {"name": "f0", "phase": "FORWARD", "inputs": [3], "duration_ns": 100},
        {"name": "f1", "phase": "FORWARD", "duration_ns": 100},
        {"name": "b0", "phase": "BACKWARD", "duration_ns": 100},
        {"name": "b1", "phase": "BACKWARD", "inputs": [3], "duration_ns": 100}],
      "saved_tensor_events": [{"position": 1, "kind": "PACK", "tensor": 3},
        {"position": 2, "kind": "PACK"}, {"position": 3, "kind": "UNPACK"},
        {"position": 4, "kind": "UNPACK", "tensor": 3}]}]})");
  absl::StatusOr<SavedClockPolicy> s = SnapToSavedTensorEvents(t, 0, PolicyFor(t, {Swap(3, 1, 1, 3, 4)}));
  REQUIRE(s.ok());
  CHECK(s->before_forward_items == 1);
  CHECK(s->snapped_items == 0);
  CHECK(s->policy.items.empty());
}

TEST_CASE("saved clock: a trace without recorded events is refused", "[saved]") {
  Trace t = testing::TraceFromJson(SixOps(""));
  SimulatorOptions hooks;
  hooks.clock = TriggerClock::kSavedTensors;
  absl::StatusOr<SimulationResult> r = Simulate(t, PolicyFor(t, {Swap(1, 0, 1, 4, 5)}), hooks);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(r.status().message(), "iteration 0 has no recorded saved-tensor events"));
}

}  // namespace
}  // namespace swapplan
