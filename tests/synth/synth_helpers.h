// Helpers shared by the synthesizer tests: a tiny hand-checkable
// configuration, synthesis that fails the test on error, and lookups by
// tensor name.
#ifndef SWAPPLAN_TESTS_SYNTH_SYNTH_HELPERS_H_
#define SWAPPLAN_TESTS_SYNTH_SYNTH_HELPERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "swapplan/synth/config.h"
#include "swapplan/synth/synth.h"
#include "swapplan/trace/trace.h"

namespace swapplan::testing {

// Llama-style (RMSNorm, rotary, gated SiLU, untied head), one layer:
// h = 8, 2 heads of d = 4 (MHA), f = 16, vocab 16 (padded to 128), s = 4,
// one sequence, bf16. Device with round numbers: 1 TFLOP/s (1000 FLOP/ns),
// 1 GB/s HBM (1 byte/ns), links and host copies at 1 byte/ns.
inline SynthOptions TinyOptions() {
  SynthOptions o;
  o.model = *ModelPreset("llama2-7b");
  o.model.name = "tiny";
  o.model.layers = 1;
  o.model.hidden_size = 8;
  o.model.num_heads = 2;
  o.model.num_kv_heads = 2;
  o.model.ffn_hidden_size = 16;
  o.model.vocab_size = 16;
  o.device.name = "round";
  o.device.capacity_bytes = 1 << 20;
  o.device.peak_flops_per_s = 1e12;
  o.device.memory_bandwidth_bytes_per_s = 1e9;
  o.device.h2d_bandwidth_bytes_per_s = 1e9;
  o.device.d2h_bandwidth_bytes_per_s = 1e9;
  o.device.interconnect_bandwidth_bytes_per_s = 1e9;
  o.seq_length_tokens = 4;
  return o;
}

inline Trace Synth(const SynthOptions& o) {
  absl::StatusOr<Trace> t = SynthesizeTrace(o);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return std::move(t).value();
}

// Dense ids of the tensors named `name` (one per iteration/micro-batch that
// creates it), in id order.
inline std::vector<TensorId> TensorsNamed(const Trace& t, const std::string& name) {
  std::vector<TensorId> out;
  for (TensorId i = 0; i < t.num_tensors(); ++i) {
    if (t.tensor_name(i) == name) out.push_back(i);
  }
  return out;
}

// The one tensor named `name` (REQUIREs exactly one).
inline TensorId TensorNamed(const Trace& t, const std::string& name) {
  std::vector<TensorId> v = TensorsNamed(t, name);
  INFO("tensor " << name);
  REQUIRE(v.size() == 1);
  return v[0];
}

inline int64_t SizeOf(const Trace& t, const std::string& name) {
  return t.tensor(TensorNamed(t, name)).size_bytes;
}

// Sum of sizes of persistent tensors of `kind`.
inline int64_t PersistentBytes(const Trace& t, TensorKind kind) {
  int64_t sum = 0;
  for (TensorId i = 0; i < t.num_tensors(); ++i) {
    if (t.tensor(i).persistent && t.tensor(i).kind == kind) sum += t.tensor(i).size_bytes;
  }
  return sum;
}

// Ops of iteration `it` named `name`.
inline int64_t CountOps(const Trace& t, int32_t it, const std::string& name) {
  int64_t n = 0;
  const IterationInfo& iter = t.iteration(it);
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) n += t.op_name_at(i) == name;
  return n;
}

inline int64_t CountPhase(const Trace& t, int32_t it, Phase phase) {
  int64_t n = 0;
  const IterationInfo& iter = t.iteration(it);
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) n += t.op(i).phase == phase;
  return n;
}

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SYNTH_SYNTH_HELPERS_H_
