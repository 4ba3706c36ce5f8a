// KV-cache tensors and their windows (see kv_cache.h).
#include "swapplan/planners/hyperoffload/kv_cache.h"

#include <algorithm>

#include "planners/baselines/common.h"

namespace swapplan {

absl::string_view KvOffloadName(KvOffload k) {
  switch (k) {
    case KvOffload::kOff: return "off";
    case KvOffload::kFit: return "fit";
    case KvOffload::kAll: return "all";
  }
  return "fit";
}

bool ParseKvOffload(absl::string_view name, KvOffload* out) {
  for (KvOffload k : {KvOffload::kOff, KvOffload::kFit, KvOffload::kAll}) {
    if (name == KvOffloadName(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

bool IsKvCacheTensor(const Trace& trace, int32_t iteration, TensorId t, int64_t min_bytes) {
  const TensorInfo& info = trace.tensor(t);
  if (info.kind != TensorKind::kActivation || info.persistent || info.size_bytes < min_bytes ||
      info.size_bytes <= 0) {
    return false;
  }
  absl::Span<const OpIndex> uses = UsesIn(trace, trace.iteration(iteration), t);
  if (uses.size() < 2) return false;
  const int32_t first_pass = trace.op(uses[0]).micro_batch;
  if (first_pass < 0) return false;
  bool other_pass = false;
  for (size_t k = 1; k < uses.size(); ++k) {
    const int32_t pass = trace.op(uses[k]).micro_batch;
    if (pass < 0 || OpWrites(trace, uses[k], t)) return false;
    other_pass = other_pass || pass != first_pass;
  }
  return other_pass;
}

std::vector<KvWindow> FindKvWindows(const Trace& trace, int32_t iteration, int64_t min_bytes) {
  std::vector<KvWindow> out;
  const IterationInfo& iter = trace.iteration(iteration);
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    if (!IsKvCacheTensor(trace, iteration, t, min_bytes)) continue;
    absl::Span<const OpIndex> uses = UsesIn(trace, iter, t);
    for (size_t k = 0; k + 1 < uses.size(); ++k) {
      const int32_t a = uses[k] - iter.op_begin, b = uses[k + 1] - iter.op_begin;
      if (b - a >= 2) out.push_back({t, a, b});
    }
  }
  return out;
}

}  // namespace swapplan
