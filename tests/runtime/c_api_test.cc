// The C API of libswapplan_runtime.so, through the shared library and its
// header only (this executable links nothing else of swapplan). 1 byte/ns
// links, round sizes.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "c_api_options.h"
#include "swapplan/runtime/swapplan_runtime.h"

namespace {

std::string LastError() { return swapplan_rt_last_error(); }

swapplan_rt_env* Create(int64_t bytes, int32_t m = 2, int32_t n = 5, const char* work = nullptr) {
  swapplan_rt_options o = CApiTestOptions(bytes);
  o.warmup_iterations = m;
  o.genpolicy_iterations = n;
  o.work_dir = work;
  swapplan_rt_env* env = nullptr;
  const swapplan_rt_status rc = swapplan_rt_create_swap_env(&o, &env);
  INFO(LastError());
  REQUIRE(rc == SWAPPLAN_RT_OK);
  return env;
}

swapplan_rt_tensor Alloc(swapplan_rt_env* env, int64_t bytes, uint8_t fill) {
  const int64_t shape[] = {bytes / 4};
  swapplan_rt_tensor t = 0;
  void* p = nullptr;
  const swapplan_rt_status rc =
      swapplan_rt_tensor_alloc(env, bytes, 1, shape, 1, SWAPPLAN_RT_KIND_ACTIVATION, -1, &t, &p);
  INFO(LastError());
  REQUIRE(rc == SWAPPLAN_RT_OK);
  std::memset(p, fill, static_cast<size_t>(bytes));
  return t;
}

bool Holds(swapplan_rt_env* env, swapplan_rt_tensor t, int64_t bytes, uint8_t fill) {
  void* p = nullptr;
  if (swapplan_rt_tensor_data(env, t, &p) != SWAPPLAN_RT_OK) return false;
  for (int64_t k = 0; k < bytes; ++k) {
    if (static_cast<uint8_t*>(p)[k] != fill) return false;
  }
  return true;
}

std::string TempDir(const char* name) {
  std::string dir = std::string("/tmp/swapplan-capi-") + name + "-" + std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return dir;
}

// The first `n` bytes of a file ("" when it cannot be read).
std::string FileStart(const std::string& path, size_t n) {
  std::string out(n, '\0');
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  out.resize(std::fread(out.data(), 1, n, f));
  std::fclose(f);
  return out;
}

TEST_CASE("C API: library, options, errors") {
  CHECK(swapplan_rt_abi_version() == SWAPPLAN_RT_ABI_VERSION);
  CHECK(std::string(swapplan_rt_status_name(SWAPPLAN_RT_OUT_OF_MEMORY)) == "out-of-memory");
  swapplan_rt_options o;
  swapplan_rt_options_init(&o);
  CHECK(o.struct_size == sizeof(o));
  CHECK(o.matcher == SWAPPLAN_RT_MATCHER_FUZZY);
  CHECK(o.warmup_iterations == 2);
  CHECK(o.genpolicy_iterations == 5);
  // ABI 4's fields: RuntimeOptions' defaults.
  CHECK(o.policies_by_input == 1);
  CHECK(o.planning == SWAPPLAN_RT_PLANNING_OBSERVED);
  CHECK(o.observed_records == 8);
  CHECK(o.remembered_sequences == 4);
  swapplan_rt_env* env = nullptr;
  o.planning = 2;
  CHECK(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("planning 2 is unknown") != std::string::npos);
  swapplan_rt_options_init(&o);
  o.observed_records = 0;
  CHECK(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("observed_records is 0") != std::string::npos);
  swapplan_rt_options_init(&o);
  o.struct_size = offsetof(swapplan_rt_options, policies_by_input) + 4;
  CHECK(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("struct_size") != std::string::npos);
  o.struct_size = 3;
  CHECK(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("struct_size") != std::string::npos);
  swapplan_rt_options_init(&o);
  o.device_memory_bytes = 0;
  CHECK(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("capacity_bytes") != std::string::npos);
  CHECK(env == nullptr);
  CHECK(swapplan_rt_iteration_begin(nullptr) == SWAPPLAN_RT_INVALID_ARGUMENT);
  // The message is per thread.
  std::thread([] { CHECK(LastError().empty()); }).join();
}

TEST_CASE("C API: ops, seed 004 swaps, Algorithm 3 and the budget") {
  swapplan_rt_env* env = Create(1000);
  int32_t op = -1;
  REQUIRE(swapplan_rt_intern_op(env, "aten::mm", &op) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) ==
        SWAPPLAN_RT_CALL_ORDER);
  CHECK(LastError().find("no iteration has begun") != std::string::npos);
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  // Op 0 makes A and B (800 bytes).
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) == SWAPPLAN_RT_OK);
  const swapplan_rt_tensor a = Alloc(env, 400, 0xa1);
  const swapplan_rt_tensor b = Alloc(env, 400, 0xb2);
  const swapplan_rt_tensor ab[] = {a, b};
  REQUIRE(swapplan_rt_op_end(env, ab, 2) == SWAPPLAN_RT_OK);
  // pageout_manual + before_prefetch_wait_all: A leaves (400 in use).
  REQUIRE(swapplan_rt_pageout_manual(env, a) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_before_prefetch_wait_all(env) == SWAPPLAN_RT_OK);
  int32_t resident = 1;
  REQUIRE(swapplan_rt_tensor_resident(env, a, &resident) == SWAPPLAN_RT_OK);
  CHECK(resident == 0);
  void* p = nullptr;
  CHECK(swapplan_rt_tensor_data(env, a, &p) == SWAPPLAN_RT_CALL_ORDER);
  // Op 1: C (600) fits; D (200) does not: Algorithm 3 swaps B (400, not
  // this op's) out. 1000 more cannot fit: C and D are this op's.
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) == SWAPPLAN_RT_OK);
  const swapplan_rt_tensor c = Alloc(env, 600, 0xc3);
  const swapplan_rt_tensor d = Alloc(env, 200, 0xd4);
  const int64_t shape[] = {250};
  swapplan_rt_tensor e = 0;
  CHECK(swapplan_rt_tensor_alloc(env, 1000, 1, shape, 1, SWAPPLAN_RT_KIND_ACTIVATION, -1, &e,
                                 &p) == SWAPPLAN_RT_OUT_OF_MEMORY);
  CHECK(LastError().find("device out of memory at op 1 (aten::mm)") != std::string::npos);
  const swapplan_rt_tensor cd[] = {c, d};
  REQUIRE(swapplan_rt_op_end(env, cd, 2) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_tensor_free(env, c) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_tensor_free(env, d) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_tensor_free(env, d) == SWAPPLAN_RT_INVALID_ARGUMENT);  // stale
  // A is prefetched (prefetch_init, need_prefetch, prefetch_all); B comes
  // back on use, passively.
  REQUIRE(swapplan_rt_prefetch_init(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_need_prefetch(env, a) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_prefetch_all(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_BACKWARD, ab, 2) == SWAPPLAN_RT_OK);
  CHECK(Holds(env, a, 400, 0xa1));
  CHECK(Holds(env, b, 400, 0xb2));
  REQUIRE(swapplan_rt_op_end(env, nullptr, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);

  swapplan_rt_stats s;
  REQUIRE(swapplan_rt_get_stats(env, &s) == SWAPPLAN_RT_OK);
  CHECK(s.iterations == 1);
  CHECK(s.peak_device_bytes == 1000);
  CHECK(s.device_bytes_in_use == 800);
  CHECK(s.counts.manual_swap_outs == 1);
  CHECK(s.counts.manual_swap_ins == 1);
  CHECK(s.counts.passive_swap_outs == 1);
  CHECK(s.counts.passive_swap_ins == 1);
  CHECK(s.counts.uses_while_off_device == 0);  // B was Algorithm 3's victim
  CHECK(s.counts.ooms == 1);
  swapplan_rt_iteration_stats row;
  REQUIRE(swapplan_rt_get_iteration_stats(env, 0, &row) == SWAPPLAN_RT_OK);
  CHECK(row.ops == 3);
  CHECK(row.stage == SWAPPLAN_RT_STAGE_WARMUP);
  CHECK(swapplan_rt_get_iteration_stats(env, 1, &row) == SWAPPLAN_RT_INVALID_ARGUMENT);
  const std::string dir = TempDir("ops");
  REQUIRE(swapplan_rt_write_record(env, (dir + "/run.json").c_str()) == SWAPPLAN_RT_OK);
  FILE* f = std::fopen((dir + "/run.json").c_str(), "r");
  CHECK(f != nullptr);
  if (f != nullptr) std::fclose(f);
  // The binary form (the runtime's own encoder): the magic, then records;
  // gzip for *.gz.
  REQUIRE(swapplan_rt_write_record(env, (dir + "/run.trace").c_str()) == SWAPPLAN_RT_OK);
  CHECK(FileStart(dir + "/run.trace", 8) == "SWPLTRC1");
  REQUIRE(swapplan_rt_write_record(env, (dir + "/run.trace.gz").c_str()) == SWAPPLAN_RT_OK);
  CHECK(FileStart(dir + "/run.trace.gz", 2) == "\x1f\x8b");
  CHECK(swapplan_rt_write_record(env, (dir + "/no/such/dir/run.trace").c_str()) ==
        SWAPPLAN_RT_UNAVAILABLE);
  CHECK(LastError().find("run.trace: cannot write") != std::string::npos);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

TEST_CASE("C API: op_reserve makes room before the allocation, without taking the bytes") {
  swapplan_rt_env* env = Create(1000);
  int32_t op = -1;
  REQUIRE(swapplan_rt_intern_op(env, "aten::mm", &op) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_op_reserve(env, 10) == SWAPPLAN_RT_CALL_ORDER);  // outside an op
  CHECK(LastError().find("no op has begun") != std::string::npos);
  // Op 0 makes A (600 of 1000).
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) == SWAPPLAN_RT_OK);
  const swapplan_rt_tensor a = Alloc(env, 600, 0xa1);
  REQUIRE(swapplan_rt_op_end(env, &a, 1) == SWAPPLAN_RT_OK);
  // Op 1 will allocate 600: 600 + 600 > 1000, so Algorithm 3 swaps A out
  // now, before the allocation; the reservation takes nothing (0 in use).
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_op_reserve(env, -1) == SWAPPLAN_RT_INVALID_ARGUMENT);
  REQUIRE(swapplan_rt_op_reserve(env, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_reserve(env, 600) == SWAPPLAN_RT_OK);
  swapplan_rt_stats s;
  REQUIRE(swapplan_rt_get_stats(env, &s) == SWAPPLAN_RT_OK);
  CHECK(s.device_bytes_in_use == 0);
  CHECK(s.counts.passive_swap_outs == 1);
  int32_t resident = 1;
  REQUIRE(swapplan_rt_tensor_resident(env, a, &resident) == SWAPPLAN_RT_OK);
  CHECK(resident == 0);
  const swapplan_rt_tensor b = Alloc(env, 600, 0xb2);  // fits: no second eviction
  REQUIRE(swapplan_rt_op_end(env, &b, 1) == SWAPPLAN_RT_OK);
  // Op 2 reads B and would allocate 1000: B is this op's, A is off; no room
  // can be made. The op does not run; op_end closes it.
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, &b, 1) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_op_reserve(env, 1000) == SWAPPLAN_RT_OUT_OF_MEMORY);
  CHECK(LastError().find("device out of memory at op 2 (aten::mm)") != std::string::npos);
  REQUIRE(swapplan_rt_op_end(env, nullptr, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_get_stats(env, &s) == SWAPPLAN_RT_OK);
  CHECK(s.peak_device_bytes == 600);  // never 1200: the eviction came first
  CHECK(s.device_bytes_in_use == 600);
  CHECK(s.counts.passive_swap_outs == 1);
  CHECK(s.counts.ooms == 1);
  REQUIRE(swapplan_rt_tensor_free(env, b) == SWAPPLAN_RT_OK);  // room for A at close
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

TEST_CASE("C API: an injected copy error fails the call clearly; the tensor stays") {
  swapplan_rt_env* env = Create(1000);
  const swapplan_rt_tensor a = Alloc(env, 100, 0x5e);
  REQUIRE(swapplan_rt_inject_fault(env, SWAPPLAN_RT_FAULT_COPY_ERROR, SWAPPLAN_RT_D2H, 0, 1, 0) ==
          SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_pageout_manual(env, a) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_before_prefetch_wait_all(env) == SWAPPLAN_RT_COPY_FAILED);
  CHECK(LastError().find("keeps its device block") != std::string::npos);
  int32_t resident = 0;
  REQUIRE(swapplan_rt_tensor_resident(env, a, &resident) == SWAPPLAN_RT_OK);
  CHECK(resident == 1);
  CHECK(Holds(env, a, 100, 0x5e));
  CHECK(swapplan_rt_inject_fault(env, 7, -1, 0, 1, 0) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

// A toy framework owning its storage (what the PyTorch layer does with
// storage.resize_): blocks by id, holds counted.
struct Framework {
  std::vector<void*> mem = std::vector<void*>(4, nullptr);
  std::vector<int> holds = std::vector<int>(4, 0);
  int frees = 0;
  int restores = 0;
};

int32_t Hold(void* user, uint64_t id) {
  ++static_cast<Framework*>(user)->holds[id];
  return 0;
}
int32_t Release(void* user, uint64_t id, int32_t free_memory) {
  Framework* fw = static_cast<Framework*>(user);
  --fw->holds[id];
  if (free_memory) {
    std::free(fw->mem[id]);
    fw->mem[id] = nullptr;
    ++fw->frees;
  }
  return 0;
}
int32_t Restore(void* user, uint64_t id, int64_t bytes, void** device) {
  Framework* fw = static_cast<Framework*>(user);
  fw->mem[id] = std::malloc(static_cast<size_t>(bytes));
  ++fw->holds[id];
  ++fw->restores;
  *device = fw->mem[id];
  return 0;
}

TEST_CASE("C API: framework-owned storage is held, freed and restored through the callbacks") {
  swapplan_rt_env* env = Create(1000);
  Framework fw;
  swapplan_rt_framework cb{sizeof(swapplan_rt_framework), &fw, &Hold, &Release, &Restore};
  REQUIRE(swapplan_rt_set_framework(env, &cb) == SWAPPLAN_RT_OK);
  fw.mem[1] = std::malloc(100);
  std::memset(fw.mem[1], 0x77, 100);
  const int64_t shape[] = {25};
  swapplan_rt_tensor t = 0;
  REQUIRE(swapplan_rt_tensor_register(env, 1, fw.mem[1], 100, 1, shape, 1,
                                      SWAPPLAN_RT_KIND_ACTIVATION, -1, &t) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_pageout_manual(env, t) == SWAPPLAN_RT_OK);
  CHECK(fw.holds[1] == 1);  // held while the copy reads it
  REQUIRE(swapplan_rt_before_prefetch_wait_all(env) == SWAPPLAN_RT_OK);
  CHECK(fw.frees == 1);  // freed after the copy, hold dropped
  CHECK(fw.mem[1] == nullptr);
  CHECK(fw.holds[1] == 0);
  int32_t op = 0;
  REQUIRE(swapplan_rt_intern_op(env, "use", &op) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, &t, 1) == SWAPPLAN_RT_OK);
  CHECK(fw.restores == 1);
  REQUIRE(fw.mem[1] != nullptr);
  CHECK(static_cast<uint8_t*>(fw.mem[1])[99] == 0x77);
  CHECK(fw.holds[1] == 0);  // the copy in is over
  REQUIRE(swapplan_rt_op_end(env, nullptr, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
  swapplan_rt_framework bad = cb;
  bad.restore = nullptr;
  CHECK(swapplan_rt_set_framework(env, &bad) == SWAPPLAN_RT_INVALID_ARGUMENT);
  REQUIRE(swapplan_rt_tensor_free(env, t) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
  std::free(fw.mem[1]);
}

// A framework that moves its storages' bytes itself (swapplan_rt_framework.
// copy, as SwapRuntime(device="cuda") does): what it is asked, in order.
struct Mover {
  std::vector<std::vector<uint8_t>> mem = std::vector<std::vector<uint8_t>>(4);
  std::vector<std::vector<uint8_t>> host = std::vector<std::vector<uint8_t>>(4);
  std::vector<std::string> log;
  int32_t fail_out = -1;  // COPY_OUT of this id fails
};
Mover* MoverOf(void* user) { return static_cast<Mover*>(user); }
int32_t MoverHold(void* user, uint64_t id) {
  MoverOf(user)->log.push_back("hold " + std::to_string(id));
  return 0;
}
int32_t MoverRelease(void* user, uint64_t id, int32_t free_memory) {
  Mover* m = MoverOf(user);
  m->log.push_back("release " + std::to_string(id) + (free_memory ? " free" : ""));
  if (free_memory) m->mem[id].clear();
  return 0;
}
int32_t MoverRestore(void* user, uint64_t id, int64_t bytes, void** device) {
  Mover* m = MoverOf(user);
  m->log.push_back("restore " + std::to_string(id));
  m->mem[id].assign(static_cast<size_t>(bytes), 0);
  *device = m->mem[id].data();
  return 0;
}
int32_t MoverCopy(void* user, uint64_t id, int32_t action, int64_t bytes) {
  Mover* m = MoverOf(user);
  static const char* const kNames[] = {"out ", "in ", "wait ", "discard "};
  std::string line = kNames[action];
  line += std::to_string(id);
  if (bytes != 0) {
    line += ' ';
    line += std::to_string(bytes);
  }
  m->log.push_back(line);
  if (action == SWAPPLAN_RT_COPY_OUT && static_cast<int32_t>(id) == m->fail_out) return 5;
  if (action == SWAPPLAN_RT_COPY_OUT) m->host[id] = m->mem[id];
  if (action == SWAPPLAN_RT_COPY_IN) m->mem[id] = m->host[id];
  return 0;
}

TEST_CASE("C API: framework copies — the runtime decides, the framework moves the bytes") {
  swapplan_rt_env* env = Create(1000);
  Mover mv;
  swapplan_rt_framework cb{sizeof(swapplan_rt_framework), &mv, &MoverHold, &MoverRelease,
                           &MoverRestore};
  cb.copy = &MoverCopy;
  REQUIRE(swapplan_rt_set_framework(env, &cb) == SWAPPLAN_RT_OK);
  const int64_t shape[] = {25};
  swapplan_rt_tensor t[4] = {};
  for (uint64_t id = 1; id <= 3; ++id) {
    mv.mem[id].assign(100, static_cast<uint8_t>(0x10 * id));
    REQUIRE(swapplan_rt_tensor_register(env, id, mv.mem[id].data(), 100, 1, shape, 1,
                                        SWAPPLAN_RT_KIND_ACTIVATION, -1, &t[id]) ==
            SWAPPLAN_RT_OK);
  }
  int32_t op = 0;
  REQUIRE(swapplan_rt_intern_op(env, "use", &op) == SWAPPLAN_RT_OK);
  // Out, released after the copy (the framework orders the free), back in
  // at the use: restore, copy in, the consumer waits, the hold goes.
  REQUIRE(swapplan_rt_pageout_manual(env, t[1]) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_before_prefetch_wait_all(env) == SWAPPLAN_RT_OK);
  swapplan_rt_stats st{};
  st.struct_size = sizeof(st);
  REQUIRE(swapplan_rt_get_stats(env, &st) == SWAPPLAN_RT_OK);
  CHECK(st.device_bytes_in_use == 200);  // 300 registered, 100 off the device
  CHECK(st.pinned_host_allocs == 0);     // no pinned memory of the runtime's
  CHECK(st.counts.bytes_d2h == 100);
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, &t[1], 1) == SWAPPLAN_RT_OK);
  CHECK(mv.mem[1] == std::vector<uint8_t>(100, 0x10));
  REQUIRE(swapplan_rt_op_end(env, nullptr, 0) == SWAPPLAN_RT_OK);
  // A swap-out under way when an op uses the tensor: the op waits for the
  // copy; written by it: the copy out is discarded (the tensor stays).
  REQUIRE(swapplan_rt_pageout_manual(env, t[2]) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, &t[2], 1) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_end(env, &t[2], 1) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
  // Freed while off the device: its host copy is discarded.
  REQUIRE(swapplan_rt_pageout_manual(env, t[3]) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_before_prefetch_wait_all(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_tensor_free(env, t[3]) == SWAPPLAN_RT_OK);
  const std::vector<std::string> expected = {
      "hold 1", "out 1 100", "release 1 free",                     // swap-out, release
      "restore 1", "in 1 100", "wait 1", "release 1",              // swap-in at the use
      "hold 2", "out 2 100", "wait 2", "discard 2", "release 2",   // used, then written
      "hold 3", "out 3 100", "release 3 free", "discard 3"};       // freed while off
  CHECK(mv.log == expected);
  // A failing copy fails the call; the tensor stays, its hold dropped.
  mv.log.clear();
  mv.fail_out = 2;
  CHECK(swapplan_rt_pageout_manual(env, t[2]) == SWAPPLAN_RT_UNAVAILABLE);
  CHECK(LastError().find("framework callback copy(out) failed for tensor 2 (code 5)") !=
        std::string::npos);
  CHECK(mv.log == std::vector<std::string>{"hold 2", "out 2 100", "release 2"});
  int32_t resident = 0;
  REQUIRE(swapplan_rt_tensor_resident(env, t[2], &resident) == SWAPPLAN_RT_OK);
  CHECK(resident == 1);
  // ABI 4's struct (no copy field): accepted, the backend copies.
  swapplan_rt_framework v4 = cb;
  v4.struct_size = offsetof(swapplan_rt_framework, recompute_workspace_bytes);
  CHECK(swapplan_rt_set_framework(env, &v4) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

int32_t CanRecompute(void*, uint64_t) { return 1; }
int32_t Recompute(void*, uint64_t, void*) { return 0; }

TEST_CASE("C API: the recompute callbacks are optional, both or neither") {
  swapplan_rt_env* env = Create(1000);
  Framework fw;
  // A caller built before the recompute callbacks existed: the struct ends
  // before them.
  swapplan_rt_framework old{};
  old.struct_size = offsetof(swapplan_rt_framework, can_recompute);
  old.user = &fw;
  old.hold = &Hold;
  old.release = &Release;
  old.restore = &Restore;
  CHECK(swapplan_rt_set_framework(env, &old) == SWAPPLAN_RT_OK);
  swapplan_rt_framework both{sizeof(swapplan_rt_framework), &fw, &Hold, &Release, &Restore,
                             &CanRecompute, &Recompute};
  CHECK(swapplan_rt_set_framework(env, &both) == SWAPPLAN_RT_OK);
  swapplan_rt_framework one = both;
  one.recompute = nullptr;
  CHECK(swapplan_rt_set_framework(env, &one) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(std::string(swapplan_rt_last_error()).find("both or neither") != std::string::npos);
  // ABI 3 and 4 callers: the struct ends before recompute_workspace_bytes.
  swapplan_rt_framework abi4 = both;
  abi4.struct_size = offsetof(swapplan_rt_framework, recompute_workspace_bytes);
  CHECK(swapplan_rt_set_framework(env, &abi4) == SWAPPLAN_RT_OK);
  swapplan_rt_framework odd = both;
  odd.struct_size = sizeof(swapplan_rt_framework) - 4;
  CHECK(swapplan_rt_set_framework(env, &odd) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

// The whole file ("" when it cannot be read).
std::string FileText(const std::string& path) {
  std::string out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return out;
}

// The execution record (JSON) after one iteration of one op under the
// framework struct `cb`.
std::string RecordWith(const swapplan_rt_framework& cb, const char* name) {
  swapplan_rt_env* env = Create(1000);
  REQUIRE(swapplan_rt_set_framework(env, &cb) == SWAPPLAN_RT_OK);
  swapplan_rt_tensor a = Alloc(env, 100, 1);
  int32_t op = 0;
  REQUIRE(swapplan_rt_intern_op(env, "aten::dropout", &op) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, &a, 1) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_end(env, &a, 1) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
  const std::string path = TempDir(name) + "/run.json";
  REQUIRE(swapplan_rt_write_record(env, path.c_str()) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
  return FileText(path);
}

TEST_CASE("C API: a framework whose recompute restores the RNG state says so in the record") {
  Framework fw;
  // Trace attribute rng_state_restorable (trace/recompute.h): present only
  // with the recompute callbacks and the flag set.
  const std::string key = "\"rng_state_restorable\"";
  swapplan_rt_framework yes{sizeof(swapplan_rt_framework), &fw, &Hold, &Release, &Restore,
                            &CanRecompute, &Recompute, 1};
  const std::string with = RecordWith(yes, "rng-yes");
  REQUIRE(with.find("swapplan_runtime") != std::string::npos);  // the record was read
  const size_t at = with.find(key);
  REQUIRE(at != std::string::npos);
  CHECK(with.find("\"true\"", at) == with.find_first_not_of(" :", at + key.size()));
  swapplan_rt_framework no = yes;
  no.rng_state_restorable = 0;
  CHECK(RecordWith(no, "rng-no").find(key) == std::string::npos);
  // Without the recompute callbacks the flag means nothing.
  swapplan_rt_framework no_recompute = yes;
  no_recompute.can_recompute = nullptr;
  no_recompute.recompute = nullptr;
  CHECK(RecordWith(no_recompute, "rng-none").find(key) == std::string::npos);
  // An ABI 2 caller: the struct ends before the field (whatever follows in
  // memory is not read).
  swapplan_rt_framework v2 = yes;
  v2.struct_size = offsetof(swapplan_rt_framework, rng_state_restorable);
  CHECK(RecordWith(v2, "rng-v2").find(key) == std::string::npos);
  swapplan_rt_env* env = Create(1000);
  swapplan_rt_framework bad = yes;
  bad.rng_state_restorable = 2;
  CHECK(swapplan_rt_set_framework(env, &bad) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("rng_state_restorable is 2; must be 0 or 1") != std::string::npos);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

struct ProviderLog {
  std::vector<std::string> records;
  // ABI 4: each request's key and observed record paths.
  std::vector<uint64_t> hashes;
  std::vector<int64_t> bytes;
  std::vector<std::vector<std::string>> observed;
};

int32_t Provider(void* user, const swapplan_rt_policy_request* r, char* path, size_t capacity) {
  ProviderLog* log = static_cast<ProviderLog*>(user);
  log->records.push_back(r->record_path);
  log->hashes.push_back(r->input_signature_hash);
  log->bytes.push_back(r->input_signature_bytes);
  log->observed.emplace_back();
  for (size_t k = 0; k < r->num_observed_records; ++k) {
    log->observed.back().push_back(r->observed_record_paths[k]);
  }
  if (capacity > 0) path[0] = '\0';  // no policy this time
  return 0;
}

// One iteration: op "step" (FORWARD, no input) creates an `act`-byte
// float32 output, freed after it: the input signature is that output, `act`
// bytes.
void RunStep(swapplan_rt_env* env, int32_t op, int64_t act) {
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) == SWAPPLAN_RT_OK);
  const swapplan_rt_tensor t = Alloc(env, act, 1);
  REQUIRE(swapplan_rt_op_end(env, &t, 1) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_tensor_free(env, t) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
}

// Runs inputs of 100 100 200 100 200 bytes (m = 1, n = 1: W W G G S) with
// `o` (its struct_size as the caller set it) and a logging provider.
void RunKeyed(const swapplan_rt_options& o, ProviderLog* log, swapplan_rt_stats* stats,
              std::vector<swapplan_rt_iteration_stats>* rows) {
  swapplan_rt_env* env = nullptr;
  const swapplan_rt_status rc = swapplan_rt_create_swap_env(&o, &env);
  INFO(LastError());
  REQUIRE(rc == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_set_policy_provider(env, &Provider, log) == SWAPPLAN_RT_OK);
  int32_t op = 0;
  REQUIRE(swapplan_rt_intern_op(env, "step", &op) == SWAPPLAN_RT_OK);
  for (const int64_t act : {100, 100, 200, 100, 200}) RunStep(env, op, act);
  REQUIRE(swapplan_rt_get_stats(env, stats) == SWAPPLAN_RT_OK);
  for (int32_t i = 0; i < stats->iterations; ++i) {
    rows->emplace_back();
    REQUIRE(swapplan_rt_get_iteration_stats(env, i, &rows->back()) == SWAPPLAN_RT_OK);
  }
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

swapplan_rt_options KeyedOptions(const std::string& dir) {
  swapplan_rt_options o;
  swapplan_rt_options_init(&o);
  o.device_memory_bytes = 1000;
  o.warmup_iterations = 1;
  o.genpolicy_iterations = 1;
  o.work_dir = dir.c_str();
  return o;
}

TEST_CASE("C API: the policy provider is asked in GenPolicy with the record of the iteration") {
  const std::string dir = TempDir("provider");
  swapplan_rt_env* env = Create(1000, /*m=*/1, /*n=*/1, dir.c_str());
  ProviderLog log;
  REQUIRE(swapplan_rt_set_policy_provider(env, &Provider, &log) == SWAPPLAN_RT_OK);
  int32_t op = 0;
  REQUIRE(swapplan_rt_intern_op(env, "step", &op) == SWAPPLAN_RT_OK);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) ==
            SWAPPLAN_RT_OK);
    const swapplan_rt_tensor t = Alloc(env, 100, 1);
    REQUIRE(swapplan_rt_op_end(env, &t, 1) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_tensor_free(env, t) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
  }
  // W W G G S: asked at the ends of iterations 1 and 2, and (observed
  // planning, the default) at the end of 3, which enters Stable.
  REQUIRE(log.records.size() == 3);
  FILE* f = std::fopen(log.records[0].c_str(), "r");
  CHECK(f != nullptr);
  if (f != nullptr) std::fclose(f);
  swapplan_rt_iteration_stats row;
  REQUIRE(swapplan_rt_get_iteration_stats(env, 2, &row) == SWAPPLAN_RT_OK);
  CHECK(row.stage == SWAPPLAN_RT_STAGE_GENPOLICY);
  char msg[256];
  REQUIRE(swapplan_rt_get_plan_error(env, 1, msg, sizeof msg) == SWAPPLAN_RT_OK);
  CHECK(std::string(msg).empty());
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

TEST_CASE("C API: an environment serialises callers on several threads") {
  swapplan_rt_env* env = Create(1 << 20);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    swapplan_rt_stats s;
    while (!done) bad += swapplan_rt_get_stats(env, &s) != SWAPPLAN_RT_OK;
  });
  int32_t op = 0;
  REQUIRE(swapplan_rt_intern_op(env, "step", &op) == SWAPPLAN_RT_OK);
  for (int i = 0; i < 200; ++i) {
    REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) ==
            SWAPPLAN_RT_OK);
    const swapplan_rt_tensor t = Alloc(env, 1000, 2);
    REQUIRE(swapplan_rt_op_end(env, &t, 1) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_pageout_manual(env, t) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_before_prefetch_wait_all(env) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_BACKWARD, &t, 1) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_op_end(env, nullptr, 0) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_tensor_free(env, t) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
  }
  done = true;
  reader.join();
  CHECK(bad == 0);
  swapplan_rt_stats s;
  REQUIRE(swapplan_rt_get_stats(env, &s) == SWAPPLAN_RT_OK);
  CHECK(s.counts.passive_swap_ins == 200);
  CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

}  // namespace

TEST_CASE("C API: the backend comes from the option or $SWAPPLAN_RT_BACKEND; vendor runtimes "
          "load at run time") {
  // The fake vendor runtimes (tests/meson.build passes their paths).
  const char* fake_cudart = std::getenv("SWAPPLAN_FAKE_CUDART");
  const char* fake_ascendcl = std::getenv("SWAPPLAN_FAKE_ASCENDCL");
  REQUIRE(fake_cudart != nullptr);
  REQUIRE(fake_ascendcl != nullptr);
  swapplan_rt_options o;
  swapplan_rt_options_init(&o);
  CHECK(o.backend == SWAPPLAN_RT_BACKEND_FROM_ENV);
  CHECK(o.vendor_library == nullptr);
  o.device_memory_bytes = 1000;
  swapplan_rt_env* env = nullptr;
  int32_t kind = -7;

  SECTION("by option: CUDA over the fake libcudart; a 100-byte tensor's bytes round-trip") {
    o.backend = SWAPPLAN_RT_BACKEND_CUDA;
    o.vendor_library = fake_cudart;
    REQUIRE(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_get_backend(env, &kind) == SWAPPLAN_RT_OK);
    CHECK(kind == SWAPPLAN_RT_BACKEND_CUDA);
    const swapplan_rt_tensor t = Alloc(env, 100, 0x5a);
    CHECK(Holds(env, t, 100, 0x5a));
    CHECK(swapplan_rt_tensor_free(env, t) == SWAPPLAN_RT_OK);
    CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
  }
  SECTION("from the environment: ascend, its library from $SWAPPLAN_RT_ASCEND_LIBRARY") {
    REQUIRE(setenv("SWAPPLAN_RT_BACKEND", "ascend", 1) == 0);
    REQUIRE(setenv("SWAPPLAN_RT_ASCEND_LIBRARY", fake_ascendcl, 1) == 0);
    const swapplan_rt_status rc = swapplan_rt_create_swap_env(&o, &env);
    unsetenv("SWAPPLAN_RT_BACKEND");
    unsetenv("SWAPPLAN_RT_ASCEND_LIBRARY");
    INFO(LastError());
    REQUIRE(rc == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_get_backend(env, &kind) == SWAPPLAN_RT_OK);
    CHECK(kind == SWAPPLAN_RT_BACKEND_ASCEND);
    CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
  }
  SECTION("unset: the host backend") {
    unsetenv("SWAPPLAN_RT_BACKEND");
    REQUIRE(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_OK);
    REQUIRE(swapplan_rt_get_backend(env, &kind) == SWAPPLAN_RT_OK);
    CHECK(kind == SWAPPLAN_RT_BACKEND_HOST);
    CHECK(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
  }
  SECTION("an unknown name in the environment") {
    REQUIRE(setenv("SWAPPLAN_RT_BACKEND", "tpu", 1) == 0);
    const swapplan_rt_status rc = swapplan_rt_create_swap_env(&o, &env);
    unsetenv("SWAPPLAN_RT_BACKEND");
    CHECK(rc == SWAPPLAN_RT_INVALID_ARGUMENT);
    CHECK(LastError().find("SWAPPLAN_RT_BACKEND is 'tpu'; must be host, cuda or ascend") !=
          std::string::npos);
    CHECK(env == nullptr);
  }
  SECTION("a vendor library that is not there: UNAVAILABLE naming it") {
    o.backend = SWAPPLAN_RT_BACKEND_CUDA;
    o.vendor_library = "/nonexistent/libcudart.so.13";
    CHECK(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_UNAVAILABLE);
    CHECK(LastError().find("/nonexistent/libcudart.so.13") != std::string::npos);
    CHECK(env == nullptr);
  }
}

TEST_CASE("C API: keyed policies — the request carries the key and the key's observed records") {
  const std::string dir = TempDir("keyed");
  ProviderLog log;
  swapplan_rt_stats stats;
  std::vector<swapplan_rt_iteration_stats> rows;
  RunKeyed(KeyedOptions(dir), &log, &stats, &rows);
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].input_signature_bytes == 100);
  CHECK(rows[2].input_signature_bytes == 200);
  CHECK(rows[0].input_signature_hash == rows[1].input_signature_hash);
  CHECK(rows[0].input_signature_hash != rows[2].input_signature_hash);
  CHECK(rows[4].stage == SWAPPLAN_RT_STAGE_STABLE);
  // Asked at the ends of 1 (key 100), 2 (key 200) and 3 (key 100, entering
  // Stable: observed planning plans it too).
  REQUIRE(log.records.size() == 3);
  CHECK(log.bytes == std::vector<int64_t>{100, 200, 100});
  CHECK(log.hashes[0] == rows[1].input_signature_hash);
  CHECK(log.hashes[1] == rows[2].input_signature_hash);
  CHECK(log.hashes[2] == log.hashes[0]);
  // Each key's records, oldest first, the request's own last: key 100 has
  // the records of 1 and 3 by the third request.
  CHECK(log.observed[0] == std::vector<std::string>{log.records[0]});
  CHECK(log.observed[1] == std::vector<std::string>{log.records[1]});
  CHECK(log.observed[2] == std::vector<std::string>{log.records[0], log.records[2]});
  // Two keys; the provider made no policy, so none ran for another input.
  CHECK(stats.policy_keys == 2);
  CHECK(stats.policy_of_other_input == 0);
  CHECK(stats.known_sequence_returns == 0);
}

TEST_CASE("C API: the fields round-trip — one key and iteration planning as asked") {
  const std::string dir = TempDir("onekey");
  swapplan_rt_options o = KeyedOptions(dir);
  o.policies_by_input = 0;
  o.planning = SWAPPLAN_RT_PLANNING_ITERATION;
  o.observed_records = 3;
  ProviderLog log;
  swapplan_rt_stats stats;
  std::vector<swapplan_rt_iteration_stats> rows;
  RunKeyed(o, &log, &stats, &rows);
  // Iteration planning: asked at the ends of 1 and 2 only, one record each,
  // the key 0 / 0 (one key for every input).
  REQUIRE(log.records.size() == 2);
  CHECK(log.bytes == std::vector<int64_t>{0, 0});
  CHECK(log.hashes == std::vector<uint64_t>{0, 0});
  CHECK(log.observed[1] == std::vector<std::string>{log.records[1]});
  CHECK(stats.policy_keys == 1);
  // The rows still carry each iteration's own signature.
  CHECK(rows[2].input_signature_bytes == 200);
}

TEST_CASE("C API: an ABI 2 options struct is accepted and runs ABI 2's stage machine") {
  const std::string dir = TempDir("abi2");
  swapplan_rt_options o = KeyedOptions(dir);
  // A caller compiled with ABI 2's header: the struct ends at max_events;
  // what lies after it is not the caller's (filled with what ABI 4 would
  // reject, to show it is not read).
  o.struct_size = offsetof(swapplan_rt_options, policies_by_input);
  o.policies_by_input = 1;
  o.planning = 7;
  o.observed_records = -1;
  o.remembered_sequences = -1;
  ProviderLog log;
  swapplan_rt_stats stats;
  std::vector<swapplan_rt_iteration_stats> rows;
  RunKeyed(o, &log, &stats, &rows);
  // One key, iteration planning: as the round-trip case above.
  REQUIRE(log.records.size() == 2);
  CHECK(log.bytes == std::vector<int64_t>{0, 0});
  CHECK(log.observed[0] == std::vector<std::string>{log.records[0]});
  CHECK(log.observed[1] == std::vector<std::string>{log.records[1]});
  CHECK(stats.policy_keys == 1);
}
