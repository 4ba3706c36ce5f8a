// KV-cache windows of the hyperoffload planner (seed 003 §5.2): the tensors
// an inference request keeps across its passes — the prefill writes a
// layer's KV cache, every later decode step reads it once at that layer's
// attention — and the idle gaps between those reads, which the planner
// offloads with one Store after the first gap's last use and read-only
// Prefetches afterwards (a `clean` Detach: the tier's copy stays valid).
//
//   std::vector<KvWindow> w = FindKvWindows(trace, iteration, 1 << 20);
//   for (const KvWindow& k : w) { k.tensor; k.last_use; k.next_use; }  // local ops
//
// A KV-cache tensor is recognised from the trace's structure, not its name:
// a non-persistent ACTIVATION of at least `min_bytes` that is written only by
// its first use in the iteration and used by ops of at least two different
// micro-batch hints (each >= 0) — state one pass writes and later passes
// only read. Training traces have none (an activation is written and read
// within its own micro-batch). The synthesizer numbers an inference
// request's prefill 0 and decode step t t + 1 (synth/synth.h), so the
// prompt part of every layer's cache qualifies; the decode part, written
// one slot per step, does not (it stays on the device).
//
// Complexity: O(tensors + uses of the iteration's activations).
#ifndef SWAPPLAN_PLANNERS_HYPEROFFLOAD_KV_CACHE_H_
#define SWAPPLAN_PLANNERS_HYPEROFFLOAD_KV_CACHE_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// How the hyperoffload planner treats KV-cache tensors (option kv_offload).
enum class KvOffload : uint8_t {
  kOff = 0,  // like any activation (max_uses, min_idle_ratio apply)
  kFit = 1,  // every gap is a candidate whatever its idle ratio or the
             // tensor's use count; taken as needed to fit the budget
  kAll = 2,  // every gap is offloaded, fitting or not (§7.3: the whole
             // KV cache in the remote pool)
};
// "off", "fit", "all"; ParseKvOffload false for anything else.
absl::string_view KvOffloadName(KvOffload k);
bool ParseKvOffload(absl::string_view name, KvOffload* out);

// Whether tensor `t` is a KV-cache tensor of iteration `iteration` (the rule
// above). Requires a valid iteration and tensor. O(uses of t).
bool IsKvCacheTensor(const Trace& trace, int32_t iteration, TensorId t, int64_t min_bytes);

// One idle gap of a KV-cache tensor: its use before the gap and the use
// after it, as local op indices of the iteration, with at least one op in
// between.
struct KvWindow {
  TensorId tensor = kNoTensor;
  int32_t last_use = 0;
  int32_t next_use = 0;
};

// Every gap of every KV-cache tensor of `iteration`, by tensor then op.
std::vector<KvWindow> FindKvWindows(const Trace& trace, int32_t iteration, int64_t min_bytes);

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_HYPEROFFLOAD_KV_CACHE_H_
