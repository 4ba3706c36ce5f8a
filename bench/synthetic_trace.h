// Large synthetic traces for benchmarks: a stack of identical "layers" whose
// forward ops each read the previous activation and a parameter and write a
// new activation (some saved for backward, some temporaries freed at once),
// then the mirrored backward pass and an optimizer step — with explicit ALLOC
// and FREE events for every non-persistent tensor, as a recorder writes them,
// and a saved-tensor pack (after the forward op) and unpack (before the
// backward op) of every saved activation. About 3 tensor uses per op.
// Deterministic for a given size.
#ifndef SWAPPLAN_BENCH_SYNTHETIC_TRACE_H_
#define SWAPPLAN_BENCH_SYNTHETIC_TRACE_H_

#include <cstdint>

#include "swapplan/trace/trace.h"

namespace swapplan::bench {

// A trace of about `num_ops` ops in one iteration.
Trace SyntheticTrace(int64_t num_ops);

}  // namespace swapplan::bench

#endif  // SWAPPLAN_BENCH_SYNTHETIC_TRACE_H_
