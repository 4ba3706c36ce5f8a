#include "support/test_traces.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "swapplan/trace/io.h"
#include "swapplan/util/random.h"

namespace swapplan::testing {

Trace TraceFromJson(const std::string& json, const std::string& source) {
  absl::StatusOr<Trace> t = ParseTraceJson(json, source);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return std::move(t).value();
}

Trace DataTrace(const std::string& relative) {
  absl::StatusOr<Trace> t = ReadTrace(DataPath(relative));
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return std::move(t).value();
}

std::string DataPath(const std::string& relative) {
  return std::string(SWAPPLAN_TEST_DATA_DIR) + "/" + relative;
}

std::string ExternalTracesDir() {
  const char* env = std::getenv("SWAPPLAN_EXTERNAL_TRACES_DIR");
  return env != nullptr && *env != '\0' ? std::string(env)
                                         : std::string(SWAPPLAN_EXTERNAL_TRACES_DIR);
}

std::string ExternalTracePath(const std::string& name) {
  return ExternalTracesDir() + "/" + name;
}

std::string TempDir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() /
                     ("swapplan_test_" + std::to_string(::getpid())))
                        .string();
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

std::string RandomTraceJson(uint64_t seed, const RandomTraceOptions& o) {
  using nlohmann::json;
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };

  json tensors = json::array();
  uint64_t next_id = 0;
  auto new_tensor = [&](const char* kind) {
    uint64_t id = next_id++;
    tensors.push_back({{"id", id}, {"size_bytes", uni(1, o.max_tensor_bytes)}, {"kind", kind},
                       {"dtype", "float32"}});
    return id;
  };
  std::vector<uint64_t> params;
  for (int i = 0; i < o.persistent_tensors; ++i) params.push_back(new_tensor("PARAMETER"));

  json iterations = json::array();
  for (int it = 0; it < o.iterations; ++it) {
    struct Op {
      const char* phase;
      std::vector<uint64_t> in, out;
      int mb = -1;  // micro-batch hint; -1: none
    };
    std::vector<Op> ops;
    const int n = std::max(3, o.ops_per_iteration);
    const int nf = n * 2 / 5, nb = n * 2 / 5;
    const int mbs = std::max(1, o.micro_batches);
    std::vector<std::vector<Op>> fwd(mbs), bwd(mbs);
    uint64_t grad = 0;
    for (int mb = 0; mb < mbs; ++mb) {
      const int tag = mbs > 1 ? mb : -1;
      std::vector<uint64_t> saved;  // activations saved for backward
      uint64_t prev = params.empty() ? new_tensor("INPUT") : params[0];
      for (int i = 0; i < nf / mbs; ++i) {
        Op op{"FORWARD", {prev}, {}, tag};
        if (!params.empty() && coin(0.5)) op.in.push_back(params[uni(0, params.size() - 1)]);
        uint64_t out = new_tensor(coin(0.3) ? "TEMPORARY" : "ACTIVATION");
        op.out.push_back(out);
        if (tensors[out]["kind"] == "ACTIVATION" && coin(0.6)) saved.push_back(out);
        prev = out;
        fwd[mb].push_back(op);
      }
      grad = new_tensor("GRADIENT");
      bwd[mb].push_back({"BACKWARD", {prev}, {grad}, tag});
      for (int i = 0; i < nb / mbs && !saved.empty(); ++i) {
        Op op{"BACKWARD", {grad}, {}, tag};
        if (coin(0.7)) {
          op.in.push_back(saved.back());
          saved.pop_back();
        }
        grad = new_tensor("GRADIENT");
        op.out.push_back(grad);
        bwd[mb].push_back(op);
      }
      for (uint64_t s : saved) bwd[mb].push_back({"BACKWARD", {s, grad}, {}, tag});
    }
    auto append = [&](const std::vector<Op>& v) { ops.insert(ops.end(), v.begin(), v.end()); };
    if (o.one_f_one_b && mbs > 1) {
      // F0 F1 B0 F2 B1 ... F(M-1) B(M-2) B(M-1): a pipeline stage's 1F1B.
      append(fwd[0]);
      for (int mb = 1; mb < mbs; ++mb) {
        append(fwd[mb]);
        append(bwd[mb - 1]);
      }
      append(bwd[mbs - 1]);
    } else {
      for (int mb = 0; mb < mbs; ++mb) {
        append(fwd[mb]);
        append(bwd[mb]);
      }
    }
    for (uint64_t p : params) ops.push_back({"OPTIMIZER", {p, grad}, {}});
    if (params.empty()) ops.push_back({"OPTIMIZER", {grad}, {}});

    // Uses per tensor, then events.
    std::map<uint64_t, std::vector<int>> uses;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      for (uint64_t t : ops[i].in) uses[t].push_back(i);
      for (uint64_t t : ops[i].out) uses[t].push_back(i);
    }
    json events = json::array();
    for (auto& [t, u] : uses) {
      u.erase(std::unique(u.begin(), u.end()), u.end());
      bool is_param = t < params.size();
      if (is_param) continue;
      if (coin(o.explicit_events)) {
        // ALLOC at first use (or earlier), FREE at last use (or later).
        int a = static_cast<int>(uni(std::max(0, u.front() - 2), u.front()));
        int f = static_cast<int>(
            uni(u.back(), std::min<int>(static_cast<int>(ops.size()) - 1, u.back() + 2)));
        events.push_back({{"op", a}, {"kind", "ALLOC"}, {"tensor", t}});
        events.push_back({{"op", f}, {"kind", "FREE"}, {"tensor", t}});
      }
      for (size_t k = 0; k + 1 < u.size(); ++k) {
        if (u[k + 1] - u[k] >= 2 && coin(o.swap_probability)) {
          int out_at = static_cast<int>(uni(u[k], u[k + 1] - 2));
          int in_at = static_cast<int>(uni(out_at + 1, u[k + 1]));
          bool passive = coin(0.5);
          events.push_back({{"op", out_at}, {"kind", "SWAP_OUT"}, {"tensor", t},
                            {"passive", passive}});
          events.push_back({{"op", in_at}, {"kind", "SWAP_IN"}, {"tensor", t},
                            {"passive", passive}});
        }
      }
    }
    json jops = json::array();
    for (const Op& op : ops) {
      jops.push_back({{"name", std::string("op_") + op.phase[0] + std::to_string(op.in.size())},
                      {"phase", op.phase},
                      {"inputs", op.in},
                      {"outputs", op.out},
                      {"duration_ns", uni(1, 100)}});
      if (op.mb >= 0) jops.back()["micro_batch"] = op.mb;
    }
    iterations.push_back({{"wall_time_ns", uni(1000, 2000)}, {"ops", jops}, {"memory_events", events}});
  }
  json root = {{"format", "swapplan-trace"},
               {"metadata", {{"device_name", "random"}, {"device_memory_bytes", 1 << 20}}},
               {"tensors", tensors},
               {"iterations", iterations}};
  return root.dump();
}

Trace RandomTrace(uint64_t seed, const RandomTraceOptions& options) {
  return TraceFromJson(RandomTraceJson(seed, options), "random-" + std::to_string(seed) + ".json");
}

Trace TinyTrainingTrace(uint64_t seed, const TinyTrainingTraceOptions& options) {
  using nlohmann::json;
  Rng rng(seed);
  json tensors = json::array();
  uint64_t next = 0;
  auto tensor = [&](const char* kind) {
    tensors.push_back({{"id", next},
                       {"size_bytes", 100 * (1 + static_cast<int64_t>(rng.Uniform(3)))},
                       {"kind", kind}});
    return next++;
  };
  const uint64_t param = tensor("PARAMETER");
  const int32_t forward = 3 + static_cast<int32_t>(rng.Uniform(2));
  const int32_t backward =
      options.mirror_backward ? forward : 2 + static_cast<int32_t>(rng.Uniform(2));
  json ops = json::array();
  auto op = [&](const char* phase, std::vector<uint64_t> in, std::vector<uint64_t> out) {
    ops.push_back({{"name", std::string(phase) + std::to_string(ops.size())},
                   {"phase", phase},
                   {"inputs", in},
                   {"outputs", out},
                   {"duration_ns", 10 * (5 + static_cast<int64_t>(rng.Uniform(11)))}});
  };
  std::vector<uint64_t> acts;
  for (int32_t i = 0; i < forward; ++i) {
    std::vector<uint64_t> in;
    if (i == 0) in.push_back(param);
    if (!acts.empty()) in.push_back(acts.back());
    acts.push_back(tensor("ACTIVATION"));
    op("FORWARD", in, {acts.back()});
  }
  uint64_t grad = 0;
  for (int32_t i = 0; i < backward; ++i) {
    std::vector<uint64_t> in = {options.mirror_backward ? acts[acts.size() - 1 - i]
                                                        : acts[rng.Uniform(acts.size() - 1)]};
    if (i > 0) in.push_back(grad);
    if (i == backward - 1) in.push_back(param);
    grad = tensor("GRADIENT");
    op("BACKWARD", in, {grad});
  }
  double bandwidth_bytes_per_s = 1e9;
  if (options.vary_optimizer_and_bandwidth) {
    if (rng.Bernoulli(0.5)) op("OPTIMIZER", {param, grad}, {param});
    if (!rng.Bernoulli(0.5)) bandwidth_bytes_per_s = 2e9;
  }
  json root = {{"format", "swapplan-trace"},
               {"metadata",
                {{"device_name", "tiny"},
                 {"h2d_bandwidth_bytes_per_s", bandwidth_bytes_per_s},
                 {"d2h_bandwidth_bytes_per_s", bandwidth_bytes_per_s}}},
               {"tensors", tensors},
               {"iterations", json::array({{{"wall_time_ns", 0}, {"ops", ops}}})}};
  return TraceFromJson(root.dump(), "tiny-" + std::to_string(seed) + ".json");
}

}  // namespace swapplan::testing
