// A framework whose allocator runs out of memory when the runtime restores
// a storage for a swap-in (swapplan_rt_framework.restore returns
// SWAPPLAN_RT_OUT_OF_MEMORY: a CUDA out-of-memory error with the runtime's
// budget not reached — fragmentation, memory outside the runtime). The
// runtime swaps out that many bytes beyond its ledger (Algorithm 3) and asks
// once more. Through the shared library and its header only; 1 byte/ns
// links, 100-byte round sizes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_options.h"
#include "swapplan/runtime/swapplan_runtime.h"

namespace {

// Framework storages by id (1..3); restore fails `oom_restores` times
// before it allocates.
struct Framework {
  std::vector<void*> mem = std::vector<void*>(4, nullptr);
  int restores = 0;
  int oom_restores = 0;
};

int32_t Hold(void*, uint64_t) { return 0; }
int32_t Release(void* user, uint64_t id, int32_t free_memory) {
  Framework* fw = static_cast<Framework*>(user);
  if (free_memory) {
    std::free(fw->mem[id]);
    fw->mem[id] = nullptr;
  }
  return 0;
}
int32_t Restore(void* user, uint64_t id, int64_t bytes, void** device) {
  Framework* fw = static_cast<Framework*>(user);
  ++fw->restores;
  if (fw->oom_restores > 0) {
    --fw->oom_restores;
    return SWAPPLAN_RT_OUT_OF_MEMORY;
  }
  fw->mem[id] = std::malloc(static_cast<size_t>(bytes));
  *device = fw->mem[id];
  return 0;
}

struct Setup {
  swapplan_rt_env* env = nullptr;
  Framework fw;
  std::vector<swapplan_rt_tensor> t = std::vector<swapplan_rt_tensor>(4, 0);
  int32_t op = 0;
};

// A 1000-byte budget; framework tensors 1 (100 B, bytes 0x11) and, for
// each of `others` (bytes), one more (ids 2, 3; 0x22, 0x33); tensor 1
// paged out. In use: the others.
void Build(Setup* s, const std::vector<int64_t>& others) {
  const swapplan_rt_options o = CApiTestOptions(1000);
  REQUIRE(swapplan_rt_create_swap_env(&o, &s->env) == SWAPPLAN_RT_OK);
  swapplan_rt_framework cb{sizeof(swapplan_rt_framework), &s->fw, &Hold, &Release, &Restore};
  REQUIRE(swapplan_rt_set_framework(s->env, &cb) == SWAPPLAN_RT_OK);
  std::vector<int64_t> sizes = {100};
  sizes.insert(sizes.end(), others.begin(), others.end());
  for (size_t k = 0; k < sizes.size(); ++k) {
    const uint64_t id = k + 1;
    s->fw.mem[id] = std::malloc(static_cast<size_t>(sizes[k]));
    std::memset(s->fw.mem[id], static_cast<int>(0x11 * id), static_cast<size_t>(sizes[k]));
    const int64_t shape[] = {sizes[k] / 4};
    REQUIRE(swapplan_rt_tensor_register(s->env, id, s->fw.mem[id], sizes[k], 1, shape, 1,
                                        SWAPPLAN_RT_KIND_ACTIVATION, -1,
                                        &s->t[id]) == SWAPPLAN_RT_OK);
  }
  REQUIRE(swapplan_rt_pageout_manual(s->env, s->t[1]) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_before_prefetch_wait_all(s->env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_intern_op(s->env, "use", &s->op) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_begin(s->env) == SWAPPLAN_RT_OK);
}

swapplan_rt_stats Stats(swapplan_rt_env* env) {
  swapplan_rt_stats st{};
  st.struct_size = sizeof(st);
  REQUIRE(swapplan_rt_get_stats(env, &st) == SWAPPLAN_RT_OK);
  return st;
}

int32_t Resident(swapplan_rt_env* env, swapplan_rt_tensor t) {
  int32_t r = -1;
  REQUIRE(swapplan_rt_tensor_resident(env, t, &r) == SWAPPLAN_RT_OK);
  return r;
}

TEST_CASE("restore out of memory: Algorithm 3 swaps out the bytes, restore runs again") {
  Setup s;
  Build(&s, {300, 300});
  CHECK(Stats(s.env).device_bytes_in_use == 600);
  s.fw.oom_restores = 1;
  // The use of tensor 1 brings it back: 700 of 1000 in the ledger, but the
  // framework has no block. Algorithm 3 swaps out 100 bytes beyond the
  // ledger: the resident tensor closest in size, the earliest registered of
  // the two 300s (tensor 2); the second restore allocates.
  REQUIRE(swapplan_rt_op_begin(s.env, s.op, SWAPPLAN_RT_PHASE_FORWARD, &s.t[1], 1) ==
          SWAPPLAN_RT_OK);
  CHECK(s.fw.restores == 2);
  REQUIRE(s.fw.mem[1] != nullptr);
  CHECK(static_cast<uint8_t*>(s.fw.mem[1])[99] == 0x11);
  CHECK(Resident(s.env, s.t[2]) == 0);
  CHECK(Resident(s.env, s.t[3]) == 1);
  REQUIRE(swapplan_rt_op_end(s.env, nullptr, 0) == SWAPPLAN_RT_OK);
  const swapplan_rt_stats st = Stats(s.env);
  CHECK(st.device_bytes_in_use == 400);  // tensors 1 and 3
  CHECK(st.counts.passive_swap_outs == 1);
  CHECK(st.counts.allocation_failures == 1);
  CHECK(st.counts.ooms == 0);
  // Tensor 2 comes back intact at its use (the framework has room again).
  REQUIRE(swapplan_rt_op_begin(s.env, s.op, SWAPPLAN_RT_PHASE_FORWARD, &s.t[2], 1) ==
          SWAPPLAN_RT_OK);
  CHECK(static_cast<uint8_t*>(s.fw.mem[2])[299] == 0x22);
  REQUIRE(swapplan_rt_op_end(s.env, nullptr, 0) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_close_swap_env(s.env) == SWAPPLAN_RT_OK);
  for (void* p : s.fw.mem) std::free(p);
}

TEST_CASE("restore out of memory twice: the swap-in fails as out of memory, naming the tensor") {
  Setup s;
  Build(&s, {300});
  s.fw.oom_restores = 2;
  CHECK(swapplan_rt_op_begin(s.env, s.op, SWAPPLAN_RT_PHASE_FORWARD, &s.t[1], 1) ==
        SWAPPLAN_RT_OUT_OF_MEMORY);
  const std::string e = swapplan_rt_last_error();
  INFO(e);
  CHECK(e.find("the framework's allocator is out of memory for tensor 1 (100 bytes)") !=
        std::string::npos);
  CHECK(e.find("again after Algorithm 3 swapped out 100 bytes") != std::string::npos);
  CHECK(s.fw.restores == 2);
  CHECK(Resident(s.env, s.t[1]) == 0);  // still on the host, its copy kept
  CHECK(Resident(s.env, s.t[2]) == 0);  // made room for the retry
  CHECK(Stats(s.env).device_bytes_in_use == 0);
  CHECK(swapplan_rt_close_swap_env(s.env) == SWAPPLAN_RT_OK);
  for (void* p : s.fw.mem) std::free(p);
}

TEST_CASE("restore out of memory with nothing to swap out: no retry, out of memory") {
  Setup s;
  Build(&s, {});
  s.fw.oom_restores = 1;
  CHECK(swapplan_rt_op_begin(s.env, s.op, SWAPPLAN_RT_PHASE_FORWARD, &s.t[1], 1) ==
        SWAPPLAN_RT_OUT_OF_MEMORY);
  const std::string e = swapplan_rt_last_error();
  INFO(e);
  CHECK(e.find("Algorithm 3 could not swap out 100 bytes") != std::string::npos);
  CHECK(s.fw.restores == 1);
  CHECK(Resident(s.env, s.t[1]) == 0);
  CHECK(swapplan_rt_close_swap_env(s.env) == SWAPPLAN_RT_OK);
  for (void* p : s.fw.mem) std::free(p);
}

}  // namespace
