// Random training-like dataflow traces for the Advisor tests: forward ops
// that read one or two earlier tensors (and maybe a parameter) and make a
// new tensor or update one of their inputs in place, backward ops that read
// saved tensors, an optimizer step that writes every parameter in place.
// Durations 50..150 ns, sizes 100/200/300 bytes, 1 byte/ns links.
#ifndef SWAPPLAN_TESTS_PLANNERS_ADVISOR_SUPPORT_H_
#define SWAPPLAN_TESTS_PLANNERS_ADVISOR_SUPPORT_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_traces.h"
#include "swapplan/util/random.h"

namespace swapplan::testing {

struct RandomDagOptions {
  int32_t ops = 8;          // forward + backward + 1 optimizer op
  int32_t params = 2;
  double in_place = 0.25;   // probability that a forward op writes an input
};

inline std::string RandomDagJson(uint64_t seed, const RandomDagOptions& o = {}) {
  using nlohmann::json;
  Rng rng(seed);
  json tensors = json::array();
  uint64_t next = 0;
  auto tensor = [&](const char* kind) {
    const int64_t size = 100 * (1 + static_cast<int64_t>(rng.Uniform(3)));
    tensors.push_back({{"id", next}, {"size_bytes", size}, {"kind", kind}});
    return next++;
  };
  std::vector<uint64_t> params;
  for (int i = 0; i < o.params; ++i) params.push_back(tensor("PARAMETER"));
  std::vector<uint64_t> made = {tensor("INPUT")};
  json ops = json::array();
  auto op = [&](const char* phase, std::vector<uint64_t> in, std::vector<uint64_t> out) {
    ops.push_back({{"name", std::string(phase) + std::to_string(ops.size())},
                   {"phase", phase},
                   {"inputs", in},
                   {"outputs", out},
                   {"duration_ns", 50 + static_cast<int64_t>(rng.Uniform(101))}});
  };
  const int32_t body = std::max(o.ops - 1, 2);
  const int32_t forward = (body + 1) / 2;
  for (int32_t i = 0; i < forward; ++i) {
    std::vector<uint64_t> in = {made[rng.Uniform(made.size())]};
    if (made.size() > 1 && rng.Bernoulli(0.5)) {
      const uint64_t b = made[rng.Uniform(made.size())];
      if (b != in[0]) in.push_back(b);
    }
    if (!params.empty() && rng.Bernoulli(0.7)) in.push_back(params[rng.Uniform(params.size())]);
    if (rng.Bernoulli(o.in_place)) {
      op("FORWARD", in, {in[0]});  // in-place update of its first input
    } else {
      const uint64_t t = tensor("ACTIVATION");
      made.push_back(t);
      op("FORWARD", in, {t});
    }
  }
  for (int32_t i = forward; i < body; ++i) {
    std::vector<uint64_t> in = {made[rng.Uniform(made.size())]};
    const uint64_t g = tensor("GRADIENT");
    op("BACKWARD", in, {g});
  }
  op("OPTIMIZER", params, params);
  json root = {{"format", "swapplan-trace"},
               {"metadata",
                {{"device_name", "dag"},
                 {"h2d_bandwidth_bytes_per_s", 1e9},
                 {"d2h_bandwidth_bytes_per_s", 1e9}}},
               {"tensors", tensors},
               {"iterations", json::array({{{"wall_time_ns", 0}, {"ops", ops}}})}};
  return root.dump();
}

inline Trace RandomDag(uint64_t seed, const RandomDagOptions& o = {}) {
  return TraceFromJson(RandomDagJson(seed, o), "dag-" + std::to_string(seed) + ".json");
}

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_PLANNERS_ADVISOR_SUPPORT_H_
