"""ctypes bindings of libswapplan_runtime.so (include/swapplan/runtime/
swapplan_runtime.h): the structs, the prototypes, and errors turned into
exceptions.

The library is found, in order, at $SWAPPLAN_RUNTIME_LIB, next to the
installed package (swapplan/libswapplan_runtime.so: `pip install .` puts it
there), in the build tree of the checkout this package lives in
(build/src/libswapplan_runtime.so), or by the system's loader
(ctypes.util.find_library("swapplan_runtime"), e.g. after `meson install`).

Calls release the GIL (ctypes.CDLL); the library calls back into Python (the
framework callbacks, the policy provider) on the calling thread only, and
ctypes takes the GIL back for them.
"""

import ctypes
import ctypes.util
import os

ABI_VERSION = 5

OK = 0
INVALID_ARGUMENT = 1
CALL_ORDER = 2
OUT_OF_MEMORY = 3
COPY_FAILED = 4
NOT_FOUND = 5
MALFORMED_INPUT = 6
UNAVAILABLE = 7
INTERNAL = 8

PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZER, PHASE_OTHER = 0, 1, 2, 3
STAGES = ("WarmUp", "GenPolicy", "Stable")
KIND_OTHER, KIND_PARAMETER, KIND_GRADIENT, KIND_OPTIMIZER_STATE = 0, 1, 2, 3
KIND_ACTIVATION, KIND_INPUT, KIND_TEMPORARY = 4, 5, 6
MATCHER_FUZZY, MATCHER_NAIVE = 0, 1
BACKEND_FROM_ENV, BACKEND_HOST, BACKEND_CUDA, BACKEND_ASCEND = -1, 0, 1, 2
FAULT_COPY_ERROR, FAULT_ALLOC_FAILURE, FAULT_SLOW_COPY = 0, 1, 2
D2H, H2D = 0, 1
PLANNING_OBSERVED, PLANNING_ITERATION = 0, 1
COPY_OUT, COPY_IN, COPY_WAIT, COPY_DISCARD = 0, 1, 2, 3


class SwapRuntimeError(RuntimeError):
    """A call into the runtime failed; `code` is the swapplan_rt_status."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class SwapOutOfMemory(SwapRuntimeError):
    """The device budget: Algorithm 3 could not make room."""


class SwapCopyFailed(SwapRuntimeError):
    """A swap copy failed; the tensor kept its bytes (device or host)."""


_ERRORS = {OUT_OF_MEMORY: SwapOutOfMemory, COPY_FAILED: SwapCopyFailed}


class Options(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("backend", ctypes.c_int32),
        ("device_memory_bytes", ctypes.c_int64),
        ("h2d_bandwidth_bytes_per_s", ctypes.c_double),
        ("d2h_bandwidth_bytes_per_s", ctypes.c_double),
        ("copy_latency_ns", ctypes.c_int64),
        ("copy_engines", ctypes.c_int32),
        ("compute_stream", ctypes.c_int32),
        ("timed_copies", ctypes.c_int32),
        ("matcher", ctypes.c_int32),
        ("matcher_window_ops", ctypes.c_int32),
        ("runtime_key_bits", ctypes.c_int32),
        ("warmup_iterations", ctypes.c_int32),
        ("genpolicy_iterations", ctypes.c_int32),
        ("oom_handling", ctypes.c_int32),
        ("overcommit_on_oom", ctypes.c_int32),
        ("strict_fingerprint", ctypes.c_int32),
        ("max_inflight_copies", ctypes.c_int32),
        ("pinned_block_bytes", ctypes.c_int64),
        ("keep_record", ctypes.c_int32),
        ("work_dir", ctypes.c_char_p),
        ("vendor_library", ctypes.c_char_p),
        ("device_index", ctypes.c_int32),
        ("max_events", ctypes.c_int32),
        ("policies_by_input", ctypes.c_int32),
        ("planning", ctypes.c_int32),
        ("observed_records", ctypes.c_int32),
        ("remembered_sequences", ctypes.c_int32),
    ]


_COUNT_FIELDS = (
    "policy_swap_outs", "policy_swap_ins", "manual_swap_outs", "manual_swap_ins",
    "passive_swap_outs", "passive_swap_ins", "bytes_d2h", "bytes_h2d", "stalls", "stall_ns",
    "uses_while_off_device", "allocation_failures", "early_releases", "ooms",
    "cancelled_swap_outs", "copy_errors", "items_matched", "items_missed",
    "policy_drops", "policy_recomputes", "recompute_fallbacks_to_swap")


class Counts(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in _COUNT_FIELDS]

    def to_dict(self):
        return {name: getattr(self, name) for name in _COUNT_FIELDS}


class Stats(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("iterations", ctypes.c_int32),
        ("stage", ctypes.c_int32),
        ("live_tensors", ctypes.c_int32),
        ("device_budget_bytes", ctypes.c_int64),
        ("device_bytes_in_use", ctypes.c_int64),
        ("peak_device_bytes", ctypes.c_int64),
        ("policies_loaded", ctypes.c_int32),
        ("active_policy", ctypes.c_int32),
        ("pinned_reserved_bytes", ctypes.c_int64),
        ("pinned_peak_in_use_bytes", ctypes.c_int64),
        ("pinned_host_allocs", ctypes.c_int64),
        ("max_inflight_copies_seen", ctypes.c_int32),
        ("counts", Counts),
        ("policy_of_other_input", ctypes.c_int32),
        ("known_sequence_returns", ctypes.c_int32),
        ("policy_keys", ctypes.c_int32),
    ]


class IterationStats(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("iteration", ctypes.c_int32),
        ("stage", ctypes.c_int32),
        ("policy", ctypes.c_int32),
        ("ops", ctypes.c_int32),
        ("wall_ns", ctypes.c_int64),
        ("peak_bytes", ctypes.c_int64),
        ("fingerprint_matched", ctypes.c_int32),
        ("first_divergent_op", ctypes.c_int32),
        ("sequence_stable", ctypes.c_int32),
        ("next_stage", ctypes.c_int32),
        ("generated_policy", ctypes.c_int32),
        ("counts", Counts),
        ("input_signature_hash", ctypes.c_uint64),
        ("input_signature_bytes", ctypes.c_int64),
        ("policy_of_other_input", ctypes.c_int32),
    ]


HOLD_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64)
RELEASE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int32)
RESTORE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64,
                              ctypes.POINTER(ctypes.c_void_p))
CAN_RECOMPUTE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64)
RECOMPUTE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p)
WORKSPACE_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64)
COPY_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int32,
                           ctypes.c_int64)


class Framework(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("user", ctypes.c_void_p),
        ("hold", HOLD_FN),
        ("release", RELEASE_FN),
        ("restore", RESTORE_FN),
        ("can_recompute", CAN_RECOMPUTE_FN),
        ("recompute", RECOMPUTE_FN),
        # 1: recompute restores the generator state of random ops (the
        # execution record then says rng_state_restorable, swapplan_runtime.h).
        ("rng_state_restorable", ctypes.c_int32),
        # ABI 5: the bytes a recomputation holds besides the tensor's own
        # (the runtime makes room for them and counts them while it runs).
        ("recompute_workspace_bytes", WORKSPACE_FN),
        # ABI 5: the framework moves its storages' bytes (CUDA: CudaSwapper);
        # NULL: the backend copies.
        ("copy", COPY_FN),
    ]


class PolicyRequest(ctypes.Structure):
    _fields_ = [
        ("record_path", ctypes.c_char_p),
        ("iteration", ctypes.c_int32),
        ("runtime_iteration", ctypes.c_int32),
        ("device_budget_bytes", ctypes.c_int64),
        ("work_dir", ctypes.c_char_p),
        ("input_signature_hash", ctypes.c_uint64),
        ("input_signature_bytes", ctypes.c_int64),
        ("observed_record_paths", ctypes.POINTER(ctypes.c_char_p)),
        ("num_observed_records", ctypes.c_size_t),
    ]


PROVIDER_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(PolicyRequest),
                               ctypes.c_void_p, ctypes.c_size_t)

_ENV = ctypes.c_void_p
_T = ctypes.c_uint64
_S = ctypes.c_int32

_PROTOTYPES = {
    "swapplan_rt_abi_version": (ctypes.c_int32, []),
    "swapplan_rt_last_error": (ctypes.c_char_p, []),
    "swapplan_rt_options_init": (None, [ctypes.POINTER(Options)]),
    "swapplan_rt_create_swap_env": (_S, [ctypes.POINTER(Options), ctypes.POINTER(_ENV)]),
    "swapplan_rt_close_swap_env": (_S, [_ENV]),
    "swapplan_rt_pageout_manual": (_S, [_ENV, _T]),
    "swapplan_rt_need_prefetch": (_S, [_ENV, _T]),
    "swapplan_rt_prefetch_init": (_S, [_ENV]),
    "swapplan_rt_before_prefetch_wait_all": (_S, [_ENV]),
    "swapplan_rt_prefetch_all": (_S, [_ENV]),
    "swapplan_rt_set_framework": (_S, [_ENV, ctypes.POINTER(Framework)]),
    "swapplan_rt_get_backend": (_S, [_ENV, ctypes.POINTER(ctypes.c_int32)]),
    "swapplan_rt_set_policy_provider": (_S, [_ENV, PROVIDER_FN, ctypes.c_void_p]),
    "swapplan_rt_load_policy": (_S, [_ENV, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32]),
    "swapplan_rt_clear_policy": (_S, [_ENV]),
    "swapplan_rt_tensor_register": (_S, [_ENV, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int64,
                                         ctypes.c_int32, ctypes.POINTER(ctypes.c_int64),
                                         ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                         ctypes.POINTER(_T)]),
    "swapplan_rt_tensor_free": (_S, [_ENV, _T]),
    "swapplan_rt_tensor_resident": (_S, [_ENV, _T, ctypes.POINTER(ctypes.c_int32)]),
    "swapplan_rt_intern_op": (_S, [_ENV, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int32)]),
    "swapplan_rt_iteration_begin": (_S, [_ENV]),
    "swapplan_rt_iteration_end": (_S, [_ENV]),
    "swapplan_rt_op_begin": (_S, [_ENV, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(_T),
                                  ctypes.c_size_t]),
    "swapplan_rt_op_reserve": (_S, [_ENV, ctypes.c_int64]),
    "swapplan_rt_op_end": (_S, [_ENV, ctypes.POINTER(_T), ctypes.c_size_t]),
    "swapplan_rt_get_stats": (_S, [_ENV, ctypes.POINTER(Stats)]),
    "swapplan_rt_get_iteration_stats": (_S, [_ENV, ctypes.c_int32,
                                             ctypes.POINTER(IterationStats)]),
    "swapplan_rt_get_plan_error": (_S, [_ENV, ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t]),
    "swapplan_rt_write_record": (_S, [_ENV, ctypes.c_char_p]),
    "swapplan_rt_inject_fault": (_S, [_ENV, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                      ctypes.c_int32, ctypes.c_double]),
    "swapplan_rt_saved_tensor_event": (_S, [_ENV, ctypes.c_int32, _T]),
    "swapplan_rt_saved_tensor_events_recorded": (_S, [_ENV]),
    "swapplan_rt_snap_saved_window": (_S, [ctypes.POINTER(ctypes.c_int32), ctypes.c_int64,
                                           ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                           ctypes.POINTER(ctypes.c_int32),
                                           ctypes.POINTER(ctypes.c_int32)]),
}

_LIB = None


def library_path():
    """Where the library is looked for first (None: the system's loader)."""
    env = os.environ.get("SWAPPLAN_RUNTIME_LIB")
    if env:
        return env
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../swapplan
    for candidate in (os.path.join(package, "libswapplan_runtime.so"),
                      os.path.join(package, "..", "..", "build", "src",
                                   "libswapplan_runtime.so")):
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    return ctypes.util.find_library("swapplan_runtime")


def load():
    """The loaded library, its prototypes declared. OSError when it cannot be
    found or is of another ABI."""
    global _LIB
    if _LIB is not None:
        return _LIB
    path = library_path()
    if not path:
        raise OSError("libswapplan_runtime.so not found: build it (meson setup build && ninja -C "
                      "build) or set SWAPPLAN_RUNTIME_LIB")
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    if lib.swapplan_rt_abi_version() != ABI_VERSION:
        raise OSError("%s has ABI version %d; this package speaks %d"
                      % (path, lib.swapplan_rt_abi_version(), ABI_VERSION))
    _LIB = lib
    return lib


def error(lib, code, what):
    """The exception for a failed call `what` with status `code`."""
    message = lib.swapplan_rt_last_error().decode("utf-8", "replace")
    return _ERRORS.get(code, SwapRuntimeError)(code, "%s: %s" % (what, message))


def check(lib, code, what):
    if code != OK:
        raise error(lib, code, what)
