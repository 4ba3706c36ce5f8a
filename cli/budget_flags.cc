#include "budget_flags.h"

#include "absl/strings/str_cat.h"

namespace swapplan::cli {

void AddBudgetFlags(CLI::App* sub, FlagSet* flags, BudgetFlags* f,
                    const BudgetFlagChoice& choice) {
  if (choice.budget_on) {
    flags->Choice(sub, "--budget-on", &f->budget_on, {"allocated", "reserved"},
                  "Hold the budget to allocated bytes or to the bytes the allocator model "
                  "reserves (default: reserved for a device preset, allocated for a custom "
                  "device; docs/allocator.md)");
  }
  flags->Choice(sub, "--allocator", &f->allocator, {"cuda-caching", "best-fit"},
                "Allocator model of reserved bytes: PyTorch's caching allocator (default) or a "
                "best-fit arena");
  flags->Text(sub, "--alloc-conf", &f->alloc_conf,
              "PYTORCH_CUDA_ALLOC_CONF-style options of the cuda-caching model, e.g. "
              "expandable_segments:True,max_split_size_mb:128");
  if (choice.planning) {
    flags->Choice(sub, "--reserved-method", &f->reserved_method, {"feedback", "margin"},
                  "With --budget-on reserved: re-plan while the model does not fit (feedback, "
                  "default) or set one fragmentation margin aside (margin)");
  }
}

BudgetBasis ResolveBudgetBasis(const BudgetFlags& f, const DeviceModel& device, FlagSet* flags,
                               const std::optional<BudgetBasis>& recorded) {
  BudgetBasis b = recorded && !f.budget_on ? *recorded : DefaultBudgetBasis(device);
  if (f.allocator) ParseAllocatorKind(*f.allocator, &b.allocator.kind);
  if (f.alloc_conf) {
    absl::StatusOr<AllocatorOptions> o = ParseAllocConf(*f.alloc_conf, b.allocator);
    if (!o.ok()) {
      flags->Add(absl::StrCat("--alloc-conf: ", o.status().message()));
    } else {
      b.allocator = *o;
    }
  }
  if (f.budget_on) {
    const BudgetOn before = b.on;
    ParseBudgetOn(*f.budget_on, &b.on);
    if (b.on != before) b.reason = absl::StrCat("--budget-on ", *f.budget_on);
  }
  return b;
}

ReservedMethod ResolveReservedMethod(const BudgetFlags& f) {
  ReservedMethod m = ReservedMethod::kFeedback;
  if (f.reserved_method) ParseReservedMethod(*f.reserved_method, &m);
  return m;
}

bool AllocatorGiven(const BudgetFlags& f) { return f.allocator || f.alloc_conf; }

nlohmann::json BudgetBasisJson(const BudgetBasis& b) {
  return {{"budget_on", std::string(BudgetOnName(b.on))},
          {"allocator", std::string(AllocatorKindName(b.allocator.kind))},
          {"alloc_conf", AllocConfText(b.allocator)},
          {"budget_basis", BudgetBasisText(b)}};
}

}  // namespace swapplan::cli
