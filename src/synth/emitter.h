// Emitter: the synthesizer's thin layer over TraceBuilder. It declares
// tensors with dense ids (0, 1, 2, ... in creation order, so Finish() needs no
// id map), appends ops with the current phase / micro-batch / layer hints and
// a roofline duration, and records memory events the way an allocator hook
// would: ALLOC at the op that first writes a tensor, FREE after the op where
// the generator drops its last reference.
//
// It also checks the generator's own bookkeeping as it goes (an input that is
// not live, a double free, a non-persistent tensor still live at the end of
// its iteration); the first such bug is returned by status() as Internal.
// Sizes and times are checked arithmetic (util/checked.h): a tensor whose
// numel × itemsize overflows, tensors summing to more than kMaxSynthBytes,
// or an iteration whose op durations overflow int64 nanoseconds make
// status() an input error (InvalidArgument, rule overflow) naming the tensor
// or op — the configuration is too large, not the generator wrong.
//
// Every call is O(uses of the op) amortized.
#ifndef SWAPPLAN_SRC_SYNTH_EMITTER_H_
#define SWAPPLAN_SRC_SYNTH_EMITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sites.h"
#include "swapplan/synth/config.h"
#include "swapplan/trace/builder.h"

namespace swapplan::synth_internal {

// "No tensor" (ids are dense from 0).
inline constexpr uint64_t kNone = ~uint64_t{0};
// Most bytes all tensors of a synthesized trace may sum to (1 EiB): with
// every running total at most 2^60, expressions adding a few tensor sizes
// (op byte counts) cannot overflow int64.
inline constexpr int64_t kMaxSynthBytes = int64_t{1} << 60;

using Ids = absl::Span<const uint64_t>;
using Shape = absl::Span<const int64_t>;

class Emitter {
 public:
  Emitter(TraceBuilder* builder, const SynthOptions& options);

  // --- context of the following ops ---
  void SetPhase(Phase phase) { phase_ = phase; }
  Phase phase() const { return phase_; }
  // Micro-batch hint; `validation` names tensors "val<k>." instead of "mb<k>.".
  void SetMicroBatch(int32_t micro_batch, bool validation);
  // Micro-batch hint with an explicit tensor-name prefix (inference passes:
  // "prefill.", "decode3.").
  void SetPass(int32_t micro_batch, absl::string_view prefix) {
    micro_batch_ = micro_batch;
    if (o_.tensor_names) mb_prefix_.assign(prefix.data(), prefix.size());
  }
  // Stage-local layer hint.
  void SetLayer(int32_t layer) { layer_ = layer; }
  // Name scope inserted after the micro-batch prefix ("layers.12.", "head.").
  void SetScope(absl::string_view scope) { scope_.assign(scope.data(), scope.size()); }
  // stack_id offset (recomputation, validation).
  void SetStackOffset(int64_t offset) { stack_offset_ = offset; }

  // --- tensors ---
  // A new tensor named <micro-batch prefix><scope><name><suffix>; its bytes
  // are numel(shape) × dtype bytes. Occupies nothing until an op outputs it.
  uint64_t New(TensorKind kind, DType dtype, Shape shape, absl::string_view name,
               absl::string_view suffix = {});
  // A persistent tensor (resident for the whole trace, no events), named
  // exactly `name`.
  uint64_t NewPersistent(TensorKind kind, DType dtype, Shape shape, absl::string_view name);
  int64_t Bytes(uint64_t t) const { return bytes_[t]; }

  // --- ops ---
  // A compute op: duration = max(flops / peak, bytes / HBM) where bytes is
  // the sum of input and output sizes unless `bytes_override` >= 0.
  void Op(Site site, Ids inputs, Ids outputs, double flops = 0, double bytes_override = -1);
  // A communication or copy op whose duration follows from `payload_bytes`
  // and the site's cost kind (see roofline.h) over `group` ranks.
  void Comm(Site site, Ids inputs, Ids outputs, double payload_bytes, int32_t group);
  // FREE of `t` after the last emitted op.
  void Free(uint64_t t);
  void FreeAll(Ids ts) {
    for (uint64_t t : ts) Free(t);
  }

  // --- iterations ---
  void BeginIteration();
  // Ends the iteration with wall time = sum of its op durations.
  void EndIteration();
  // Ops of the open iteration.
  uint32_t ops_in_iteration() const { return op_in_iteration_; }
  int64_t iteration_time_ns() const { return wall_ns_; }

  struct Counts {
    int64_t tensors = 0, ops = 0, uses = 0, events = 0;
  };
  // Everything emitted so far.
  const Counts& counts() const { return counts_; }
  void ReserveTensors(int64_t n) {
    bytes_.reserve(n);
    state_.reserve(n);
  }

  // Internal error for the first bookkeeping bug seen, OK otherwise.
  const absl::Status& status() const { return status_; }

 private:
  enum State : uint8_t { kUnborn, kLive, kFreed, kPersistent };
  // numel(shape) × itemsize, checked, and added to the running total; on
  // overflow sets status_ and returns 1 (a placeholder that keeps the
  // generator's bookkeeping going until it stops at status()).
  int64_t CheckedBytes(DType dtype, Shape shape, absl::string_view name);
  void Overflow(absl::string_view what);
  void AddOp(Site site, Ids inputs, Ids outputs, int64_t duration_ns);
  NameId NameOf(Site site);
  void Bug(absl::string_view what, uint64_t t);
  absl::string_view FullName(absl::string_view name, absl::string_view suffix);

  TraceBuilder* b_;
  const SynthOptions& o_;
  std::vector<int64_t> bytes_;
  std::vector<uint8_t> state_;
  std::vector<NameId> names_;  // per site, -1 until interned
  Phase phase_ = Phase::kForward;
  int32_t micro_batch_ = 0;
  int32_t layer_ = 0;
  int64_t stack_offset_ = 0;
  std::string mb_prefix_;
  std::string scope_;
  std::string scratch_;
  uint32_t op_in_iteration_ = 0;
  int64_t wall_ns_ = 0;
  uint64_t iteration_first_tensor_ = 0;
  absl::Status status_;
  Counts counts_;
  int64_t total_bytes_ = 0;
};

// Elements of `shape`. Requires a shape whose product fits int64:
// SynthOptions::Validate() bounds every tensor family the generator emits
// (Emitter::New re-checks each product).
inline int64_t Numel(Shape shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace swapplan::synth_internal

#endif  // SWAPPLAN_SRC_SYNTH_EMITTER_H_
