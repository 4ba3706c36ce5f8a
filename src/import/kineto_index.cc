// IndexKineto: nesting of ops per thread and attribution of launches and
// memory events to the innermost enclosing op.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "import/kineto.h"

namespace swapplan::import_internal {
namespace {

// Ops of each thread in (start, longest first) order.
std::vector<std::vector<uint32_t>> OpsByThread(const KinetoCapture& cap) {
  std::vector<std::vector<uint32_t>> by(cap.threads.size());
  for (uint32_t i = 0; i < cap.ops.size(); ++i) by[cap.ops[i].thread].push_back(i);
  for (auto& v : by) {
    std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
      const KOp& x = cap.ops[a];
      const KOp& y = cap.ops[b];
      if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
      if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
      return a < b;
    });
  }
  return by;
}

// Assigns each item (time, thread) the innermost op enclosing it.
template <typename Item>
std::vector<int32_t> Attribute(const KinetoCapture& cap,
                               const std::vector<std::vector<uint32_t>>& by_thread,
                               const std::vector<Item>& items) {
  std::vector<int32_t> out(items.size(), -1);
  std::vector<std::vector<uint32_t>> per_thread(cap.threads.size());
  for (uint32_t k = 0; k < items.size(); ++k) per_thread[items[k].thread].push_back(k);
  std::vector<uint32_t> stack;
  for (size_t th = 0; th < per_thread.size(); ++th) {
    std::vector<uint32_t>& list = per_thread[th];
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return items[a].ts_ns < items[b].ts_ns; });
    const std::vector<uint32_t>& ops = by_thread[th];
    size_t next = 0;
    stack.clear();
    for (uint32_t k : list) {
      const int64_t t = items[k].ts_ns;
      while (next < ops.size() && cap.ops[ops[next]].ts_ns <= t) {
        const KOp& o = cap.ops[ops[next]];
        while (!stack.empty() && cap.ops[stack.back()].end_ns < o.ts_ns) stack.pop_back();
        stack.push_back(ops[next]);
        ++next;
      }
      while (!stack.empty() && cap.ops[stack.back()].end_ns < t) stack.pop_back();
      out[k] = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
    }
  }
  return out;
}

}  // namespace

KinetoIndex IndexKineto(const KinetoCapture& cap) {
  KinetoIndex idx;
  idx.traits.resize(cap.names.size());
  for (size_t i = 0; i < cap.names.size(); ++i) idx.traits[i] = ClassifyName(cap.names[i]);
  const size_t n = cap.ops.size();
  idx.parent.assign(n, -1);
  idx.has_op_child.assign(n, 0);
  idx.autograd_thread.assign(cap.threads.size(), 0);
  std::vector<std::vector<uint32_t>> by_thread = OpsByThread(cap);
  std::vector<uint32_t> stack;
  for (const std::vector<uint32_t>& ops : by_thread) {
    stack.clear();
    for (uint32_t i : ops) {
      const KOp& o = cap.ops[i];
      // Pop what ended before this op, or what does not contain it whole.
      while (!stack.empty() && cap.ops[stack.back()].end_ns < o.end_ns) stack.pop_back();
      idx.parent[i] = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
      stack.push_back(i);
      if (idx.traits[o.name].autograd) idx.autograd_thread[o.thread] = 1;
    }
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      const int32_t p = idx.parent[*it];
      if (p >= 0 && (IsOperator(cap, idx, *it) || idx.has_op_child[*it])) idx.has_op_child[p] = 1;
    }
  }
  // A thread that runs the training loop (ProfilerStep#, Optimizer.*) is no
  // backward thread even when the engine ran there (the CPU runs backward on
  // the calling thread).
  for (const KOp& o : cap.ops) {
    const NameTraits& t = idx.traits[o.name];
    if (t.profiler_step || t.optimizer_step || t.zero_grad) idx.autograd_thread[o.thread] = 0;
  }
  idx.launch_op = Attribute(cap, by_thread, cap.launches);
  idx.memory_op = Attribute(cap, by_thread, cap.memory);
  idx.any_device_activity = !cap.device_ns.empty();

  // The modelled device: the accelerator with the most memory events, else
  // the CPU.
  absl::flat_hash_map<int64_t, int64_t> counts;
  for (const KMemory& m : cap.memory) {
    ++counts[(static_cast<int64_t>(m.device_type) << 32) | static_cast<uint32_t>(m.device_id)];
  }
  int64_t best = -1, best_count = -1;
  for (const auto& [key, c] : counts) {
    const bool cpu = (key >> 32) == 0;
    const bool best_cpu = best >= 0 && (best >> 32) == 0;
    if (best < 0 || (best_cpu && !cpu) || (best_cpu == cpu && (c > best_count || (c == best_count && key < best)))) {
      best = key;
      best_count = c;
    }
  }
  if (best >= 0) {
    const int32_t type = static_cast<int32_t>(best >> 32);
    const int32_t id = static_cast<int32_t>(static_cast<uint32_t>(best & 0xFFFFFFFF));
    idx.memory_device_id = id;
    idx.memory_device = type == 0   ? "cpu"
                        : type == 1 ? absl::StrCat("cuda:", id)
                                    : absl::StrCat("device type ", type, ":", id);
    for (uint32_t k = 0; k < cap.memory.size(); ++k) {
      const KMemory& m = cap.memory[k];
      if (m.device_type == type && m.device_id == id) idx.device_memory.push_back(k);
    }
    std::stable_sort(idx.device_memory.begin(), idx.device_memory.end(), [&](uint32_t a, uint32_t b) {
      return cap.memory[a].ts_ns < cap.memory[b].ts_ns;
    });
  }
  return idx;
}

}  // namespace swapplan::import_internal
