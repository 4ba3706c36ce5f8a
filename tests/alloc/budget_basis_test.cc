// Budget basis: PYTORCH_CUDA_ALLOC_CONF parsing, the default per device
// model, and the planners and the checker holding a policy to reserved
// bytes on the bundled Llama trace at 34 GiB.
#include <catch2/catch.hpp>

#include "swapplan/alloc/budget_basis.h"
#include "swapplan/device/presets.h"
#include "swapplan/planners/registry.h"
#include "swapplan/sim/checker.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

TEST_CASE("ParseAllocConf reads PyTorch's keys") {
  absl::StatusOr<AllocatorOptions> o =
      ParseAllocConf("expandable_segments:True, max_split_size_mb:128,roundup_power2_divisions:4");
  REQUIRE(o.ok());
  CHECK(o->expandable_segments);
  CHECK(o->max_split_size_bytes == int64_t{128} << 20);
  CHECK(o->roundup_power2_divisions == 4);
  CHECK(AllocConfText(*o) == "max_split_size_mb:128,roundup_power2_divisions:4,expandable_segments:True");
  CHECK(AllocConfText(AllocatorOptions{}).empty());
  CHECK(ParseAllocConf("garbage_collection_threshold:0.6").ok());  // known, not modelled
  // The rule named: max_split_size_mb must be above 20; unknown keys; bad booleans.
  CHECK(ParseAllocConf("max_split_size_mb:20").status().message().find("above 20") !=
        std::string::npos);
  CHECK(ParseAllocConf("max_split:64").status().message().find("unknown key") != std::string::npos);
  CHECK(ParseAllocConf("expandable_segments:yes").status().message().find("True or False") !=
        std::string::npos);
  CHECK(ParseAllocConf("roundup_power2_divisions:3").status().message().find("power of two") !=
        std::string::npos);
}

TEST_CASE("default basis: reserved for a device preset, allocated for a custom device") {
  absl::StatusOr<DeviceModel> h100 = DevicePresetModel("h100-80gb");
  REQUIRE(h100.ok());
  BudgetBasis b = DefaultBudgetBasis(*h100);
  CHECK(b.on == BudgetOn::kReserved);
  CHECK(b.allocator.kind == AllocatorKind::kCudaCaching);
  CHECK(BudgetBasisText(b) ==
        "reserved bytes (cuda-caching model: h100-80gb runs PyTorch's caching allocator)");
  absl::StatusOr<DeviceModel> ascend = DevicePresetModel("910b-64gb");
  REQUIRE(ascend.ok());
  CHECK(DefaultBudgetBasis(*ascend).on == BudgetOn::kReserved);
  DeviceModel custom;
  CHECK(DefaultBudgetBasis(custom).on == BudgetOn::kAllocated);
  CHECK(BudgetBasisText(DefaultBudgetBasis(custom)) ==
        "allocated bytes (custom device: no allocator model)");
}

// The bundled Llama-2-7B step at 34 GiB: Chameleon's policy fits by
// allocated bytes (33.99 GiB) but the caching allocator model cannot place
// it (reserved-over-budget); planned with the budget on reserved bytes it
// passes the reserved check.
TEST_CASE("llama at 34 GiB: fits by allocated bytes only, then planned for reserved bytes") {
  absl::StatusOr<Trace> t =
      ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) + "/traces/llama2-7b-dp8-seq4096.trace.gz");
  REQUIRE(t.ok());
  PlanningProblem p{.trace = &*t, .iteration = 0};
  p.device.capacity_bytes = int64_t{34} << 30;
  p.device.h2d_bandwidth_bytes_per_s = t->metadata().h2d_bandwidth_bytes_per_s;
  p.device.d2h_bandwidth_bytes_per_s = t->metadata().d2h_bandwidth_bytes_per_s;
  absl::StatusOr<std::unique_ptr<Planner>> chameleon = CreatePlanner("chameleon");
  REQUIRE(chameleon.ok());
  absl::StatusOr<Policy> by_allocated = (*chameleon)->Plan(p);
  REQUIRE(by_allocated.ok());
  CheckOptions reserved = CheckOptionsFor(*by_allocated);
  reserved.budget_on = BudgetOn::kReserved;
  absl::StatusOr<CheckReport> r = CheckPolicy(*t, *by_allocated, reserved);
  REQUIRE(r.ok());
  CHECK(r->peak_bytes <= r->budget_bytes);
  REQUIRE(!r->violations.empty());
  CHECK(r->violations.back().kind == ViolationKind::kReservedOverBudget);
  CHECK(r->reserved_ooms > 0);

  p.budget_on = BudgetOn::kReserved;
  absl::StatusOr<Policy> by_reserved = (*chameleon)->Plan(p);
  REQUIRE(by_reserved.ok());
  // The policy records the basis, so CheckOptionsFor checks reserved bytes.
  CheckOptions own = CheckOptionsFor(*by_reserved);
  CHECK(own.budget_on == BudgetOn::kReserved);
  r = CheckPolicy(*t, *by_reserved, own);
  REQUIRE(r.ok());
  CHECK(r->clean());
  CHECK(r->reserved_modelled);
  CHECK(r->reserved_ooms == 0);
  CHECK(r->reserved_peak_bytes <= r->budget_bytes);
}

}  // namespace
}  // namespace swapplan
