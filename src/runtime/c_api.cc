// The C API over swapplan::runtime::Runtime (swapplan_runtime.h). Every entry point: lock the
// environment, run, turn a status into a code and a thread-local message; catch anything thrown.
#include "swapplan/runtime/swapplan_runtime.h"

#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/file_io.h"
#include "swapplan/policy/saved_tensor_clock.h"
#include "swapplan/runtime/acl_backend.h"
#include "swapplan/runtime/cuda_backend.h"
#include "swapplan/runtime/host_backend.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

using swapplan::runtime::Runtime;

struct swapplan_rt_env {
  std::mutex mu;
  std::unique_ptr<Runtime> rt;
  swapplan::runtime::HostBackend* host = nullptr;
  int32_t backend = SWAPPLAN_RT_BACKEND_HOST;
  swapplan_rt_framework framework{};
  swapplan_rt_policy_provider provider = nullptr;
  void* provider_user = nullptr;
};

namespace {

using namespace swapplan;           // NOLINT
using namespace swapplan::runtime;  // NOLINT

thread_local std::string g_last_error;

swapplan_rt_status Code(const absl::Status& st) {
  if (st.ok()) return SWAPPLAN_RT_OK;
  if (std::optional<std::string> rule = RuleOf(st)) {
    if (*rule == "out-of-memory") return SWAPPLAN_RT_OUT_OF_MEMORY;
    if (*rule == "copy-failed") return SWAPPLAN_RT_COPY_FAILED;
    if (*rule == "call-order") return SWAPPLAN_RT_CALL_ORDER;
  }
  switch (st.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return SWAPPLAN_RT_INVALID_ARGUMENT;
    case absl::StatusCode::kDataLoss:
      return SWAPPLAN_RT_MALFORMED_INPUT;
    case absl::StatusCode::kNotFound:
      return SWAPPLAN_RT_NOT_FOUND;
    case absl::StatusCode::kFailedPrecondition:
      return SWAPPLAN_RT_CALL_ORDER;
    case absl::StatusCode::kResourceExhausted:
      return SWAPPLAN_RT_OUT_OF_MEMORY;
    case absl::StatusCode::kUnavailable:
      return SWAPPLAN_RT_UNAVAILABLE;
    default:
      return SWAPPLAN_RT_INTERNAL;
  }
}

swapplan_rt_status Fail(swapplan_rt_status code, std::string message) {
  g_last_error = std::move(message);
  return code;
}

swapplan_rt_status Report(const absl::Status& st) {
  if (st.ok()) return SWAPPLAN_RT_OK;
  return Fail(Code(st), std::string(st.message()));
}

// Runs `fn` (returning absl::Status) on a locked environment; nothing thrown
// escapes.
template <typename F>
swapplan_rt_status Guarded(swapplan_rt_env* env, const char* what, F&& fn) {
  if (env == nullptr || env->rt == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, absl::StrCat(what, ": no swap environment"));
  }
  try {
    std::lock_guard<std::mutex> lock(env->mu);
    return Report(fn(*env->rt));
  } catch (const std::bad_alloc&) {
    return Fail(SWAPPLAN_RT_INTERNAL, absl::StrCat(what, ": out of host memory"));
  } catch (const std::exception& e) {
    return Fail(SWAPPLAN_RT_INTERNAL, absl::StrCat(what, ": unexpected exception: ", e.what()));
  } catch (...) {
    return Fail(SWAPPLAN_RT_INTERNAL, absl::StrCat(what, ": unexpected exception"));
  }
}

absl::Status FromCallback(int32_t rc, const char* what, uint64_t id) {
  if (rc == 0) return absl::OkStatus();
  return Error(ErrorKind::kUnavailable,
               absl::StrCat("framework callback ", what, " failed for tensor ", id,
                            " (code ", rc, ")"));
}

void FillCounts(const SwapCounts& c, swapplan_rt_counts* o) {
  o->policy_swap_outs = c.policy_swap_outs;
  o->policy_swap_ins = c.policy_swap_ins;
  o->manual_swap_outs = c.manual_swap_outs;
  o->manual_swap_ins = c.manual_swap_ins;
  o->passive_swap_outs = c.passive_swap_outs;
  o->passive_swap_ins = c.passive_swap_ins;
  o->bytes_d2h = c.bytes_d2h;
  o->bytes_h2d = c.bytes_h2d;
  o->stalls = c.stalls;
  o->stall_ns = c.stall_ns;
  o->uses_while_off_device = c.uses_while_off_device;
  o->allocation_failures = c.allocation_failures;
  o->early_releases = c.early_releases;
  o->ooms = c.ooms;
  o->cancelled_swap_outs = c.cancelled_swap_outs;
  o->copy_errors = c.copy_errors;
  o->items_matched = c.items_matched;
  o->items_missed = c.items_missed;
  o->policy_drops = c.policy_drops;
  o->policy_recomputes = c.policy_recomputes;
  o->recompute_fallbacks_to_swap = c.recompute_fallbacks_to_swap;
}

absl::StatusOr<TensorDesc> Desc(int64_t size_bytes, int32_t dtype, const int64_t* shape,
                                int32_t ndim, int32_t kind, int32_t persistent) {
  if (dtype < 0 || dtype >= kNumDTypes) {
    return absl::InvalidArgumentError(absl::StrCat("tensor: dtype code ", dtype, " is unknown"));
  }
  if (kind < 0 || kind >= kNumTensorKinds) {
    return absl::InvalidArgumentError(absl::StrCat("tensor: kind code ", kind, " is unknown"));
  }
  if (ndim < 0 || (ndim > 0 && shape == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor: ", ndim, " dimensions and ", shape == nullptr ? "no" : "a",
                     " shape array"));
  }
  TensorDesc d;
  d.size_bytes = size_bytes;
  d.dtype = static_cast<DType>(dtype);
  d.shape = absl::Span<const int64_t>(shape, static_cast<size_t>(ndim));
  d.kind = static_cast<TensorKind>(kind);
  d.persistent = static_cast<int8_t>(persistent < 0 ? -1 : persistent != 0);
  return d;
}

// The backend `o` asks for (FROM_ENV: $SWAPPLAN_RT_BACKEND, host when
// unset): its kind in *kind, the host backend also in *host.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const swapplan_rt_options& o,
                                                     const DeviceModel& device,
                                                     HostBackend** host, int32_t* kind) {
  *kind = o.backend;
  if (o.backend == SWAPPLAN_RT_BACKEND_FROM_ENV) {
    const char* env = std::getenv("SWAPPLAN_RT_BACKEND");
    const std::string name = env != nullptr ? env : "";
    if (name.empty() || name == "host") {
      *kind = SWAPPLAN_RT_BACKEND_HOST;
    } else if (name == "cuda") {
      *kind = SWAPPLAN_RT_BACKEND_CUDA;
    } else if (name == "ascend") {
      *kind = SWAPPLAN_RT_BACKEND_ASCEND;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "create_swap_env: SWAPPLAN_RT_BACKEND is '", name, "'; must be host, cuda or ascend"));
    }
  }
  const std::string library = o.vendor_library != nullptr ? o.vendor_library : "";
  switch (*kind) {
    case SWAPPLAN_RT_BACKEND_HOST: {
      if (o.compute_stream < 0 || o.compute_stream > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("create_swap_env: compute_stream ", o.compute_stream, " is unknown"));
      }
      HostBackendOptions ho;
      ho.device = device;
      ho.compute = o.compute_stream == SWAPPLAN_RT_COMPUTE_WORKER ? ComputeStreamKind::kWorker
                                                                 : ComputeStreamKind::kInline;
      ho.timed_copies = o.timed_copies != 0;
      SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<HostBackend> b, HostBackend::Create(ho));
      *host = b.get();
      return std::unique_ptr<Backend>(std::move(b));
    }
    case SWAPPLAN_RT_BACKEND_CUDA:
      return CreateCudaBackend({.library = library, .device = o.device_index});
    case SWAPPLAN_RT_BACKEND_ASCEND:
      return CreateAclBackend(
          {.library = library, .device = o.device_index, .max_events = o.max_events});
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("create_swap_env: backend ", o.backend, " is unknown"));
  }
}

}  // namespace

extern "C" {

int32_t swapplan_rt_abi_version(void) { return SWAPPLAN_RT_ABI_VERSION; }

const char* swapplan_rt_last_error(void) { return g_last_error.c_str(); }

const char* swapplan_rt_status_name(int32_t status) {
  switch (status) {
    case SWAPPLAN_RT_OK:
      return "ok";
    case SWAPPLAN_RT_INVALID_ARGUMENT:
      return "invalid-argument";
    case SWAPPLAN_RT_CALL_ORDER:
      return "call-order";
    case SWAPPLAN_RT_OUT_OF_MEMORY:
      return "out-of-memory";
    case SWAPPLAN_RT_COPY_FAILED:
      return "copy-failed";
    case SWAPPLAN_RT_NOT_FOUND:
      return "not-found";
    case SWAPPLAN_RT_MALFORMED_INPUT:
      return "malformed-input";
    case SWAPPLAN_RT_UNAVAILABLE:
      return "unavailable";
    case SWAPPLAN_RT_INTERNAL:
      return "internal";
    default:
      return "unknown";
  }
}

void swapplan_rt_options_init(swapplan_rt_options* o) {
  if (o == nullptr) return;
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->backend = SWAPPLAN_RT_BACKEND_FROM_ENV;
  o->device_memory_bytes = int64_t{1} << 30;
  o->h2d_bandwidth_bytes_per_s = 10e9;
  o->d2h_bandwidth_bytes_per_s = 10e9;
  o->copy_latency_ns = 10'000;
  o->copy_engines = 2;
  o->compute_stream = SWAPPLAN_RT_COMPUTE_INLINE;
  o->timed_copies = 1;
  o->matcher = SWAPPLAN_RT_MATCHER_FUZZY;
  o->matcher_window_ops = 4;
  o->runtime_key_bits = 32;
  o->warmup_iterations = 2;
  o->genpolicy_iterations = 5;
  o->oom_handling = SWAPPLAN_RT_OOM_ALL_STAGES;
  o->overcommit_on_oom = 0;
  o->strict_fingerprint = 0;
  o->max_inflight_copies = 8;
  o->pinned_block_bytes = int64_t{64} << 20;
  o->keep_record = 0;
  o->work_dir = nullptr;
  o->vendor_library = nullptr;
  o->device_index = 0;
  o->max_events = 0;
  const RuntimeOptions defaults;
  o->policies_by_input = defaults.policies_by_input ? 1 : 0;
  o->planning = defaults.planning == PolicyPlanning::kIteration ? SWAPPLAN_RT_PLANNING_ITERATION
                                                                : SWAPPLAN_RT_PLANNING_OBSERVED;
  o->observed_records = defaults.observed_records;
  o->remembered_sequences = defaults.remembered_sequences;
}

swapplan_rt_status swapplan_rt_create_swap_env(const swapplan_rt_options* options,
                                               swapplan_rt_env** env) {
  if (options == nullptr || env == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "create_swap_env: null options or output");
  }
  // ABI 2's and 3's struct ends before policies_by_input: accepted, with
  // their rules.
  constexpr uint32_t kAbi2Size = offsetof(swapplan_rt_options, policies_by_input);
  if (options->struct_size != sizeof(swapplan_rt_options) && options->struct_size != kAbi2Size) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                absl::StrCat("create_swap_env: options.struct_size is ", options->struct_size,
                             ", this library expects ", sizeof(swapplan_rt_options), " (or ",
                             kAbi2Size, ", ABI 2's and 3's) (call swapplan_rt_options_init)"));
  }
  *env = nullptr;
  try {
    // Copy what the caller's struct holds; ABI 2's / 3's get the papers' stage
    // machine — one key, planned on one iteration, nothing remembered.
    swapplan_rt_options o;
    swapplan_rt_options_init(&o);
    std::memcpy(&o, options, options->struct_size);
    if (options->struct_size == kAbi2Size) {
      o.policies_by_input = 0;
      o.planning = SWAPPLAN_RT_PLANNING_ITERATION;
      o.observed_records = 1;
      o.remembered_sequences = 0;
    }
    if (o.matcher != SWAPPLAN_RT_MATCHER_FUZZY && o.matcher != SWAPPLAN_RT_MATCHER_NAIVE) {
      return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                  absl::StrCat("create_swap_env: matcher ", o.matcher, " is unknown"));
    }
    if (o.planning != SWAPPLAN_RT_PLANNING_OBSERVED &&
        o.planning != SWAPPLAN_RT_PLANNING_ITERATION) {
      return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                  absl::StrCat("create_swap_env: planning ", o.planning, " is unknown"));
    }
    if (o.oom_handling < 0 || o.oom_handling > 2) {
      return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                  absl::StrCat("create_swap_env: oom_handling ", o.oom_handling, " is unknown"));
    }
    DeviceModel device;
    device.name = "host";
    device.capacity_bytes = o.device_memory_bytes;
    device.h2d_bandwidth_bytes_per_s = o.h2d_bandwidth_bytes_per_s;
    device.d2h_bandwidth_bytes_per_s = o.d2h_bandwidth_bytes_per_s;
    device.copy_latency_ns = o.copy_latency_ns;
    device.copy_engines = o.copy_engines;
    HostBackend* host = nullptr;
    int32_t kind = SWAPPLAN_RT_BACKEND_HOST;
    absl::StatusOr<std::unique_ptr<Backend>> backend = MakeBackend(o, device, &host, &kind);
    if (!backend.ok()) return Report(backend.status());
    device.name = std::string((*backend)->name());
    RuntimeOptions ro;
    ro.device_budget_bytes = o.device_memory_bytes;
    ro.device = device;
    ro.matcher = o.matcher == SWAPPLAN_RT_MATCHER_NAIVE ? MatcherKind::kNaive : MatcherKind::kFuzzy;
    ro.matcher_options.window_ops = o.matcher_window_ops;
    ro.runtime_key_bits = o.runtime_key_bits;
    ro.tracker.warmup_iterations = o.warmup_iterations;
    ro.tracker.genpolicy_iterations = o.genpolicy_iterations;
    ro.oom_handling = static_cast<OomHandling>(o.oom_handling);
    ro.overcommit_on_oom = o.overcommit_on_oom != 0;
    ro.strict_fingerprint = o.strict_fingerprint != 0;
    ro.queue.max_inflight_per_lane = o.max_inflight_copies;
    ro.pinned.block_bytes = o.pinned_block_bytes;
    ro.keep_record = o.keep_record != 0;
    ro.policies_by_input = o.policies_by_input != 0;
    ro.planning = o.planning == SWAPPLAN_RT_PLANNING_ITERATION ? PolicyPlanning::kIteration
                                                               : PolicyPlanning::kObserved;
    ro.observed_records = o.observed_records;
    ro.remembered_sequences = o.remembered_sequences;
    if (o.work_dir != nullptr) ro.work_dir = o.work_dir;
    absl::StatusOr<std::unique_ptr<Runtime>> rt = Runtime::Create(ro, std::move(*backend));
    if (!rt.ok()) return Report(rt.status());
    auto e = std::make_unique<swapplan_rt_env>();
    e->rt = std::move(*rt);
    e->host = host;
    e->backend = kind;
    *env = e.release();
    return SWAPPLAN_RT_OK;
  } catch (const std::exception& e) {
    return Fail(SWAPPLAN_RT_INTERNAL, absl::StrCat("create_swap_env: unexpected exception: ",
                                                   e.what()));
  } catch (...) {
    return Fail(SWAPPLAN_RT_INTERNAL, "create_swap_env: unexpected exception");
  }
}

swapplan_rt_status swapplan_rt_close_swap_env(swapplan_rt_env* env) {
  if (env == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "close_swap_env: no environment");
  std::unique_ptr<swapplan_rt_env> owned(env);
  swapplan_rt_status rc = Guarded(env, "close_swap_env", [](Runtime& rt) { return rt.Close(); });
  try {
    std::lock_guard<std::mutex> lock(env->mu);
    env->rt.reset();
  } catch (...) {
    return Fail(SWAPPLAN_RT_INTERNAL, "close_swap_env: unexpected exception while freeing");
  }
  return rc;
}

swapplan_rt_status swapplan_rt_pageout_manual(swapplan_rt_env* env, swapplan_rt_tensor tensor) {
  return Guarded(env, "pageout_manual", [&](Runtime& rt) { return rt.PageOut(tensor); });
}

swapplan_rt_status swapplan_rt_need_prefetch(swapplan_rt_env* env, swapplan_rt_tensor tensor) {
  return Guarded(env, "need_prefetch", [&](Runtime& rt) { return rt.NeedPrefetch(tensor); });
}

swapplan_rt_status swapplan_rt_prefetch_init(swapplan_rt_env* env) {
  return Guarded(env, "prefetch_init", [](Runtime& rt) { return rt.PrefetchInit(); });
}

swapplan_rt_status swapplan_rt_before_prefetch_wait_all(swapplan_rt_env* env) {
  return Guarded(env, "before_prefetch_wait_all",
                 [](Runtime& rt) { return rt.WaitAllSwapOuts(); });
}

swapplan_rt_status swapplan_rt_prefetch_all(swapplan_rt_env* env) {
  return Guarded(env, "prefetch_all", [](Runtime& rt) { return rt.PrefetchAll(); });
}

swapplan_rt_status swapplan_rt_set_framework(swapplan_rt_env* env, const swapplan_rt_framework* fw) {
  // Accepted sizes: ABI 1 (no recompute callbacks), 2 (no
  // rng_state_restorable), 3 and 4 (no recompute_workspace_bytes), 5 (the
  // whole struct).
  constexpr uint32_t kWithoutRecompute = offsetof(swapplan_rt_framework, can_recompute);
  constexpr uint32_t kWithoutRng = offsetof(swapplan_rt_framework, rng_state_restorable);
  constexpr uint32_t kWithoutWorkspace =
      offsetof(swapplan_rt_framework, recompute_workspace_bytes);
  if (fw == nullptr ||
      (fw->struct_size != sizeof(swapplan_rt_framework) &&
       fw->struct_size != kWithoutWorkspace && fw->struct_size != kWithoutRng &&
       fw->struct_size != kWithoutRecompute) ||
      fw->hold == nullptr || fw->release == nullptr || fw->restore == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                "set_framework: need a swapplan_rt_framework with struct_size set and the hold, "
                "release and restore callbacks");
  }
  const bool recompute = fw->struct_size >= kWithoutRng &&
                         (fw->can_recompute != nullptr || fw->recompute != nullptr);
  if (recompute && (fw->can_recompute == nullptr || fw->recompute == nullptr)) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                "set_framework: can_recompute and recompute go together (set both or neither)");
  }
  if (fw->struct_size >= kWithoutWorkspace && fw->rng_state_restorable != 0 &&
      fw->rng_state_restorable != 1) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                absl::StrCat("set_framework: rng_state_restorable is ", fw->rng_state_restorable,
                             "; must be 0 or 1"));
  }
  return Guarded(env, "set_framework", [&](Runtime& rt) {
    env->framework = swapplan_rt_framework{};
    std::memcpy(&env->framework, fw, fw->struct_size);
    const swapplan_rt_framework* f = &env->framework;
    FrameworkCallbacks cb;
    cb.hold = [f](uint64_t id) {
      absl::Status st = FromCallback(f->hold(f->user, id), "hold", id);
      return st.ok() ? st : WithRule(st, "hold-failed");
    };
    cb.release = [f](uint64_t id, bool free_memory) {
      const int32_t rc = f->release(f->user, id, free_memory ? 1 : 0);
      absl::Status st = FromCallback(rc, "release", id);
      return rc == 3 ? WithRule(st, "release-refused") : st;
    };
    cb.restore = [f](uint64_t id, int64_t bytes) -> absl::StatusOr<void*> {
      void* p = nullptr;
      const int32_t rc = f->restore(f->user, id, bytes, &p);
      if (rc == SWAPPLAN_RT_OUT_OF_MEMORY) {
        return WithRule(Error(ErrorKind::kResourceLimit,
                              absl::StrCat("framework callback restore: the framework's allocator "
                                           "is out of memory for tensor ", id, " (", bytes,
                                           " bytes)")),
                        "framework-oom");
      }
      SWAPPLAN_RETURN_IF_ERROR(FromCallback(rc, "restore", id));
      if (p == nullptr && bytes > 0) {
        return Error(ErrorKind::kUnavailable,
                     absl::StrCat("framework callback restore returned no memory for tensor ", id));
      }
      return p;
    };
    if (recompute) {
      cb.can_recompute = [f](uint64_t id) { return f->can_recompute(f->user, id) == 1; };
      cb.recompute = [f](uint64_t id, void* device) {
        return FromCallback(f->recompute(f->user, id, device), "recompute", id);
      };
      // Zero-filled above when the caller's struct ends before the field.
      cb.rng_state_restorable = f->rng_state_restorable == 1;
      if (f->recompute_workspace_bytes != nullptr) {
        cb.recompute_workspace_bytes = [f](uint64_t id) -> absl::StatusOr<int64_t> {
          const int64_t bytes = f->recompute_workspace_bytes(f->user, id);
          if (bytes < 0) {
            return Error(ErrorKind::kUnavailable,
                         absl::StrCat("framework callback recompute_workspace_bytes failed for "
                                      "tensor ", id, " (", bytes, ")"));
          }
          return bytes;
        };
      }
    }
    if (fw->struct_size == sizeof(swapplan_rt_framework) && f->copy != nullptr) {
      cb.copy = [f](uint64_t id, FrameworkCopy action, int64_t bytes) {
        static constexpr const char* kNames[] = {"copy(out)", "copy(in)", "copy(wait)",
                                                 "copy(discard)"};
        return FromCallback(f->copy(f->user, id, static_cast<int32_t>(action), bytes),
                            kNames[static_cast<int>(action)], id);
      };
    }
    rt.SetFrameworkCallbacks(std::move(cb));
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_set_compute_stream(swapplan_rt_env* env, void* stream) {
  return Guarded(env, "set_compute_stream", [&](Runtime& rt) -> absl::Status {
    if (env->host != nullptr && stream != nullptr) {
      return absl::InvalidArgumentError(
          "set_compute_stream: the host backend computes on the calling thread (stream NULL)");
    }
    rt.SetComputeStream(stream != nullptr ? Stream{stream} : rt.backend().ComputeStream());
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_get_backend(swapplan_rt_env* env, int32_t* backend) {
  if (backend == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "get_backend: null output");
  return Guarded(env, "get_backend", [&](Runtime&) {
    *backend = env->backend;
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_set_policy_provider(swapplan_rt_env* env,
                                                   swapplan_rt_policy_provider provider,
                                                   void* user) {
  return Guarded(env, "set_policy_provider", [&](Runtime& rt) {
    env->provider = provider;
    env->provider_user = user;
    if (provider == nullptr) {
      rt.SetPolicyProvider(nullptr);
      return absl::OkStatus();
    }
    rt.SetPolicyProvider([env](const PolicyRequest& r) -> absl::StatusOr<std::string> {
      swapplan_rt_policy_request req;
      req.record_path = r.record_path.c_str();
      req.iteration = r.iteration;
      req.runtime_iteration = r.runtime_iteration;
      req.device_budget_bytes = r.device_budget_bytes;
      req.work_dir = r.work_dir.c_str();
      req.input_signature_hash = r.input_signature_hash;
      req.input_signature_bytes = r.input_signature_bytes;
      std::vector<const char*> observed;
      observed.reserve(r.observed_record_paths.size());
      for (const std::string& path : r.observed_record_paths) observed.push_back(path.c_str());
      req.observed_record_paths = observed.data();
      req.num_observed_records = observed.size();
      std::vector<char> buf(4096, '\0');
      const int32_t rc = env->provider(env->provider_user, &req, buf.data(), buf.size());
      buf.back() = '\0';
      if (rc != 0) {
        return Error(ErrorKind::kUnavailable,
                     absl::StrCat("policy provider failed (code ", rc, "): ", buf.data()));
      }
      return std::string(buf.data());
    });
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_load_policy(swapplan_rt_env* env, const char* policy_path,
                                           const char* trace_path, int32_t iteration) {
  if (policy_path == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "load_policy: no path");
  // Read outside the lock: files may be large.
  absl::StatusOr<Policy> policy = ReadPolicyFile(policy_path);
  if (!policy.ok()) return Report(policy.status());
  if (trace_path == nullptr) {
    return Guarded(env, "load_policy", [&](Runtime& rt) {
      return rt.LoadPolicy(std::move(*policy)).status();
    });
  }
  absl::StatusOr<Trace> trace = ReadTraceFile(trace_path);
  if (!trace.ok()) return Report(trace.status());
  return Guarded(env, "load_policy", [&](Runtime& rt) {
    return rt.LoadPolicyForTrace(std::move(*policy), *trace, iteration).status();
  });
}

swapplan_rt_status swapplan_rt_clear_policy(swapplan_rt_env* env) {
  return Guarded(env, "clear_policy", [](Runtime& rt) {
    rt.ClearPolicy();
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_tensor_register(swapplan_rt_env* env, uint64_t framework_id,
                                               void* device, int64_t size_bytes, int32_t dtype,
                                               const int64_t* shape, int32_t ndim, int32_t kind,
                                               int32_t persistent, swapplan_rt_tensor* tensor) {
  if (tensor == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "tensor_register: null output");
  return Guarded(env, "tensor_register", [&](Runtime& rt) -> absl::Status {
    SWAPPLAN_ASSIGN_OR_RETURN(TensorDesc d, Desc(size_bytes, dtype, shape, ndim, kind, persistent));
    d.framework_id = framework_id;
    SWAPPLAN_ASSIGN_OR_RETURN(*tensor, rt.RegisterTensor(d, device));
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_tensor_alloc(swapplan_rt_env* env, int64_t size_bytes,
                                            int32_t dtype, const int64_t* shape, int32_t ndim,
                                            int32_t kind, int32_t persistent,
                                            swapplan_rt_tensor* tensor, void** device) {
  if (tensor == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "tensor_alloc: null output");
  return Guarded(env, "tensor_alloc", [&](Runtime& rt) -> absl::Status {
    SWAPPLAN_ASSIGN_OR_RETURN(TensorDesc d, Desc(size_bytes, dtype, shape, ndim, kind, persistent));
    SWAPPLAN_ASSIGN_OR_RETURN(*tensor, rt.AllocTensor(d, device));
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_tensor_free(swapplan_rt_env* env, swapplan_rt_tensor tensor) {
  return Guarded(env, "tensor_free", [&](Runtime& rt) { return rt.FreeTensor(tensor); });
}

swapplan_rt_status swapplan_rt_tensor_data(swapplan_rt_env* env, swapplan_rt_tensor tensor,
                                           void** device) {
  if (device == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "tensor_data: null output");
  return Guarded(env, "tensor_data", [&](Runtime& rt) -> absl::Status {
    SWAPPLAN_ASSIGN_OR_RETURN(*device, rt.TensorData(tensor));
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_tensor_resident(swapplan_rt_env* env, swapplan_rt_tensor tensor,
                                               int32_t* resident) {
  if (resident == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "tensor_resident: null output");
  }
  return Guarded(env, "tensor_resident", [&](Runtime& rt) -> absl::Status {
    SWAPPLAN_ASSIGN_OR_RETURN(bool r, rt.IsResident(tensor));
    *resident = r ? 1 : 0;
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_intern_op(swapplan_rt_env* env, const char* name, int32_t* op) {
  if (name == nullptr || op == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "intern_op: null name or output");
  }
  return Guarded(env, "intern_op", [&](Runtime& rt) {
    *op = rt.InternOp(name);
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_iteration_begin(swapplan_rt_env* env) {
  return Guarded(env, "iteration_begin", [](Runtime& rt) { return rt.IterationBegin(); });
}

swapplan_rt_status swapplan_rt_iteration_end(swapplan_rt_env* env) {
  return Guarded(env, "iteration_end", [](Runtime& rt) { return rt.IterationEnd(); });
}

swapplan_rt_status swapplan_rt_op_begin(swapplan_rt_env* env, int32_t op, int32_t phase,
                                        const swapplan_rt_tensor* inputs, size_t num_inputs) {
  if (num_inputs > 0 && inputs == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "op_begin: null inputs");
  }
  if (phase < 0 || phase >= kNumPhases) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, absl::StrCat("op_begin: phase ", phase, " is unknown"));
  }
  return Guarded(env, "op_begin", [&](Runtime& rt) {
    return rt.OpBegin(op, static_cast<Phase>(phase), absl::MakeConstSpan(inputs, num_inputs));
  });
}

swapplan_rt_status swapplan_rt_op_reserve(swapplan_rt_env* env, int64_t bytes) {
  return Guarded(env, "op_reserve", [&](Runtime& rt) { return rt.OpReserve(bytes); });
}

swapplan_rt_status swapplan_rt_op_end(swapplan_rt_env* env, const swapplan_rt_tensor* outputs,
                                      size_t num_outputs) {
  if (num_outputs > 0 && outputs == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "op_end: null outputs");
  }
  return Guarded(env, "op_end", [&](Runtime& rt) {
    return rt.OpEnd(absl::MakeConstSpan(outputs, num_outputs));
  });
}

swapplan_rt_status swapplan_rt_get_stats(swapplan_rt_env* env, swapplan_rt_stats* stats) {
  if (stats == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "get_stats: null output");
  return Guarded(env, "get_stats", [&](Runtime& rt) {
    const RuntimeStats r = rt.Stats();
    std::memset(stats, 0, sizeof(*stats));
    stats->struct_size = sizeof(*stats);
    stats->iterations = r.iterations;
    stats->stage = static_cast<int32_t>(r.stage);
    stats->live_tensors = r.live_tensors;
    stats->device_budget_bytes = r.device_budget_bytes;
    stats->device_bytes_in_use = r.device_bytes_in_use;
    stats->peak_device_bytes = r.peak_device_bytes;
    stats->policies_loaded = r.policies_loaded;
    stats->active_policy = r.active_policy;
    stats->pinned_reserved_bytes = r.pinned.reserved_bytes;
    stats->pinned_peak_in_use_bytes = r.pinned.peak_in_use_bytes;
    stats->pinned_host_allocs = r.pinned.host_allocs;
    stats->max_inflight_copies_seen = r.queue.max_inflight_seen;
    FillCounts(r.counts, &stats->counts);
    stats->policy_of_other_input = r.policy_of_other_input;
    stats->known_sequence_returns = r.known_sequence_returns;
    stats->policy_keys = r.policy_keys;
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_get_iteration_stats(swapplan_rt_env* env, int32_t index,
                                                   swapplan_rt_iteration_stats* stats) {
  if (stats == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "get_iteration_stats: null output");
  }
  return Guarded(env, "get_iteration_stats", [&](Runtime& rt) -> absl::Status {
    const std::vector<IterationStats>& rows = rt.IterationRows();
    if (index < 0 || index >= static_cast<int32_t>(rows.size())) {
      return absl::InvalidArgumentError(absl::StrCat("get_iteration_stats: iteration ", index,
                                                     " of ", rows.size()));
    }
    const IterationStats& r = rows[index];
    std::memset(stats, 0, sizeof(*stats));
    stats->struct_size = sizeof(*stats);
    stats->iteration = r.iteration;
    stats->stage = static_cast<int32_t>(r.stage);
    stats->policy = r.policy;
    stats->ops = r.ops;
    stats->wall_ns = r.wall_ns;
    stats->peak_bytes = r.peak_bytes;
    stats->fingerprint_matched = r.fingerprint_matched ? 1 : 0;
    stats->first_divergent_op = r.first_divergent_op;
    stats->sequence_stable = r.sequence_stable ? 1 : 0;
    stats->next_stage = static_cast<int32_t>(r.next_stage);
    stats->generated_policy = r.generated_policy;
    FillCounts(r.counts, &stats->counts);
    stats->input_signature_hash = r.input_signature_hash;
    stats->input_signature_bytes = r.input_signature_bytes;
    stats->policy_of_other_input = r.policy_of_other_input ? 1 : 0;
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_get_plan_error(swapplan_rt_env* env, int32_t index, char* message,
                                              size_t capacity) {
  if (message == nullptr || capacity == 0) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "get_plan_error: no buffer");
  }
  return Guarded(env, "get_plan_error", [&](Runtime& rt) -> absl::Status {
    const std::vector<IterationStats>& rows = rt.IterationRows();
    if (index < 0 || index >= static_cast<int32_t>(rows.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("get_plan_error: iteration ", index, " of ", rows.size()));
    }
    const std::string& e = rows[index].plan_error;
    const size_t n = std::min(e.size(), capacity - 1);
    std::memcpy(message, e.data(), n);
    message[n] = '\0';
    return absl::OkStatus();
  });
}

swapplan_rt_status swapplan_rt_write_record(swapplan_rt_env* env, const char* path) {
  if (path == nullptr) return Fail(SWAPPLAN_RT_INVALID_ARGUMENT, "write_record: null path");
  return Guarded(env, "write_record", [&](Runtime& rt) { return rt.WriteRecord(path); });
}

swapplan_rt_status swapplan_rt_inject_fault(swapplan_rt_env* env, int32_t kind, int32_t direction,
                                            int32_t skip, int32_t count, double slow_factor) {
  return Guarded(env, "inject_fault", [&](Runtime&) -> absl::Status {
    if (env->host == nullptr) {
      return absl::InvalidArgumentError("inject_fault: only the host backend injects faults");
    }
    if (kind < 0 || kind > 2 || direction < -1 || direction > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("inject_fault: kind ", kind, " or direction ", direction, " is unknown"));
    }
    FaultSpec f;
    f.kind = static_cast<FaultKind>(kind);
    f.any_direction = direction < 0;
    f.direction = direction == SWAPPLAN_RT_H2D ? Direction::kHostToDevice
                                               : Direction::kDeviceToHost;
    f.skip = skip;
    f.count = count;
    f.slow_factor = slow_factor;
    return env->host->InjectFault(f);
  });
}

swapplan_rt_status swapplan_rt_saved_tensor_event(swapplan_rt_env* env, int32_t unpack,
                                                  swapplan_rt_tensor tensor) {
  return Guarded(env, "saved_tensor_event",
                 [&](Runtime& rt) { return rt.SavedTensorEvent(unpack != 0, tensor); });
}

swapplan_rt_status swapplan_rt_saved_tensor_events_recorded(swapplan_rt_env* env) {
  return Guarded(env, "saved_tensor_events_recorded",
                 [](Runtime& rt) { return rt.MarkSavedTensorEventsRecorded(); });
}

swapplan_rt_status swapplan_rt_snap_saved_window(const int32_t* event_positions,
                                                 int64_t num_events, int32_t first_pack_event,
                                                 int32_t release_position,
                                                 int32_t restore_position, int32_t* release_event,
                                                 int32_t* restore_event) {
  if ((event_positions == nullptr && num_events > 0) || num_events < 0 ||
      num_events > INT32_MAX || release_event == nullptr || restore_event == nullptr) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                absl::StrCat("snap_saved_window: null pointer or event count ", num_events));
  }
  if (first_pack_event < 0 || first_pack_event >= num_events) {
    return Fail(SWAPPLAN_RT_INVALID_ARGUMENT,
                absl::StrCat("snap_saved_window: first pack event ", first_pack_event,
                             " is not one of the ", num_events, " events"));
  }
  const SavedClockWindow w = SnapSavedWindow(
      absl::MakeConstSpan(event_positions, static_cast<size_t>(num_events)), first_pack_event,
      release_position, restore_position);
  *release_event = w.release_event;
  *restore_event = w.restore_event;
  return SWAPPLAN_RT_OK;
}

}  // extern "C"
