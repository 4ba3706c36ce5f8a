// Property: on random valid traces the rebuilt curves equal a naive
// reference that reads the JSON directly and applies the lifetime rules op by
// op, tensor by tensor (O(ops x tensors), no shared code with the library).
#include <map>
#include <random>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/test_seed.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {
namespace {

struct NaiveCurve {
  std::vector<int64_t> unswapped, recorded;
};

// Rules (trace.h): alive from ALLOC (or first use, or before everything when
// persistent) to FREE (or last use / last event, or forever when
// persistent); off-device strictly between SWAP_OUT and SWAP_IN.
NaiveCurve Naive(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  struct T {
    int64_t size;
    bool persistent;
    long alloc = -2, free = -2, first = -2, last = -2, last_event = -2;
    std::vector<std::pair<long, long>> off;  // [out, in)
  };
  std::map<uint64_t, T> ts;
  for (const auto& t : j["tensors"]) {
    std::string kind = t["kind"];
    ts[t["id"]] = T{t["size_bytes"].get<int64_t>(),
                    kind == "PARAMETER" || kind == "OPTIMIZER_STATE"};
  }
  long base = 0;
  for (const auto& it : j["iterations"]) {
    long n = static_cast<long>(it["ops"].size());
    for (long i = 0; i < n; ++i) {
      for (const char* f : {"inputs", "outputs"}) {
        for (uint64_t id : it["ops"][i][f]) {
          T& t = ts[id];
          if (t.first == -2) t.first = base + i;
          t.last = base + i;
        }
      }
    }
    std::map<uint64_t, long> out_at;
    for (const auto& e : it["memory_events"]) {
      T& t = ts[e["tensor"]];
      long op = base + e["op"].get<long>();
      std::string k = e["kind"];
      if (k == "ALLOC") t.alloc = op;
      if (k == "FREE") t.free = op;
      if (k == "SWAP_OUT") out_at[e["tensor"]] = op;
      if (k == "SWAP_IN") t.off.push_back({out_at[e["tensor"]], op});
      t.last_event = std::max(t.last_event, op);
    }
    base += n;
  }
  NaiveCurve c;
  for (long i = 0; i < base; ++i) {
    int64_t u = 0, r = 0;
    for (auto& [id, t] : ts) {
      long alloc = t.alloc != -2 ? t.alloc : (t.persistent ? -1 : t.first);
      long free = t.free != -2 ? t.free
                               : (t.persistent ? base : std::max({t.last, t.alloc, t.last_event}));
      if (alloc == -2 && !t.persistent) continue;  // never used
      if (alloc <= i && i <= free) {
        u += t.size;
        bool off = false;
        for (auto [o, in] : t.off) off = off || (o < i && i < in);
        if (!off) r += t.size;
      }
    }
    c.unswapped.push_back(u);
    c.recorded.push_back(r);
  }
  return c;
}

TEST_CASE("curves equal the naive reference on random traces", "[curve][property]") {
  const uint64_t seed = testing::TestSeed("curve property");
  INFO("seed " << seed << " (rerun with this seed to reproduce)");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    testing::RandomTraceOptions o;
    o.iterations = 1 + static_cast<int32_t>(rng() % 3);
    o.ops_per_iteration = 10 + static_cast<int32_t>(rng() % 60);
    o.persistent_tensors = static_cast<int32_t>(rng() % 5);
    uint64_t trace_seed = rng();
    INFO("trace seed " << trace_seed);
    std::string json = testing::RandomTraceJson(trace_seed, o);
    Trace t = testing::TraceFromJson(json);
    absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
    REQUIRE(c.ok());
    NaiveCurve n = Naive(json);
    REQUIRE(c->unswapped_bytes() == n.unswapped);
    REQUIRE(c->recorded_bytes() == n.recorded);
  }
}

}  // namespace
}  // namespace swapplan
