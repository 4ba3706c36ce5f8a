/* swapplan runtime shim: the C API of libswapplan_runtime.so (SPEC §9).
 *
 * A training framework calls these entry points on every operator; the shim
 * executes a swap policy (or Algorithm 3's passive swaps when none applies)
 * on a device backend, tracks the stage of training (WarmUp -> GenPolicy ->
 * Stable), asks a policy provider for policies and records what it did as a
 * swapplan trace. The C++ class behind it is swapplan::runtime::Runtime
 * (runtime.h): read it for the behaviour of each call.
 *
 * Seed 004's interface, and the names here:
 *   torch.cuda.create_swap_env          swapplan_rt_create_swap_env
 *   Tensor.pageout_manual               swapplan_rt_pageout_manual
 *   Tensor.need_prefetch                swapplan_rt_need_prefetch
 *   torch.cuda.prefetch_init            swapplan_rt_prefetch_init
 *   torch.cuda.before_prefetch_wait_all swapplan_rt_before_prefetch_wait_all
 *   torch.cuda.prefetch_all             swapplan_rt_prefetch_all
 *   torch.cuda.close_swap_env           swapplan_rt_close_swap_env
 *   passive swap-in on data access      swapplan_rt_op_begin (an input that is
 *                                       off the device comes back first, at the
 *                                       head of the queue)
 * plus policies (swapplan_rt_load_policy, a provider), the per-op entry
 * points, tensors, statistics and the execution record.
 *
 * Typical use by a framework hook:
 *
 *   swapplan_rt_options o;
 *   swapplan_rt_options_init(&o);
 *   o.device_memory_bytes = 6ll << 30;
 *   swapplan_rt_env* env;
 *   if (swapplan_rt_create_swap_env(&o, &env) != SWAPPLAN_RT_OK)
 *     fprintf(stderr, "%s\n", swapplan_rt_last_error());
 *   int32_t mm;
 *   swapplan_rt_intern_op(env, "aten::mm", &mm);        // once per operator
 *   swapplan_rt_iteration_begin(env);
 *   swapplan_rt_op_begin(env, mm, SWAPPLAN_RT_PHASE_FORWARD, inputs, 2);
 *   ... the kernel runs; new outputs: swapplan_rt_tensor_register ...
 *   swapplan_rt_op_end(env, outputs, 1);
 *   swapplan_rt_iteration_end(env);
 *   swapplan_rt_close_swap_env(env);
 *
 * Errors: every call returns a swapplan_rt_status; on failure
 * swapplan_rt_last_error() (thread-local, valid until the next failing call on
 * the thread) says what and where. No C++ exception crosses this API.
 *
 * Threading model: an environment may be called from any thread; its entry
 * points serialise on a lock held for the whole call (a framework calls it
 * from its dispatch thread; autograd threads are serialised with it). The
 * backend's copy streams run on their own threads and never call back.
 * Callbacks (the framework's hold / release / restore, the policy provider)
 * run on the calling thread, inside the entry point that needs them, with the
 * lock held: they must not call into the same environment. A policy may be
 * loaded from another thread at any time; it takes effect at the next
 * swapplan_rt_iteration_begin.
 *
 * Linking: the library exports the swapplan_rt_* functions and nothing else
 * (hidden visibility, the version script SWAPPLAN_RT_1, --exclude-libs,ALL;
 * tests/runtime/exported_symbols_test.py checks `nm -D`), so nothing of it
 * clashes with what a training process already loaded. It carries no
 * protobuf at all. Linking protobuf and abseil statically was the first
 * choice, and it is impossible with Debian's archives: libprotobuf.a,
 * libprotobuf-lite.a and several libabsl_*.a (raw_hash_set, base,
 * cordz_functions) are built as PIE with local-exec TLS (R_X86_64_TPOFF32),
 * which no shared object may contain. Importing the shared libprotobuf would
 * make the library's protobuf references interposable by the process's own
 * protobuf (PyTorch's). So the library links only core's protobuf-free
 * objects (a reference to anything else fails its link), reads policies with
 * core's wire decoder (swapplan/policy/policy_wire.h, cross-checked against
 * protobuf's), reads and writes traces in the JSON form, links zlib
 * statically, and imports Debian's shared abseil: every abseil symbol carries
 * Debian's inline namespace (absl::debian3 on Debian 12, absl::debian7 on
 * Debian 13), which no other abseil build uses, so another abseil in the
 * process cannot bind to it or be bound by it (the symbols test checks each
 * abseil import is in the namespace absl/base/options.h names, and that no
 * protobuf or nlohmann symbol is imported). nlohmann is header-only and local.
 */
#ifndef SWAPPLAN_RUNTIME_SWAPPLAN_RUNTIME_H_
#define SWAPPLAN_RUNTIME_SWAPPLAN_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define SWAPPLAN_RT_API __attribute__((visibility("default")))
#else
#define SWAPPLAN_RT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The layout of the structs below. A caller compares swapplan_rt_abi_version()
 * with the value it was compiled with and refuses a mismatch: the stats
 * calls fill the structs to this header's sizes.
 *   1  first release
 *   2  swapplan_rt_counts gained policy_drops, policy_recomputes and
 *      recompute_fallbacks_to_swap; swapplan_rt_framework gained the optional
 *      can_recompute and recompute callbacks (RECOMPUTE items)
 *   3  swapplan_rt_framework gained rng_state_restorable (the recompute
 *      callback restores the generator state of random ops); a struct of
 *      version 1 or 2 (struct_size = offsetof(..., can_recompute) or
 *      offsetof(..., rng_state_restorable)) is still accepted
 *   4  keyed policies (runtime.h "Stages"): swapplan_rt_options gained
 *      policies_by_input, planning, observed_records and
 *      remembered_sequences (a struct that ends before them, struct_size =
 *      offsetof(swapplan_rt_options, policies_by_input), is accepted and runs
 *      ABI 2's one key, PLANNING_ITERATION, nothing remembered);
 *      swapplan_rt_policy_request gained the input signature and the
 *      observed record paths; swapplan_rt_stats gained policy_of_other_input,
 *      known_sequence_returns and policy_keys; swapplan_rt_iteration_stats
 *      gained the input signature and policy_of_other_input
 *   5  swapplan_rt_framework gained recompute_workspace_bytes (the bytes a
 *      recomputation allocates besides the tensor's own: room is made for
 *      them and they count against the budget while it runs) and the
 *      optional copy callback (the framework moves its storages' bytes
 *      itself: CUDA tensors of a framework whose copies run on its own
 *      streams); a struct of version 3 or 4 (struct_size = offsetof(...,
 *      recompute_workspace_bytes)) is still accepted: no workspace, and the
 *      backend copies, as before */
#define SWAPPLAN_RT_ABI_VERSION 5

typedef enum swapplan_rt_status {
  SWAPPLAN_RT_OK = 0,
  SWAPPLAN_RT_INVALID_ARGUMENT = 1, /* a bad value: handle, option, op id, policy */
  SWAPPLAN_RT_CALL_ORDER = 2,       /* entry points called out of order */
  SWAPPLAN_RT_OUT_OF_MEMORY = 3,    /* the device budget: Algorithm 3 could not make room */
  SWAPPLAN_RT_COPY_FAILED = 4,      /* a swap copy failed; the tensor is kept (device or host) */
  SWAPPLAN_RT_NOT_FOUND = 5,        /* a file */
  SWAPPLAN_RT_MALFORMED_INPUT = 6,  /* a policy or trace file is corrupt */
  SWAPPLAN_RT_UNAVAILABLE = 7,      /* the device or backend failed */
  SWAPPLAN_RT_INTERNAL = 8          /* a bug, or an exception caught at the boundary */
} swapplan_rt_status;

/* Phases (as in swapplan traces). */
enum {
  SWAPPLAN_RT_PHASE_FORWARD = 0,
  SWAPPLAN_RT_PHASE_BACKWARD = 1,
  SWAPPLAN_RT_PHASE_OPTIMIZER = 2,
  SWAPPLAN_RT_PHASE_OTHER = 3
};
/* Stages. */
enum { SWAPPLAN_RT_STAGE_WARMUP = 0, SWAPPLAN_RT_STAGE_GENPOLICY = 1, SWAPPLAN_RT_STAGE_STABLE = 2 };
/* Tensor kinds (trace TensorKind). */
enum {
  SWAPPLAN_RT_KIND_OTHER = 0,
  SWAPPLAN_RT_KIND_PARAMETER = 1,
  SWAPPLAN_RT_KIND_GRADIENT = 2,
  SWAPPLAN_RT_KIND_OPTIMIZER_STATE = 3,
  SWAPPLAN_RT_KIND_ACTIVATION = 4,
  SWAPPLAN_RT_KIND_INPUT = 5,
  SWAPPLAN_RT_KIND_TEMPORARY = 6
};
/* dtypes use the trace's codes: 0 unknown, 1 float32, 2 float16, 3 bfloat16,
 * 4 float64, 5 int64, 6 int32, 7 int16, 8 int8, 9 uint8, 10 bool,
 * 11 float8_e4m3, 12 float8_e5m2, 13 complex64. */
enum { SWAPPLAN_RT_MATCHER_FUZZY = 0, SWAPPLAN_RT_MATCHER_NAIVE = 1 };
enum {
  SWAPPLAN_RT_OOM_ALL_STAGES = 0,
  SWAPPLAN_RT_OOM_WARMUP_ONLY = 1,
  SWAPPLAN_RT_OOM_OFF = 2
};
/* Backends (docs/runtime.md "Backends"). FROM_ENV (the default of
 * swapplan_rt_options_init): $SWAPPLAN_RT_BACKEND ("host", "cuda" or
 * "ascend"), host when unset. CUDA and ASCEND load the vendor runtime at
 * run time (dlopen): vendor_library, else $SWAPPLAN_RT_CUDA_LIBRARY /
 * $SWAPPLAN_RT_ASCEND_LIBRARY, else libcudart.so(.13/.12/.11.0) /
 * libascendcl.so; a missing library or symbol fails create_swap_env with
 * SWAPPLAN_RT_UNAVAILABLE and a message naming it. */
enum {
  SWAPPLAN_RT_BACKEND_FROM_ENV = -1,
  SWAPPLAN_RT_BACKEND_HOST = 0,
  SWAPPLAN_RT_BACKEND_CUDA = 1,
  SWAPPLAN_RT_BACKEND_ASCEND = 2
};
enum { SWAPPLAN_RT_COMPUTE_INLINE = 0, SWAPPLAN_RT_COMPUTE_WORKER = 1 };
/* How GenPolicy plans and which policy Stable runs (runtime.h
 * PolicyPlanning): OBSERVED, the provider gets the key's last
 * observed_records records and Stable runs the key's latest policy;
 * ITERATION (the papers'), the provider gets the iteration just run and
 * Stable runs the key's best GenPolicy policy. */
enum { SWAPPLAN_RT_PLANNING_OBSERVED = 0, SWAPPLAN_RT_PLANNING_ITERATION = 1 };
enum {
  SWAPPLAN_RT_FAULT_COPY_ERROR = 0,
  SWAPPLAN_RT_FAULT_ALLOC_FAILURE = 1,
  SWAPPLAN_RT_FAULT_SLOW_COPY = 2
};
/* Framework copies (swapplan_rt_framework.copy): what the runtime asks. */
enum {
  SWAPPLAN_RT_COPY_OUT = 0,     /* start copying the storage to the framework's host memory */
  SWAPPLAN_RT_COPY_IN = 1,      /* start copying it back into the storage restore allocated */
  SWAPPLAN_RT_COPY_WAIT = 2,    /* the current stream waits for the tensor's last copy */
  SWAPPLAN_RT_COPY_DISCARD = 3  /* its host copy is not needed: free it after the copy */
};
/* Copy directions (fault injection): -1 any. */
enum { SWAPPLAN_RT_D2H = 0, SWAPPLAN_RT_H2D = 1 };

typedef struct swapplan_rt_env swapplan_rt_env;
/* A live tensor; 0 = none. */
typedef uint64_t swapplan_rt_tensor;

typedef struct swapplan_rt_options {
  uint32_t struct_size; /* sizeof(swapplan_rt_options), set by _init */
  int32_t backend;      /* SWAPPLAN_RT_BACKEND_* (default FROM_ENV) */
  /* Device memory the runtime may use (the host backend's capacity; CUDA /
   * Ascend: the budget, 0 = the device's total memory). */
  int64_t device_memory_bytes;
  /* Copy model of the device (host backend: how long its copies take; CUDA /
   * Ascend: what the record says to planners). */
  double h2d_bandwidth_bytes_per_s;
  double d2h_bandwidth_bytes_per_s;
  int64_t copy_latency_ns;
  int32_t copy_engines; /* 1 or 2 */
  /* Host backend: SWAPPLAN_RT_COMPUTE_INLINE (the calling thread computes:
   * CPU frameworks) or _WORKER; timed_copies 0: copies at memcpy speed. */
  int32_t compute_stream;
  int32_t timed_copies;
  int32_t matcher;             /* SWAPPLAN_RT_MATCHER_* */
  int32_t matcher_window_ops;  /* fuzzy matcher slack, ops */
  int32_t runtime_key_bits;    /* 32 or 64 */
  int32_t warmup_iterations;   /* Algorithm 1's m */
  int32_t genpolicy_iterations; /* Algorithm 1's n */
  int32_t oom_handling;        /* SWAPPLAN_RT_OOM_* */
  /* 1: a registered (framework-owned) tensor Algorithm 3 cannot fit is
   * taken anyway, the OOM counted (CPU frameworks that report and go on). */
  int32_t overcommit_on_oom;
  int32_t strict_fingerprint;  /* stop a policy at the first op that differs */
  int32_t max_inflight_copies; /* per copy lane */
  int64_t pinned_block_bytes;  /* pinned host blocks the pool grows by */
  int32_t keep_record;         /* keep every iteration for swapplan_rt_write_record */
  const char* work_dir;        /* records for the policy provider (copied) */
  /* CUDA / Ascend: the vendor runtime library (a path or a soname; NULL: the
   * environment variable, else the default names), the device, and (Ascend)
   * the events the backend may create, 0 = no cap of its own. */
  const char* vendor_library;
  int32_t device_index;
  int32_t max_events;
  /* ABI 3 (runtime.h RuntimeOptions, "Stages"). 1: a policy set per input
   * signature (dtypes and shapes of the first FORWARD op's inputs and
   * outputs); an input never planned for runs the nearest key's policy by
   * bytes, larger first (counted: policy_of_other_input). 0: one key. */
  int32_t policies_by_input;
  int32_t planning;             /* SWAPPLAN_RT_PLANNING_* */
  int32_t observed_records;     /* PLANNING_OBSERVED: records per request, >= 1 */
  /* Policy sets of op sequences the run left kept (most recent first); an
   * iteration stable against one goes straight back to Stable. 0: forget. */
  int32_t remembered_sequences;
} swapplan_rt_options;

/* Counts for the whole run or one iteration (runtime.h SwapCounts). */
typedef struct swapplan_rt_counts {
  int64_t policy_swap_outs, policy_swap_ins, manual_swap_outs, manual_swap_ins;
  int64_t passive_swap_outs, passive_swap_ins;
  int64_t bytes_d2h, bytes_h2d;
  int64_t stalls, stall_ns;
  int64_t uses_while_off_device;
  int64_t allocation_failures, early_releases, ooms;
  int64_t cancelled_swap_outs, copy_errors;
  int64_t items_matched, items_missed;
  /* RECOMPUTE items (runtime.h SwapCounts): blocks dropped, tensors
   * rematerialised at their swap-in anchor, items run as SWAP because the
   * framework could not recompute the tensor. */
  int64_t policy_drops, policy_recomputes, recompute_fallbacks_to_swap;
} swapplan_rt_counts;

typedef struct swapplan_rt_stats {
  uint32_t struct_size;
  int32_t iterations;
  int32_t stage;
  int32_t live_tensors;
  int64_t device_budget_bytes;
  int64_t device_bytes_in_use;
  int64_t peak_device_bytes;
  int32_t policies_loaded;
  int32_t active_policy;
  int64_t pinned_reserved_bytes;
  int64_t pinned_peak_in_use_bytes;
  int64_t pinned_host_allocs;
  int32_t max_inflight_copies_seen;
  swapplan_rt_counts counts;
  /* ABI 3: iterations that ran another input's policy, returns to Stable on
   * a remembered sequence, policy keys (input signatures) of the current
   * sequence. */
  int32_t policy_of_other_input;
  int32_t known_sequence_returns;
  int32_t policy_keys;
} swapplan_rt_stats;

typedef struct swapplan_rt_iteration_stats {
  uint32_t struct_size;
  int32_t iteration;
  int32_t stage;
  int32_t policy; /* -1: none */
  int32_t ops;
  int64_t wall_ns;
  int64_t peak_bytes;
  int32_t fingerprint_matched;
  int32_t first_divergent_op;
  int32_t sequence_stable;
  int32_t next_stage;
  int32_t generated_policy;
  swapplan_rt_counts counts;
  /* ABI 3: the iteration's input signature (its policy key) and whether the
   * policy that ran was made for another one. */
  uint64_t input_signature_hash;
  int64_t input_signature_bytes;
  int32_t policy_of_other_input;
} swapplan_rt_iteration_stats;

/* Framework-owned storage (swapplan_rt_tensor_register). Each returns 0 on
 * success, anything else on failure. */
typedef struct swapplan_rt_framework {
  uint32_t struct_size;
  void* user;
  /* Keep the storage alive: a copy is about to read or write it. Non-zero
   * when the storage is gone (freed, its free not reported yet): it is then
   * never a passive-swap victim. */
  int32_t (*hold)(void* user, uint64_t framework_id);
  /* Drop the hold; with free_memory, free the storage's memory first. 3: the
   * framework cannot free this storage (the hold is dropped; the tensor then
   * stays on the device for good). */
  int32_t (*release)(void* user, uint64_t framework_id, int32_t free_memory);
  /* Allocate the storage again (size_bytes), hold it, return its address.
   * SWAPPLAN_RT_OUT_OF_MEMORY (3): the framework's allocator had no block
   * (a CUDA out-of-memory error with the budget not reached: fragmentation,
   * memory outside the runtime); the runtime swaps out that many bytes
   * beyond its ledger (Algorithm 3) and calls restore once more, then fails
   * the call with SWAPPLAN_RT_OUT_OF_MEMORY. */
  int32_t (*restore)(void* user, uint64_t framework_id, int64_t size_bytes, void** device);
  /* Recomputation (policy RECOMPUTE items; optional, both or neither; a
   * framework struct that ends before them, struct_size =
   * offsetof(swapplan_rt_framework, can_recompute), is accepted and runs
   * every RECOMPUTE item as a SWAP). can_recompute: 1 when the framework can
   * re-run the op that produced the tensor from inputs it still holds, 0
   * otherwise (asked before anything is dropped: 0 runs the item as a SWAP).
   * recompute: re-run it and write the result into the storage at `device`
   * (already restored / allocated), in compute-stream order; non-zero: the
   * tensor stays off the device and the entry point fails
   * (SWAPPLAN_RT_UNAVAILABLE). */
  int32_t (*can_recompute)(void* user, uint64_t framework_id);
  int32_t (*recompute)(void* user, uint64_t framework_id, void* device);
  /* 1: recompute re-runs an op that draws random numbers with the generator
   * state it had when it first ran (as torch.utils.checkpoint stashes and
   * restores it), so its result is bit-identical; 0 (or a struct that ends
   * before this field): it does not. With the recompute callbacks set and
   * 1 here, the execution record (swapplan_rt_write_record, the policy
   * provider's record) carries the trace attribute rng_state_restorable =
   * "true", and planners may recompute the outputs of random ops. Ignored
   * without the recompute callbacks. */
  int32_t rng_state_restorable;
  /* ABI 5, optional (NULL: 0): the most bytes recompute(framework_id) will
   * hold at once besides the tensor's own storage (an output computed aside
   * and copied in, the other outputs of a multi-output op, inputs that are
   * themselves off the device and recomputed on the way), given what is
   * resident now. The runtime makes room for them before the call (as for
   * an allocation: Algorithm 3, never evicting the tensor itself) and counts
   * them as device memory while it runs, so that its budget and peak are
   * what a device allocator sees. Asked again after making room, since an
   * eviction may add an input to recompute (at most 4 rounds). Negative: an
   * error (the recomputation is not started). */
  int64_t (*recompute_workspace_bytes)(void* user, uint64_t framework_id);
  /* ABI 5, optional (NULL, or a struct that ends before it: the backend
   * copies framework storages from and to the registered address). Set: the
   * runtime still decides every swap (stage machine, policy, Algorithm 3,
   * the budget's ledger) but the framework moves the bytes of its storages,
   * on streams of its own, and the backend copies none of them (no pinned
   * host memory, no transfer queue, no host wait for them). The registered
   * address is then only an identity. The calls for one tensor, in order:
   *   COPY_OUT      after the op that made (or last wrote) it: start the copy
   *                 to host memory, ordered after that op's work;
   *   release(1)    (the hold callback's release with free_memory) free the
   *                 device memory after that copy, in stream order;
   *   restore       allocate it again (for the consumer: the current stream);
   *   COPY_IN       start the copy back into it, ordered after the
   *                 allocation; the host copy may go once that copy is done;
   *   COPY_WAIT     before its first use (and before an op may write a
   *                 tensor whose COPY_OUT is under way): the current stream
   *                 waits for the tensor's last copy;
   *   COPY_DISCARD  a COPY_OUT that will not be released (the tensor was
   *                 written, came back before its release, or was freed; also
   *                 a freed tensor off the device): the current stream waits
   *                 for that copy and the host copy is freed.
   * `bytes` is the tensor's size (COPY_OUT, COPY_IN), 0 otherwise. Returns 0;
   * non-zero fails the entry point (SWAPPLAN_RT_UNAVAILABLE), the tensor
   * keeping its bytes where they were. Never a host synchronisation: every
   * order above is a stream order (docs/runtime-torch.md "CUDA"). */
  int32_t (*copy)(void* user, uint64_t framework_id, int32_t action, int64_t bytes);
} swapplan_rt_framework;

typedef struct swapplan_rt_policy_request {
  const char* record_path; /* a trace written by the runtime */
  int32_t iteration;       /* the iteration of it to plan */
  int32_t runtime_iteration;
  int64_t device_budget_bytes;
  const char* work_dir;
  /* ABI 3: the iteration's input signature (its policy key; 0 / 0 with
   * policies_by_input 0) and the records of the iterations observed with
   * that key, oldest first, the last one record_path (observed_records of
   * them with PLANNING_OBSERVED, one with PLANNING_ITERATION); each a
   * one-iteration trace. Valid during the call only. */
  uint64_t input_signature_hash;
  int64_t input_signature_bytes;
  const char* const* observed_record_paths;
  size_t num_observed_records;
} swapplan_rt_policy_request;

/* Writes the path of a policy file into policy_path (capacity bytes,
 * NUL-terminated; "" = no policy this time) and returns 0; or returns
 * non-zero with an error message in policy_path. */
typedef int32_t (*swapplan_rt_policy_provider)(void* user,
                                               const swapplan_rt_policy_request* request,
                                               char* policy_path, size_t capacity);

/* --- library --- */
SWAPPLAN_RT_API int32_t swapplan_rt_abi_version(void);
SWAPPLAN_RT_API const char* swapplan_rt_last_error(void);
SWAPPLAN_RT_API const char* swapplan_rt_status_name(int32_t status);
/* Defaults: backend FROM_ENV, 1 GiB, 10 GB/s both ways, 10 us latency, 2
 * engines, inline compute, timed copies, fuzzy matcher (window 4, 32 bits),
 * m = 2, n = 5, Algorithm 3 in all stages, 8 copies in flight per lane, 64
 * MiB pinned blocks, work_dir NULL, vendor_library NULL, device 0, no event
 * cap; policies by input, PLANNING_OBSERVED on 8 records, 4 sequences
 * remembered (RuntimeOptions' defaults). */
SWAPPLAN_RT_API void swapplan_rt_options_init(swapplan_rt_options* options);

/* --- seed 004 --- */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_create_swap_env(const swapplan_rt_options* options,
                                                               swapplan_rt_env** env);
/* Brings every tensor back (framework ones into restored storage), waits
 * for all copies and frees the environment (even when it reports an
 * error). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_close_swap_env(swapplan_rt_env* env);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_pageout_manual(swapplan_rt_env* env,
                                                              swapplan_rt_tensor tensor);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_need_prefetch(swapplan_rt_env* env,
                                                             swapplan_rt_tensor tensor);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_prefetch_init(swapplan_rt_env* env);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_before_prefetch_wait_all(swapplan_rt_env* env);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_prefetch_all(swapplan_rt_env* env);

/* --- framework, policies --- */
/* The stream the framework computes on: CUDA a cudaStream_t (PyTorch:
 * torch.cuda.current_stream().cuda_stream), Ascend an aclrtStream; NULL = the
 * backend's default (the legacy default stream; ACL's default stream). The
 * host backend accepts only NULL. Used from the next call on: call it again
 * whenever the framework's current stream changes (never cache a stream). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_set_compute_stream(swapplan_rt_env* env,
                                                                  void* stream);
/* The backend the environment runs on (SWAPPLAN_RT_BACKEND_HOST/CUDA/ASCEND). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_get_backend(swapplan_rt_env* env,
                                                           int32_t* backend);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_set_framework(swapplan_rt_env* env,
                                                             const swapplan_rt_framework* fw);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_set_policy_provider(
    swapplan_rt_env* env, swapplan_rt_policy_provider provider, void* user);
/* A policy file in the binary form (read now). With trace_path NULL the
 * policy must be self-contained (schema v2: every planner writes its runtime
 * section; `swapplan policy upgrade` adds one); otherwise it is prepared for
 * iteration `iteration` of that trace (the JSON trace form). Runs every
 * iteration from the next iteration_begin on. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_load_policy(swapplan_rt_env* env,
                                                           const char* policy_path,
                                                           const char* trace_path,
                                                           int32_t iteration);
/* Stops applying a loaded policy (the stage machine decides again). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_clear_policy(swapplan_rt_env* env);

/* --- tensors --- */
/* A framework-owned tensor at `device`, already allocated by the framework. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_tensor_register(
    swapplan_rt_env* env, uint64_t framework_id, void* device, int64_t size_bytes, int32_t dtype,
    const int64_t* shape, int32_t ndim, int32_t kind, int32_t persistent,
    swapplan_rt_tensor* tensor);
/* A runtime-owned tensor: the runtime allocates its device block. persistent:
 * -1 the kind's default, 0 no, 1 yes. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_tensor_alloc(
    swapplan_rt_env* env, int64_t size_bytes, int32_t dtype, const int64_t* shape, int32_t ndim,
    int32_t kind, int32_t persistent, swapplan_rt_tensor* tensor, void** device);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_tensor_free(swapplan_rt_env* env,
                                                           swapplan_rt_tensor tensor);
/* Device address of a resident tensor (SWAPPLAN_RT_CALL_ORDER when off). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_tensor_data(swapplan_rt_env* env,
                                                           swapplan_rt_tensor tensor,
                                                           void** device);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_tensor_resident(swapplan_rt_env* env,
                                                               swapplan_rt_tensor tensor,
                                                               int32_t* resident);

/* --- per op --- */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_intern_op(swapplan_rt_env* env, const char* name,
                                                         int32_t* op);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_iteration_begin(swapplan_rt_env* env);
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_iteration_end(swapplan_rt_env* env);
/* Before the op runs: its inputs (and tensors it will write) are resident
 * when this returns OK. On failure the op must not run and op_end is not
 * called (the op still counts on the clock). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_op_begin(swapplan_rt_env* env, int32_t op,
                                                        int32_t phase,
                                                        const swapplan_rt_tensor* inputs,
                                                        size_t num_inputs);
/* Between op_begin and the kernel: the op is about to allocate `bytes` (its
 * new outputs, as the framework predicts them). When they would not fit,
 * Algorithm 3 makes room now, so that the allocation never crosses the
 * budget; the bytes are not taken (the registrations after the kernel take
 * them). OUT_OF_MEMORY when no room can be made (the op must not run; call
 * op_end with no outputs); with overcommit_on_oom, OK (the registration
 * takes the bytes over the budget and counts the OOM once). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_op_reserve(swapplan_rt_env* env, int64_t bytes);
/* After it ran: the tensors it created or wrote. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_op_end(swapplan_rt_env* env,
                                                      const swapplan_rt_tensor* outputs,
                                                      size_t num_outputs);

/* --- results --- */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_get_stats(swapplan_rt_env* env,
                                                         swapplan_rt_stats* stats);
/* Iteration `index` (0 .. stats.iterations - 1). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_get_iteration_stats(
    swapplan_rt_env* env, int32_t index, swapplan_rt_iteration_stats* stats);
/* Why no policy was generated at the end of iteration `index` ("" if one
 * was, or none was asked for). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_get_plan_error(swapplan_rt_env* env,
                                                              int32_t index, char* message,
                                                              size_t capacity);
/* The execution record (every iteration with keep_record, else the last
 * ones) as a trace file: JSON for *.json and *.json.gz, the binary form for
 * any other name (run.trace); gzip-compressed for *.gz. UNAVAILABLE when the
 * file cannot be written. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_write_record(swapplan_rt_env* env,
                                                            const char* path);

/* --- the saved-tensor clock --- */
/* Its rule (swapplan/policy/saved_tensor_clock.h SnapSavedWindow, the one
 * the simulator's --clock saved-tensors uses): event_positions[num_events]
 * are the ops completed when each autograd saved-tensor event fired
 * (non-decreasing), first_pack_event the index of the tensor's first pack,
 * release_position and restore_position the per-op clock's (ops completed
 * at the release and at the restore). Writes the events the hook clock
 * acts at, or -1 and -1 when the item stays resident. Needs no env.
 * INVALID_ARGUMENT for null pointers, a negative count or a first pack
 * event out of range. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_snap_saved_window(
    const int32_t* event_positions, int64_t num_events, int32_t first_pack_event,
    int32_t release_position, int32_t restore_position, int32_t* release_event,
    int32_t* restore_event);
/* An autograd saved-tensor event of the open iteration — a pack (unpack 0)
 * or an unpack (1) — after the ops it has completed, for the execution
 * record (its trace's saved_tensor_events: `swapplan simulate --clock
 * saved-tensors` on a record); `tensor` the saved storage's handle, 0 when
 * the runtime does not hold it. Marks the iteration's events as recorded;
 * ignored between iterations. INVALID_ARGUMENT for a stale handle. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_saved_tensor_event(swapplan_rt_env* env,
                                                                  int32_t unpack,
                                                                  swapplan_rt_tensor tensor);
/* The open iteration's saved-tensor events are watched: recorded as such
 * also when none fires. */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_saved_tensor_events_recorded(swapplan_rt_env* env);

/* --- host backend, for tests --- */
/* direction: SWAPPLAN_RT_D2H, _H2D or -1 (any). See host_backend.h FaultSpec.
 * Host backend only (the fake vendor runtimes of the tests inject their own). */
SWAPPLAN_RT_API swapplan_rt_status swapplan_rt_inject_fault(swapplan_rt_env* env, int32_t kind,
                                                            int32_t direction, int32_t skip,
                                                            int32_t count, double slow_factor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWAPPLAN_RUNTIME_SWAPPLAN_RUNTIME_H_ */
