#include "swapplan/policy/policy.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

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

int64_t MemoryPool::TotalBytes() const {
  int64_t total = 0;
  for (const PoolClass& c : classes) total += c.object_bytes * c.count;
  return total;
}

int32_t MemoryPool::ClassOf(int64_t bytes) const {
  auto it = std::lower_bound(tensor_sizes.begin(), tensor_sizes.end(), bytes);
  if (it != tensor_sizes.end() && *it == bytes) return size_class[it - tensor_sizes.begin()];
  // Not a listed size: the smallest class whose objects hold it. Object
  // sizes ascend with the class index (they are the largest size of each
  // class and TS ascends).
  for (size_t c = 0; c < classes.size(); ++c) {
    if (classes[c].object_bytes >= bytes) return static_cast<int32_t>(c);
  }
  return -1;
}

absl::Status MemoryPool::Validate() const {
  auto fail = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("policy pool: ", what));
  };
  if (tensor_sizes.empty() && size_class.empty() && classes.empty()) return absl::OkStatus();
  if (tensor_sizes.empty()) return fail("classes but no tensor_sizes");
  if (size_class.size() != tensor_sizes.size()) {
    return fail(absl::StrCat("size_class has ", size_class.size(), " entries, tensor_sizes ",
                             tensor_sizes.size()));
  }
  for (size_t i = 0; i < tensor_sizes.size(); ++i) {
    if (tensor_sizes[i] <= 0 || (i > 0 && tensor_sizes[i] <= tensor_sizes[i - 1])) {
      return fail(absl::StrCat("tensor_sizes must be > 0 and strictly ascending (entry ", i, " is ",
                               tensor_sizes[i], ")"));
    }
    const int32_t prev = i == 0 ? 0 : size_class[i - 1];
    const int32_t step = size_class[i] - prev;
    if ((i == 0 && size_class[0] != 0) || (i > 0 && step != 0 && step != 1)) {
      return fail(absl::StrCat("size_class must start at 0 and step by 0 or +1 (entry ", i,
                               " is ", size_class[i], ")"));
    }
  }
  const size_t num_classes = static_cast<size_t>(size_class.back()) + 1;
  if (classes.size() != num_classes) {
    return fail(absl::StrCat("size_class uses ", num_classes, " classes but classes has ",
                             classes.size()));
  }
  for (size_t i = 0; i < tensor_sizes.size(); ++i) {
    const bool last_of_class = i + 1 == tensor_sizes.size() || size_class[i + 1] != size_class[i];
    const PoolClass& c = classes[size_class[i]];
    if (last_of_class && c.object_bytes != tensor_sizes[i]) {
      return fail(absl::StrCat("class ", size_class[i], " has object_bytes ", c.object_bytes,
                               "; must be its largest tensor size ", tensor_sizes[i]));
    }
  }
  for (size_t c = 0; c < classes.size(); ++c) {
    if (classes[c].count < 0) {
      return fail(absl::StrCat("class ", c, " has count ", classes[c].count, "; must be >= 0"));
    }
  }
  return absl::OkStatus();
}

absl::Status Policy::ValidateHeader() const {
  // The device model as recorded: zero capacity or bandwidths mean "not
  // recorded" (a v1 policy without them); everything else must be valid —
  // a negative bandwidth or budget is refused here, for every reader
  // (ReadPolicy and ReadPolicyForCheck alike).
  if (absl::Status st = device.ValidatePartial(); !st.ok()) {
    return WithRule(absl::InvalidArgumentError(
                        absl::StrCat("policy: ", st.message(), " [bad-device]")),
                    "bad-device");
  }
  if (fingerprint.iteration_ops < 0 || fingerprint.iteration < 0) {
    return WithRule(absl::InvalidArgumentError(absl::StrCat(
                        "policy: fingerprint iteration ", fingerprint.iteration, ", ",
                        fingerprint.iteration_ops, " ops: must not be negative [bad-fingerprint]")),
                    "bad-fingerprint");
  }
  // The planner's estimates: informational, but replay sums
  // simulated_iteration_time_ns over runs and reports print them, so a
  // value no planner writes is refused, never carried along: a negative
  // one, or a time past 1e17 ns (about 3.2 years per iteration, the bound
  // the device model puts on one copy, kMaxCopyNs), which keeps such sums
  // far from overflowing.
  auto bad_estimate = [](absl::string_view field, int64_t value, absl::string_view range) {
    return WithRule(absl::InvalidArgumentError(absl::StrCat("policy: ", field, " is ", value,
                                                            "; must be in ", range,
                                                            " [bad-estimate]")),
                    "bad-estimate");
  };
  if (expected_peak_bytes < 0) {
    return bad_estimate("expected_peak_bytes", expected_peak_bytes, "[0, 2^63 - 1]");
  }
  for (auto [field, value] :
       {std::pair<absl::string_view, int64_t>{"expected_overhead_ns", expected_overhead_ns},
        {"simulated_iteration_time_ns", simulated_iteration_time_ns}}) {
    if (value < 0 || value > kMaxCopyNs) return bad_estimate(field, value, "[0, 1e17]");
  }
  return absl::OkStatus();
}

absl::Status Policy::Validate() const {
  SWAPPLAN_RETURN_IF_ERROR(ValidateHeader());
  // Nothing here is sized by fingerprint.iteration_ops, which the input
  // alone states (issue 19: 2^31 - 1 ops must not fill an 8 GiB vector
  // before the trace disagrees): the schedule's checks allocate only once
  // its length — real entries — equals it.
  const int32_t n = fingerprint.iteration_ops;
  if (!schedule.empty()) {
    if (static_cast<int64_t>(schedule.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("policy: schedule has ", schedule.size(),
                                                     " entries; the iteration has ", n, " ops"));
    }
    std::vector<bool> seen(n, false);
    for (size_t p = 0; p < schedule.size(); ++p) {
      const int32_t op = schedule[p];
      if (op < 0 || op >= n || seen[op]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "policy: schedule is not a permutation of the iteration's ops: entry ", p, " is ", op,
            op >= 0 && op < n ? " (repeated)" : " (out of range)"));
      }
      seen[op] = true;
    }
  }
  if (absl::Status st = pool.Validate(); !st.ok()) return st;
  // Schedule positions: the identity (no allocation) without a schedule.
  const std::vector<int32_t> positions =
      schedule.empty() ? std::vector<int32_t>() : SchedulePositions();
  auto pos = [&](int32_t op) { return schedule.empty() ? op : positions[op]; };
  for (size_t i = 0; i < items.size(); ++i) {
    const PolicyItem& it = items[i];
    auto fail = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy item ", i, " (tensor ", it.tensor_id, "): ", what));
    };
    if (it.size_bytes <= 0) return fail(absl::StrCat("size_bytes is ", it.size_bytes, "; must be > 0"));
    for (auto [name, op] : {std::pair<const char*, int32_t>{"swap_out_op", it.swap_out_op},
                            {"release_op", it.release_op},
                            {"swap_in_op", it.swap_in_op},
                            {"first_use_op", it.first_use_op}}) {
      if (op < 0 || op >= n) {
        return fail(absl::StrCat(name, " ", op, " is outside the iteration (", n, " ops)"));
      }
    }
    const int32_t out = pos(it.swap_out_op), rel = pos(it.release_op), in = pos(it.swap_in_op),
                  use = pos(it.first_use_op);
    const absl::string_view where = schedule.empty() ? "" : " in schedule positions";
    if (!it.wraps && !(out <= rel && rel < in && in <= use)) {
      return fail(absl::StrCat("ops must satisfy swap_out_op <= release_op < swap_in_op <= "
                               "first_use_op",
                               where, ", got ", out, ", ", rel, ", ", in, ", ", use));
    }
    if (it.wraps && !(in <= use && use <= out && out <= rel)) {
      return fail(absl::StrCat("a wrapping item's ops must satisfy swap_in_op <= first_use_op <= "
                               "swap_out_op <= release_op",
                               where, ", got ", in, ", ", use, ", ", out, ", ", rel));
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
    if ((it.wraps || it.clean) && it.action != ItemAction::kSwap) {
      return fail(absl::StrCat(it.wraps ? "wraps" : "clean", " is only allowed on SWAP items"));
    }
    if (it.tier < 0 || it.tier >= device.num_tiers()) {
      return fail(absl::StrCat("tier ", it.tier, " is not a tier of the device model (",
                               device.num_tiers(), " tiers: the host and ", device.tiers.size(),
                               " more)"));
    }
    if (it.tier != 0 && it.action != ItemAction::kSwap) {
      return fail("a tier is only allowed on SWAP items");
    }
  }
  return ValidatePolicyRuntime(*this);
}

int64_t Policy::BudgetBytes() const { return device.BudgetBytes(); }

std::vector<int32_t> Policy::SchedulePositions() const {
  const int32_t n = std::max(fingerprint.iteration_ops, 0);
  std::vector<int32_t> pos(n);
  for (int32_t i = 0; i < n; ++i) pos[i] = i;
  if (static_cast<int64_t>(schedule.size()) == n) {
    for (int32_t p = 0; p < n; ++p) {
      if (schedule[p] >= 0 && schedule[p] < n) pos[schedule[p]] = p;
    }
  }
  return pos;
}

int64_t Policy::TotalItemBytes() const {
  int64_t total = 0;
  for (const PolicyItem& it : items) total += it.size_bytes;
  return total;
}

}  // namespace swapplan
