// runtime_gpu_check: the runtime's CUDA backend on a real GPU (or on the
// test fake, libfake_cudart.so), through the C API only (swapplan_runtime.h),
// as a framework would use it. It links libswapplan_runtime and nothing of
// CUDA: it dlopens the same vendor library the runtime loads
// ($SWAPPLAN_RT_CUDA_LIBRARY, else libcudart.so, .so.13, .so.12) for its own
// copies, using only calls the fake exports (cudaMemcpyAsync on the legacy
// default stream + cudaStreamSynchronize, cudaHostAlloc, cudaMemGetInfo, ...);
// cudaGetDeviceCount, cudaRuntimeGetVersion, cudaDriverGetVersion and
// cudaMemsetAsync are used when the library has them (the fake has not).
//
//   runtime_gpu_check [--tensors 64] [--tensor-bytes 64MiB] [--iterations 5]
//                     [--overlap-iterations 3] [--compute-bytes 4GiB]
//                     [--device 0] [--inject-corruption TENSOR]
//
// What it checks (docs/runtime.md "Backends", "The GPU check"):
//  1. Data integrity. N runtime-owned tensors (swapplan_rt_tensor_alloc),
//     each filled from the host with its own pattern (64-bit words of
//     splitmix64(tensor, word): a swap that mixes up tensors or offsets is
//     caught). Each verification iteration runs seed 004's manual paging,
//     with empty ops (no compute, so the batches time the copies alone):
//       forward  op i (tensor i) -> pageout_manual(i)   for i = 0..N-1
//       before_prefetch_wait_all                         (swap-outs done)
//       scrub: N runtime tensors of the same size are allocated (taking
//              the freed blocks back from the pool), filled with 0xA5 and
//              freed, so a swap-in that skipped its copy and got its old
//              block back would not still hold the pattern (the program
//              prints how many old blocks the scrub overwrote)
//       prefetch_init, need_prefetch(i) for i = N-1..0, prefetch_all
//       backward op i (tensor i)                          for i = N-1..0
//       cudaStreamSynchronize(legacy stream)              (swap-ins done)
//     then every tensor is copied back to the host and compared byte for
//     byte with its pattern: a mismatch fails naming the tensor, the
//     iteration and the first bad offset. The swap-out and swap-in batches
//     are timed (wall clock, host-synchronised), giving the bandwidth the
//     backend achieved.
//  2. Overlap. The same op sequence with "compute": each op runs
//     cudaMemsetAsync over a scratch buffer (--compute-bytes) on the
//     compute stream (the legacy default stream, the runtime's default);
//     once without any swap (baseline), once with the swaps above (no
//     scrub). Hidden = 1 - (with - without) / (swap-out + swap-in time of
//     the fastest verification iteration after the first). The default
//     4 GiB memset per op takes about as long as one 64 MiB copy over PCIe
//     on an H100/H200 class GPU (HBM ~3 TB/s, PCIe 5 ~50 GB/s).
//     Libraries without cudaMemsetAsync (the fake): the ops are empty.
//        compute  |op0|op1|op2|...|opN-1|   |bwdN-1|...|bwd0|
//        D2H          |out0|out1|...   |outN-1|
//        H2D                                 |inN-1|inN-2|...
//  3. Statistics: manual swap-outs and swap-ins = N per iteration, bytes
//     moved = N * size per direction per iteration, no passive swaps, OOMs,
//     allocation failures, copy errors or uses while off the device; on the
//     fake, no broken rule (swapplan_fake_violations).
//
// Exit: 0 every check passed ("gpu-check: OK ..."), 1 a check failed
// ("gpu-check: FAILED <why>"), 2 bad flags, 77 no CUDA library or no
// device (meson's skip). --inject-corruption T writes one wrong byte into
// tensor T after the last iteration's swap-in: the check must then fail
// (tests/runtime/gpu_check_corruption_test.py).
//
// Threading: single-threaded (the runtime's copy threads are its own).
// Cost: host memory 2 * N * size (patterns, the runtime's pinned pool);
// O(N * size) per iteration for the compare.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "swapplan/runtime/swapplan_runtime.h"

namespace {

constexpr int kSkip = 77;
constexpr int kMiB = 1 << 20;

// The CUDA calls this program makes itself (the signatures of
// src/runtime/cuda_api.h; enums as int, streams as void*).
struct Cuda {
  void* lib = nullptr;
  std::string name;
  int (*SetDevice)(int) = nullptr;
  int (*MemcpyAsync)(void*, const void*, size_t, int, void*) = nullptr;
  int (*StreamSynchronize)(void*) = nullptr;
  int (*HostAlloc)(void**, size_t, unsigned) = nullptr;
  int (*FreeHost)(void*) = nullptr;
  int (*MallocAsync)(void**, size_t, void*) = nullptr;
  int (*FreeAsync)(void*, void*) = nullptr;
  int (*MemGetInfo)(size_t*, size_t*) = nullptr;
  int (*PriorityRange)(int*, int*) = nullptr;
  const char* (*ErrorString)(int) = nullptr;
  // Optional: absent from the fake.
  int (*GetDeviceCount)(int*) = nullptr;
  int (*RuntimeVersion)(int*) = nullptr;
  int (*DriverVersion)(int*) = nullptr;
  int (*MemsetAsync)(void*, int, size_t, void*) = nullptr;
  size_t (*FakeViolations)(char*, size_t) = nullptr;  // the fake's control API
};
constexpr int kH2D = 1;
constexpr int kD2H = 2;
void* const kLegacyStream = nullptr;

template <typename F>
bool Bind(void* lib, const char* symbol, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, symbol));
  return *fn != nullptr;
}

// Opens the library; "" on success, else why not.
std::string OpenCuda(Cuda* c) {
  std::vector<std::string> names;
  const char* env = std::getenv("SWAPPLAN_RT_CUDA_LIBRARY");
  if (env != nullptr && *env != '\0') {
    names = {env};
  } else {
    // The runtime's own candidates (CudaLibraryCandidates, src/runtime/cuda_backend.cc).
    names = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  }
  std::string tried;
  for (const std::string& n : names) {
    c->lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (c->lib != nullptr) {
      c->name = n;
      break;
    }
    const char* why = dlerror();
    tried += "\n  " + n + ": " + (why != nullptr ? why : "not found");
  }
  if (c->lib == nullptr) return "no CUDA runtime library could be loaded:" + tried;
  const struct {
    const char* symbol;
    bool ok;
  } required[] = {
      {"cudaSetDevice", Bind(c->lib, "cudaSetDevice", &c->SetDevice)},
      {"cudaMemcpyAsync", Bind(c->lib, "cudaMemcpyAsync", &c->MemcpyAsync)},
      {"cudaStreamSynchronize", Bind(c->lib, "cudaStreamSynchronize", &c->StreamSynchronize)},
      {"cudaHostAlloc", Bind(c->lib, "cudaHostAlloc", &c->HostAlloc)},
      {"cudaFreeHost", Bind(c->lib, "cudaFreeHost", &c->FreeHost)},
      {"cudaMallocAsync", Bind(c->lib, "cudaMallocAsync", &c->MallocAsync)},
      {"cudaFreeAsync", Bind(c->lib, "cudaFreeAsync", &c->FreeAsync)},
      {"cudaMemGetInfo", Bind(c->lib, "cudaMemGetInfo", &c->MemGetInfo)},
      {"cudaDeviceGetStreamPriorityRange",
       Bind(c->lib, "cudaDeviceGetStreamPriorityRange", &c->PriorityRange)},
      {"cudaGetErrorString", Bind(c->lib, "cudaGetErrorString", &c->ErrorString)},
  };
  for (const auto& r : required) {
    if (!r.ok) return c->name + " lacks " + r.symbol;
  }
  Bind(c->lib, "cudaGetDeviceCount", &c->GetDeviceCount);
  Bind(c->lib, "cudaRuntimeGetVersion", &c->RuntimeVersion);
  Bind(c->lib, "cudaDriverGetVersion", &c->DriverVersion);
  Bind(c->lib, "cudaMemsetAsync", &c->MemsetAsync);
  Bind(c->lib, "swapplan_fake_violations", &c->FakeViolations);
  return "";
}

struct Flags {
  int64_t tensors = 64;
  int64_t tensor_bytes = 64ll * kMiB;
  int64_t iterations = 5;
  int64_t overlap_iterations = 3;
  int64_t compute_bytes = 4ll << 30;  // memset per op; 0: empty ops
  int64_t device = 0;
  int64_t inject_corruption = -1;  // tensor to corrupt; -1: none
};

// "64MiB", "1GiB", "4096" -> bytes; -1 when malformed.
int64_t ParseBytes(const std::string& s) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || v < 0) return -1;
  const std::string unit(end);
  if (unit.empty() || unit == "B") return v;
  if (unit == "KiB") return v << 10;
  if (unit == "MiB") return v << 20;
  if (unit == "GiB") return v << 30;
  return -1;
}

// "" on success, else the usage error.
std::string ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return "flag " + a + " needs a value";
    const std::string v = argv[++i];
    int64_t* out = nullptr;
    bool bytes = false;
    if (a == "--tensors") out = &f->tensors;
    else if (a == "--tensor-bytes") out = &f->tensor_bytes, bytes = true;
    else if (a == "--iterations") out = &f->iterations;
    else if (a == "--overlap-iterations") out = &f->overlap_iterations;
    else if (a == "--compute-bytes") out = &f->compute_bytes, bytes = true;
    else if (a == "--device") out = &f->device;
    else if (a == "--inject-corruption") out = &f->inject_corruption;
    else return "unknown flag " + a;
    *out = bytes ? ParseBytes(v) : ParseBytes(v + "B");
    if (*out < 0) return "bad value '" + v + "' for " + a;
  }
  if (f->tensors < 1 || f->tensors > 100000) return "--tensors must be 1..100000";
  if (f->tensor_bytes < 8 || f->tensor_bytes % 8 != 0) {
    return "--tensor-bytes must be a positive multiple of 8";
  }
  if (f->iterations < 1) return "--iterations must be >= 1";
  if (f->inject_corruption >= f->tensors) return "--inject-corruption names no tensor";
  return "";
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string Fmt(const char* format, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, a);
  return buf;
}

// A check failure: what went wrong, printed as "gpu-check: FAILED <why>".
struct Failure {
  std::string why;
};

class Check {
 public:
  Check(const Flags& flags, Cuda* cuda) : f_(flags), c_(*cuda) {}

  ~Check() {
    if (env_ != nullptr) swapplan_rt_close_swap_env(env_);
    if (staging_ != nullptr) c_.FreeHost(staging_);
    if (scratch_ != nullptr) c_.FreeAsync(scratch_, kLegacyStream);
  }

  // Runs every check; the summary figures on success, a Failure otherwise.
  std::string Run();

 private:
  void Rt(swapplan_rt_status st, const std::string& what) {
    if (st != SWAPPLAN_RT_OK) {
      throw Failure{what + ": " + swapplan_rt_status_name(st) + ": " + swapplan_rt_last_error()};
    }
  }
  void Cu(int err, const std::string& what) {
    if (err != 0) {
      throw Failure{what + ": CUDA error " + std::to_string(err) + " (" + c_.ErrorString(err) +
                    ")"};
    }
  }
  void Sync(const std::string& what) { Cu(c_.StreamSynchronize(kLegacyStream), what); }
  uint8_t* Expected(int64_t i) { return expected_.get() + i * f_.tensor_bytes; }

  void Setup();
  void Compute();
  // One iteration of the op sequence; swaps: with manual paging; scrub:
  // overwrite freed device memory between swap-out and swap-in; compute:
  // each op runs Compute() (else the ops are empty). Returns the
  // iteration's wall time (iteration_begin to the synchronised end, the
  // scrub included); out_s / in_s: the swap-out and swap-in batches.
  double Iteration(bool swaps, bool scrub, bool compute, double* out_s, double* in_s);
  void Scrub();
  void Verify(int64_t iteration);
  void CheckStats(int64_t swapping_iterations);

  const Flags& f_;
  Cuda& c_;
  swapplan_rt_env* env_ = nullptr;
  std::vector<swapplan_rt_tensor> tensors_;
  std::unique_ptr<uint8_t[]> expected_;
  void* staging_ = nullptr;  // pinned, one tensor
  void* scratch_ = nullptr;  // device, compute_bytes
  std::vector<void*> before_;    // device addresses before the last swap-out
  int64_t same_address_ = 0;     // tensors back at that address (last Verify)
  int64_t scrubbed_ = 0;         // of those addresses, overwritten by the last Scrub
  int32_t fwd_ = 0, bwd_ = 0, scrub_op_ = 0;
};

void Check::Setup() {
  swapplan_rt_options o;
  swapplan_rt_options_init(&o);
  o.backend = SWAPPLAN_RT_BACKEND_CUDA;
  o.vendor_library = c_.name.c_str();
  o.device_index = static_cast<int32_t>(f_.device);
  o.device_memory_bytes = 0;  // the device's total memory
  // Stay in WarmUp: no policy is generated; the swaps are the manual ones.
  o.warmup_iterations = 1 << 30;
  Rt(swapplan_rt_create_swap_env(&o, &env_), "create_swap_env (backend cuda)");
  int32_t backend = -1;
  Rt(swapplan_rt_get_backend(env_, &backend), "get_backend");
  std::printf("gpu-check: runtime backend %s (ABI %d)\n",
              backend == SWAPPLAN_RT_BACKEND_CUDA ? "cuda" : "NOT cuda", swapplan_rt_abi_version());
  if (backend != SWAPPLAN_RT_BACKEND_CUDA) throw Failure{"the runtime did not pick the CUDA backend"};
  Rt(swapplan_rt_intern_op(env_, "gpu_check::forward", &fwd_), "intern_op");
  Rt(swapplan_rt_intern_op(env_, "gpu_check::backward", &bwd_), "intern_op");
  Rt(swapplan_rt_intern_op(env_, "gpu_check::scrub", &scrub_op_), "intern_op");

  const auto t0 = std::chrono::steady_clock::now();
  const size_t size = static_cast<size_t>(f_.tensor_bytes);
  expected_ = std::make_unique_for_overwrite<uint8_t[]>(size * static_cast<size_t>(f_.tensors));
  for (int64_t i = 0; i < f_.tensors; ++i) {
    uint64_t* words = reinterpret_cast<uint64_t*>(Expected(i));
    for (size_t w = 0; w < size / 8; ++w) {
      words[w] = SplitMix64((static_cast<uint64_t>(i + 1) << 40) ^ w);
    }
  }
  Cu(c_.HostAlloc(&staging_, size, 0), "cudaHostAlloc(staging)");
  const int64_t shape[] = {f_.tensor_bytes / 4};
  tensors_.assign(static_cast<size_t>(f_.tensors), 0);
  before_.assign(static_cast<size_t>(f_.tensors), nullptr);
  for (int64_t i = 0; i < f_.tensors; ++i) {
    void* dev = nullptr;
    Rt(swapplan_rt_tensor_alloc(env_, f_.tensor_bytes, 1, shape, 1, SWAPPLAN_RT_KIND_ACTIVATION, 0,
                                &tensors_[i], &dev),
       "tensor_alloc of tensor " + std::to_string(i));
    std::memcpy(staging_, Expected(i), size);
    Cu(c_.MemcpyAsync(dev, staging_, size, kH2D, kLegacyStream), "cudaMemcpyAsync(fill)");
    Sync("cudaStreamSynchronize(fill)");
  }
  if (c_.MemsetAsync != nullptr && f_.compute_bytes > 0) {
    Cu(c_.MallocAsync(&scratch_, static_cast<size_t>(f_.compute_bytes), kLegacyStream),
       "cudaMallocAsync(scratch)");
    Sync("cudaStreamSynchronize(scratch)");
    std::printf("gpu-check: compute per op: cudaMemsetAsync of %" PRId64
                " MiB on the compute stream (the legacy default stream)\n",
                f_.compute_bytes / kMiB);
  } else {
    std::printf("gpu-check: compute per op: none (%s)\n",
                c_.MemsetAsync == nullptr ? "the library has no cudaMemsetAsync"
                                          : "--compute-bytes 0");
  }
  std::printf("gpu-check: %" PRId64 " tensors x %" PRId64 " bytes filled with their patterns in %.2f s\n",
              f_.tensors, f_.tensor_bytes, Seconds(t0, std::chrono::steady_clock::now()));
}

void Check::Compute() {
  if (scratch_ == nullptr) return;
  Cu(c_.MemsetAsync(scratch_, 0x3c, static_cast<size_t>(f_.compute_bytes), kLegacyStream),
     "cudaMemsetAsync(compute)");
}

void Check::Scrub() {
  const int64_t shape[] = {f_.tensor_bytes / 4};
  Rt(swapplan_rt_op_begin(env_, scrub_op_, SWAPPLAN_RT_PHASE_OTHER, nullptr, 0), "op_begin(scrub)");
  std::memset(staging_, 0xa5, static_cast<size_t>(f_.tensor_bytes));
  std::vector<swapplan_rt_tensor> scrub(tensors_.size(), 0);
  std::vector<void*> blocks(tensors_.size(), nullptr);
  for (size_t i = 0; i < scrub.size(); ++i) {
    Rt(swapplan_rt_tensor_alloc(env_, f_.tensor_bytes, 1, shape, 1, SWAPPLAN_RT_KIND_TEMPORARY, 0,
                                &scrub[i], &blocks[i]),
       "tensor_alloc(scrub)");
    Cu(c_.MemcpyAsync(blocks[i], staging_, static_cast<size_t>(f_.tensor_bytes), kH2D,
                      kLegacyStream),
       "cudaMemcpyAsync(scrub)");
  }
  Sync("cudaStreamSynchronize(scrub)");
  Rt(swapplan_rt_op_end(env_, scrub.data(), scrub.size()), "op_end(scrub)");
  for (swapplan_rt_tensor t : scrub) Rt(swapplan_rt_tensor_free(env_, t), "tensor_free(scrub)");
  std::sort(blocks.begin(), blocks.end());
  scrubbed_ = 0;
  for (void* old : before_) scrubbed_ += std::binary_search(blocks.begin(), blocks.end(), old);
}

double Check::Iteration(bool swaps, bool scrub, bool compute, double* out_s, double* in_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Rt(swapplan_rt_iteration_begin(env_), "iteration_begin");
  for (int64_t i = 0; i < f_.tensors; ++i) {
    Rt(swapplan_rt_op_begin(env_, fwd_, SWAPPLAN_RT_PHASE_FORWARD, &tensors_[i], 1),
       "op_begin(forward, tensor " + std::to_string(i) + ")");
    if (compute) Compute();
    Rt(swapplan_rt_op_end(env_, &tensors_[i], 1), "op_end(forward)");
    if (swaps) {
      Rt(swapplan_rt_tensor_data(env_, tensors_[i], &before_[i]), "tensor_data");
      Rt(swapplan_rt_pageout_manual(env_, tensors_[i]), "pageout_manual");
    }
  }
  if (swaps) {
    Rt(swapplan_rt_before_prefetch_wait_all(env_), "before_prefetch_wait_all");
    *out_s = Seconds(start, Clock::now());
    for (swapplan_rt_tensor t : tensors_) {
      int32_t resident = 1;
      Rt(swapplan_rt_tensor_resident(env_, t, &resident), "tensor_resident");
      if (resident != 0) throw Failure{"a tensor is still resident after its swap-out"};
    }
    if (scrub) Scrub();
  }
  const auto back = Clock::now();
  if (swaps) {
    Rt(swapplan_rt_prefetch_init(env_), "prefetch_init");
    for (int64_t i = f_.tensors - 1; i >= 0; --i) {
      Rt(swapplan_rt_need_prefetch(env_, tensors_[i]), "need_prefetch");
    }
    Rt(swapplan_rt_prefetch_all(env_), "prefetch_all");
  }
  for (int64_t i = f_.tensors - 1; i >= 0; --i) {
    Rt(swapplan_rt_op_begin(env_, bwd_, SWAPPLAN_RT_PHASE_BACKWARD, &tensors_[i], 1),
       "op_begin(backward, tensor " + std::to_string(i) + ")");
    if (compute) Compute();
    Rt(swapplan_rt_op_end(env_, nullptr, 0), "op_end(backward)");
  }
  Sync("cudaStreamSynchronize(end of iteration)");
  const auto end = Clock::now();
  if (swaps) *in_s = Seconds(back, end);
  return Seconds(start, end);
}

void Check::Verify(int64_t iteration) {
  const size_t size = static_cast<size_t>(f_.tensor_bytes);
  same_address_ = 0;
  for (int64_t i = 0; i < f_.tensors; ++i) {
    void* dev = nullptr;
    Rt(swapplan_rt_tensor_data(env_, tensors_[i], &dev), "tensor_data");
    if (dev == before_[i]) ++same_address_;
    Cu(c_.MemcpyAsync(staging_, dev, size, kD2H, kLegacyStream), "cudaMemcpyAsync(verify)");
    Sync("cudaStreamSynchronize(verify)");
    const uint8_t* got = static_cast<const uint8_t*>(staging_);
    const uint8_t* want = Expected(i);
    if (std::memcmp(got, want, size) == 0) continue;
    size_t off = 0;
    while (got[off] == want[off]) ++off;
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "data mismatch: tensor %" PRId64 ", iteration %" PRId64
                  ", first bad offset %zu (got 0x%02x, want 0x%02x)",
                  i, iteration, off, got[off], want[off]);
    throw Failure{buf};
  }
}

void Check::CheckStats(int64_t swapping_iterations) {
  swapplan_rt_stats s;
  s.struct_size = sizeof(s);
  Rt(swapplan_rt_get_stats(env_, &s), "get_stats");
  const swapplan_rt_counts& c = s.counts;
  const int64_t swaps = f_.tensors * swapping_iterations;
  const int64_t bytes = swaps * f_.tensor_bytes;
  std::printf("gpu-check: stats: manual swap-outs %" PRId64 " swap-ins %" PRId64 ", bytes d2h %" PRId64
              " h2d %" PRId64 ", stalls %" PRId64 " (%.3f ms), pinned reserved %" PRId64
              " MiB, copies in flight at most %d\n",
              c.manual_swap_outs, c.manual_swap_ins, c.bytes_d2h, c.bytes_h2d, c.stalls,
              static_cast<double>(c.stall_ns) / 1e6, s.pinned_reserved_bytes / kMiB,
              s.max_inflight_copies_seen);
  const struct {
    const char* name;
    int64_t got, want;
  } expect[] = {
      {"manual_swap_outs", c.manual_swap_outs, swaps},
      {"manual_swap_ins", c.manual_swap_ins, swaps},
      {"bytes_d2h", c.bytes_d2h, bytes},
      {"bytes_h2d", c.bytes_h2d, bytes},
      {"policy_swap_outs", c.policy_swap_outs, 0},
      {"policy_swap_ins", c.policy_swap_ins, 0},
      {"passive_swap_outs", c.passive_swap_outs, 0},
      {"passive_swap_ins", c.passive_swap_ins, 0},
      {"uses_while_off_device", c.uses_while_off_device, 0},
      {"allocation_failures", c.allocation_failures, 0},
      {"ooms", c.ooms, 0},
      {"cancelled_swap_outs", c.cancelled_swap_outs, 0},
      {"copy_errors", c.copy_errors, 0},
  };
  for (const auto& e : expect) {
    if (e.got != e.want) {
      throw Failure{std::string("stats: ") + e.name + " is " + std::to_string(e.got) +
                    ", expected " + std::to_string(e.want)};
    }
  }
}

std::string Check::Run() {
  Setup();
  const double gb = static_cast<double>(f_.tensors * f_.tensor_bytes) / 1e9;
  double best_out = 0, best_in = 0, swap_alone_s = 0;
  for (int64_t it = 0; it < f_.iterations; ++it) {
    double out_s = 0, in_s = 0;
    Iteration(true, true, false, &out_s, &in_s);
    const bool last = it + 1 == f_.iterations;
    if (last && f_.inject_corruption >= 0) {
      void* dev = nullptr;
      Rt(swapplan_rt_tensor_data(env_, tensors_[f_.inject_corruption], &dev), "tensor_data");
      const size_t off = static_cast<size_t>(f_.tensor_bytes / 2 + 3);
      static_cast<uint8_t*>(staging_)[0] = static_cast<uint8_t>(~Expected(f_.inject_corruption)[off]);
      Cu(c_.MemcpyAsync(static_cast<uint8_t*>(dev) + off, staging_, 1, kH2D, kLegacyStream),
         "cudaMemcpyAsync(inject)");
      Sync("cudaStreamSynchronize(inject)");
      std::printf("gpu-check: injected one wrong byte into tensor %" PRId64 " at offset %zu\n",
                  f_.inject_corruption, off);
    }
    Verify(it);
    Rt(swapplan_rt_iteration_end(env_), "iteration_end");
    std::printf("gpu-check: iteration %" PRId64 ": swap-out %.3f GB in %.2f ms = %.2f GB/s, swap-in "
                "in %.2f ms = %.2f GB/s; all %" PRId64 " tensors verified (%" PRId64
                " back at their old address; %" PRId64 " old blocks scrubbed in between)\n",
                it, gb, out_s * 1e3, gb / out_s, in_s * 1e3, gb / in_s, f_.tensors, same_address_,
                scrubbed_);
    // Iteration 0 grows the pinned pool (cudaHostAlloc): best of the rest.
    if (it > 0 || f_.iterations == 1) {
      best_out = std::max(best_out, gb / out_s);
      best_in = std::max(best_in, gb / in_s);
      if (swap_alone_s == 0 || out_s + in_s < swap_alone_s) swap_alone_s = out_s + in_s;
    }
  }
  std::string overlap = "overlap not measured (--overlap-iterations 0)";
  if (f_.overlap_iterations > 0) {
    double without = 0, with = 0, unused = 0;
    for (int64_t it = 0; it < f_.overlap_iterations; ++it) {
      const double w0 = Iteration(false, false, true, &unused, &unused);
      Rt(swapplan_rt_iteration_end(env_), "iteration_end");
      const double w1 = Iteration(true, false, true, &unused, &unused);
      Verify(f_.iterations + it);
      Rt(swapplan_rt_iteration_end(env_), "iteration_end");
      without = it == 0 ? w0 : std::min(without, w0);
      with = it == 0 ? w1 : std::min(with, w1);
    }
    const double hidden = 1.0 - (with - without) / swap_alone_s;
    std::printf("gpu-check: overlap (best of %" PRId64 "): iteration without swaps %.2f ms, with "
                "swaps %.2f ms, swaps alone %.2f ms: %.0f%% of the swap time hidden\n",
                f_.overlap_iterations, without * 1e3, with * 1e3, swap_alone_s * 1e3,
                100 * hidden);
    overlap = "overlap " + Fmt("%.0f%%", 100 * hidden) + " (" + Fmt("%.2f", without * 1e3) +
              " ms -> " + Fmt("%.2f", with * 1e3) + " ms)";
  }
  CheckStats(f_.iterations + f_.overlap_iterations);
  if (c_.FakeViolations != nullptr) {
    std::string text(c_.FakeViolations(nullptr, 0) + 1, '\0');
    c_.FakeViolations(text.data(), text.size());
    text.resize(std::strlen(text.c_str()));
    if (!text.empty()) throw Failure{"the fake runtime saw broken rules:\n" + text};
    std::printf("gpu-check: the fake runtime saw no broken rule\n");
  }
  const swapplan_rt_status closed = swapplan_rt_close_swap_env(env_);
  env_ = nullptr;
  Rt(closed, "close_swap_env");
  return "d2h " + Fmt("%.2f", best_out) + " GB/s, h2d " + Fmt("%.2f", best_in) + " GB/s, " +
         overlap + "; " + std::to_string(f_.tensors) + " x " + std::to_string(f_.tensor_bytes) +
         " bytes, " + std::to_string(f_.iterations + f_.overlap_iterations) +
         " swapping iterations, every byte verified";
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Flags flags;
  const std::string usage = ParseFlags(argc, argv, &flags);
  if (!usage.empty()) {
    std::fprintf(stderr, "runtime_gpu_check: %s\n", usage.c_str());
    return 2;
  }
  if (swapplan_rt_abi_version() != SWAPPLAN_RT_ABI_VERSION) {
    std::printf("gpu-check: FAILED libswapplan_runtime has ABI %d, this program %d\n",
                swapplan_rt_abi_version(), SWAPPLAN_RT_ABI_VERSION);
    return 1;
  }
  Cuda cuda;
  const std::string open = OpenCuda(&cuda);
  if (!open.empty()) {
    std::printf("gpu-check: SKIP %s\n", open.c_str());
    return kSkip;
  }
  std::printf("gpu-check: library %s\n", cuda.name.c_str());
  int v = 0;
  if (cuda.RuntimeVersion != nullptr && cuda.RuntimeVersion(&v) == 0) {
    std::printf("gpu-check: CUDA runtime version %d\n", v);
  }
  if (cuda.DriverVersion != nullptr && cuda.DriverVersion(&v) == 0) {
    std::printf("gpu-check: CUDA driver version %d\n", v);
  }
  if (cuda.GetDeviceCount != nullptr) {
    int count = 0;
    const int e = cuda.GetDeviceCount(&count);
    if (e != 0 || count == 0) {
      std::printf("gpu-check: SKIP no CUDA device (cudaGetDeviceCount: error %d, %d devices: %s)\n",
                  e, count, cuda.ErrorString(e));
      return kSkip;
    }
    std::printf("gpu-check: devices %d\n", count);
  } else {
    std::printf("gpu-check: devices: the library has no cudaGetDeviceCount (the test fake)\n");
  }
  const int set = cuda.SetDevice(static_cast<int>(flags.device));
  if (set != 0) {
    std::printf("gpu-check: SKIP cudaSetDevice(%" PRId64 "): error %d (%s)\n", flags.device, set,
                cuda.ErrorString(set));
    return kSkip;
  }
  int least = 0, greatest = 0;
  if (cuda.PriorityRange(&least, &greatest) == 0) {
    std::printf("gpu-check: stream priorities: least %d, greatest %d\n", least, greatest);
  }
  size_t free_bytes = 0, total_bytes = 0;
  if (cuda.MemGetInfo(&free_bytes, &total_bytes) == 0) {
    std::printf("gpu-check: device %" PRId64 " memory: %.2f GiB free of %.2f GiB\n", flags.device,
                static_cast<double>(free_bytes) / (1 << 30),
                static_cast<double>(total_bytes) / (1 << 30));
  }
  // The tensors, the scrub tensor as large, the compute scratch.
  const int64_t need = flags.tensors * flags.tensor_bytes * 2 +
                       (cuda.MemsetAsync != nullptr ? flags.compute_bytes : 0);
  if (total_bytes > 0 && static_cast<uint64_t>(need) > free_bytes) {
    std::printf("gpu-check: FAILED the sizes need %" PRId64 " MiB of device memory, %zu MiB free: "
                "lower --tensors / --tensor-bytes\n",
                need / kMiB, free_bytes / kMiB);
    return 1;
  }
  try {
    Check check(flags, &cuda);
    const std::string figures = check.Run();
    std::printf("gpu-check: OK %s\n", figures.c_str());
    return 0;
  } catch (const Failure& f) {
    std::printf("gpu-check: FAILED %s\n", f.why.c_str());
    return 1;
  }
}
