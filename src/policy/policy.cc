#include "swapplan/policy/policy.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace swapplan {

absl::string_view ItemActionName(ItemAction a) {
  return a == ItemAction::kRecompute ? "RECOMPUTE" : "SWAP";
}

bool ParseItemAction(absl::string_view name, ItemAction* out) {
  if (name == "SWAP") {
    *out = ItemAction::kSwap;
  } else if (name == "RECOMPUTE") {
    *out = ItemAction::kRecompute;
  } else {
    return false;
  }
  return true;
}

absl::Status Policy::Validate() const {
  if (device_budget_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy: device_budget_bytes is ", device_budget_bytes, "; must be >= 0"));
  }
  for (double bw : {h2d_bandwidth_bytes_per_s, d2h_bandwidth_bytes_per_s}) {
    if (!(bw >= 0) || !std::isfinite(bw)) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy: bandwidth ", bw, " must be a finite value >= 0"));
    }
  }
  const int32_t n = fingerprint.iteration_ops;
  for (size_t i = 0; i < items.size(); ++i) {
    const PolicyItem& it = items[i];
    auto fail = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy item ", i, " (tensor ", it.tensor_id, "): ", what));
    };
    if (it.size_bytes <= 0) return fail(absl::StrCat("size_bytes is ", it.size_bytes, "; must be > 0"));
    if (!(0 <= it.swap_out_op && it.swap_out_op <= it.release_op &&
          it.release_op < it.swap_in_op && it.swap_in_op <= it.first_use_op)) {
      return fail(absl::StrCat("ops must satisfy swap_out_op <= release_op < swap_in_op <= "
                               "first_use_op, got ",
                               it.swap_out_op, ", ", it.release_op, ", ", it.swap_in_op, ", ",
                               it.first_use_op));
    }
    if (it.action != ItemAction::kSwap && it.action != ItemAction::kRecompute) {
      return fail(absl::StrCat("unknown action ", static_cast<int>(it.action)));
    }
    if (it.recompute_ns < 0 || (it.action == ItemAction::kSwap && it.recompute_ns != 0)) {
      return fail(absl::StrCat("recompute_ns is ", it.recompute_ns,
                               "; must be >= 0, and 0 for a SWAP item"));
    }
    if (it.release_waits_for_copy && it.action != ItemAction::kSwap) {
      return fail("release_waits_for_copy is set on a RECOMPUTE item (no copy to wait for)");
    }
    if (it.first_use_op >= n) {
      return fail(absl::StrCat("first_use_op ", it.first_use_op,
                               " is outside the iteration (", n, " ops)"));
    }
  }
  return absl::OkStatus();
}

int64_t Policy::TotalItemBytes() const {
  int64_t total = 0;
  for (const PolicyItem& it : items) total += it.size_bytes;
  return total;
}

}  // namespace swapplan
