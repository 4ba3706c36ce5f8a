"""SwapRuntime: the swapplan runtime shim around an unmodified PyTorch
training loop.

    from swapplan.runtime import SwapRuntime

    with SwapRuntime(device_memory="6GiB", model=model, optimizer=opt,
                     record="run.trace") as rt:   # or run.json(.gz)
        for x, y in batches:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()                       # ends the iteration (or rt.step())
    print(rt.stats)

What it does (see docs/runtime.md):

* Op clock. A TorchDispatchMode sees every ATen op below autograd (forward,
  backward and optimizer ops alike): before an op it hands the runtime the
  op's tensors (swapplan_rt_op_begin: every input is on the "device" when it
  returns — a prefetched one waited for, one off the device brought back at
  the head of the queue), after it the tensors the op created or wrote
  (swapplan_rt_op_end: runtime keys, policy swap-outs, releases). Phases come
  from the model's hooks, the autograd engine and optimizer.step()
  (swapplan.recorder's PhaseTracker); iterations end at optimizer.step() (or
  rt.step()).
* Tensors are storages (views share one), seen alive through a weak
  reference on each StorageImpl (swapplan.recorder's StorageTracker): new
  storages are registered with their exact bytes, dead ones freed.
* "Device memory" on the CPU: PyTorch's CPU allocator owns the bytes; the
  runtime counts every storage on the device against the budget
  (`device_memory`, the host backend's capacity) in exact bytes, as a device
  allocator would: the model's and optimizer's tensors from __enter__,
  every other storage from its creation or first use by an op (made before
  __enter__: counted as it is first used, stats["discovered_*"]). The bytes
  an op will allocate are predicted before its kernel (_predict.py: a meta
  evaluation once per op signature) and room is made for them first
  (swapplan_rt_op_reserve: Algorithm 3 before the allocation, never after
  it crossed the budget). A swap is real: the bytes are copied into the
  runtime's pinned host pool on a copy stream (timed at the configured
  bandwidth), the storage is freed with ``storage.resize_(0)`` once the copy
  is done (the runtime's release point), and re-allocated with
  ``storage.resize_(nbytes)`` and filled back before any op touches it.
  Losses are bit-identical. swapplan.testing.residency measures all of this
  from outside (docs/runtime-torch.md).
* Misuse (docs/runtime-torch.md): rt.step() right after opt.step() ends
  nothing; iterations that never repeat an op sequence warn.
* The policy: given (``policy="p.pb"``, a self-contained binary policy) it
  runs every iteration; otherwise the runtime's stage machine asks a
  provider at GenPolicy — by default ``swapplan plan`` on the runtime's
  record of the iteration (provider.py).

Limits: a tensor read past the dispatcher (``.numpy()``, ``data_ptr()``, a
C++ extension) while swapped out sees an empty storage. The op clock is a
dispatch mode; with stable_clock="hooks" (the default with model= on
PyTorch >= 2.0) it runs from the root forward on, and a Stable iteration
that replays within the budget runs on autograd's saved-tensor events
instead (_hookclock.py). Tested with PyTorch 1.13 and 2.13 (CPU).
"""

import ctypes
import gc
import os
import shutil
import tempfile
import warnings

import torch

from .. import _torch_compat as C
from ..recorder import _model as M
from ..recorder._hooks import PhaseTracker
from ..recorder._lifetimes import StorageTracker

from . import _lib as L
from . import _recompute as R
from ._callbacks import Callbacks
from . import _cuda as K
from ._clock_switch import ClockSwitch
from ._compiled import CompiledRegions
from . import _hookclock as H
from ._cuda_mode import CudaMode
from ._results import Results
from ._predict import OutputBytes
from .._units import parse_bandwidth, parse_bytes, parse_duration_ns
from .provider import SwapplanPlanProvider

_DTYPES = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.float64: 4,
           torch.int64: 5, torch.int32: 6, torch.int16: 7, torch.int8: 8, torch.uint8: 9,
           torch.bool: 10, torch.complex64: 13}
_Tensor = torch.Tensor
_storage_id = C.storage_id
_MAX_USES = 4096
_BACKWARD = M.BACKWARD


class _Member:
    """What the storage tracker keeps per live storage."""
    __slots__ = ("size", "free_op", "handle", "ptr", "writes", "stream")

    def __init__(self, size, handle, ptr, stream):
        self.size = size
        self.free_op = None
        self.handle = handle
        self.ptr = ptr
        self.writes = 0  # ops that wrote it since it was registered (recipes)
        self.stream = stream  # device="cuda": the stream of its last write


class _Tracker(StorageTracker):
    """The recorder's storage tracker; a dead storage is freed in the runtime."""

    def __init__(self, on_free):
        super().__init__(poll_every_op=False, full_poll_interval_ops=256)
        self._on_free = on_free
        self.forget = []  # sid -> None per entry: the storage died (its recipe goes)

    def _free(self, sid, last_op):
        m = super()._free(sid, last_op)
        for forget in self.forget:
            forget(sid)
        self._on_free(m)
        return m


class _Mode(C.TorchDispatchMode):
    def __init__(self, runtime):
        super().__init__()
        self.runtime = runtime

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.runtime._dispatch(func, args, kwargs or {})


class SwapRuntime(Callbacks, ClockSwitch, CudaMode, Results):
    """The runtime shim around a training loop (module docstring).

    Args:
      policy: a binary policy file (self-contained, schema v2) to run every
        iteration; None: the stage machine and `provider` decide.
      device_memory: the device budget ("6GiB", bytes as an int).
      model, optimizer: the root module (phases: its forward) and the
        optimizer(s) (phase OPTIMIZER; their step() ends an iteration unless
        auto_step=False). Their parameters, buffers and states are registered
        as resident, never swapped.
      record: write what ran as a swapplan trace on exit, in the form its
        name asks for (as `swapplan` writes traces): JSON for *.json and
        *.json.gz, the binary form for any other name (run.trace,
        run.trace.gz); gzip-compressed for *.gz.
      keys: "fuzzy" (runtime keys, default) or "naive" (op ordinal, i-th
        tensor) matching of policy items.
      h2d_bandwidth, d2h_bandwidth, copy_latency: the host backend's copy
        model ("8GB/s", "10us").
      warmup_iterations, genpolicy_iterations: Algorithm 1's m and n.
      policies_by_input: keep policies per input signature (dtypes and
        shapes of the first forward op's inputs and outputs; an input never
        planned for runs the nearest one's policy by bytes, larger first,
        counted in stats["policy_of_other_input"]); False: one policy key
        for every input (the papers').
      planning: "observed" (the provider gets the key's last
        `observed_records` records, the iteration entering Stable is planned
        too and Stable runs each key's latest policy) or "iteration" (the
        papers': the provider gets the iteration just run, Stable runs each
        key's best GenPolicy policy). docs/runtime.md "Stages and providers".
      observed_records: records per request with "observed" planning (>= 1).
      remembered_sequences: policy sets of op sequences the run left that
        are kept; an iteration stable against one goes straight back to
        Stable (stats["known_sequence_returns"]). 0: forget on WarmUp.
      provider: "default" (swapplan plan on the record, see provider.py), a
        callable (request dict -> policy path or None), or None.
      planner_args: extra `swapplan plan` arguments for the default provider
        (`swapplan compare` arguments with another planner).
      planner: the default provider's planner ("chain", the default: GenPolicy's
        planner chain, chameleon, hybrid, hyperoffload, search, the first whose
        policy passes the checker and the runtime executes — planner_args in
        `swapplan plan`'s form go to its Chameleon; "chameleon": `swapplan
        plan`; any other name `swapplan compare --planners` takes, e.g.
        "recompute", whose RECOMPUTE items the runtime executes: docs/runtime.md
        "Recomputation").
      on_oom: "raise" (SwapOutOfMemory from the op, as a device OOM) or
        "count" (the storage is taken over the budget, the OOM counted).
      work_dir: where records and policies go (default: a temporary
        directory, removed on exit; `plans` names files in it).
      matcher_window_ops, max_inflight_copies, strict_fingerprint,
      timed_copies: runtime options (swapplan_runtime.h).
      backend: "host" only (the runtime library's backend: it copies CPU
        tensors; with device="cuda" it copies none, Python's CudaSwapper does).
      device: "cpu" (the host backend emulates the device in CPU memory) or
        "cuda" (CUDA storages; the runtime library decides, _cuda.py copies on
        side streams through pinned memory, an op's OutOfMemoryError is
        retried once after Algorithm 3: docs/runtime-torch.md "CUDA"); "cuda"
        without CUDA is a clear error.
      cuda: device="cuda" only: a _cuda.CudaDevice (None: torch.cuda with a
        64 MiB-block pinned pool; the CPU tests pass fakes).
      recipes: keep RECOMPUTE recipes (None: only where RECOMPUTE items can
        come from).
      stable_clock: "hooks" (needs model= and PyTorch >= 2.0): the per-op
        clock runs from the root module's forward to the iteration's end,
        and an input key whose Stable iteration replays within the budget on
        autograd's saved-tensor events runs without the dispatch mode from
        then on (_hookclock.py; docs/runtime-torch.md "The op clock and its
        cost"); "dispatch": the per-op mode in every stage and every op;
        "auto" (the default): "hooks" where it can run and no fixed policy=
        is given (its trace must have the hooks' op sequence: docs/runtime-
        torch.md), else "dispatch" (rt.stable_clock says which).
    """

    _mode_class = _Mode

    def __init__(self, policy=None, *, device_memory, model=None, optimizer=None, record=None,
                 keys="fuzzy", h2d_bandwidth="10GB/s", d2h_bandwidth="10GB/s",
                 copy_latency="10us", warmup_iterations=2, genpolicy_iterations=5,
                 policies_by_input=True, planning="observed", observed_records=8,
                 remembered_sequences=4,
                 provider="default", planner_args=(), on_oom="raise", work_dir=None,
                 swapplan_binary=None, matcher_window_ops=4, max_inflight_copies=8,
                 strict_fingerprint=False, timed_copies=True, auto_step=True,
                 backend="host", planner="chain", device="cpu", predict_allocations=True,
                 warn_unrepeated_after=16, recipes=None, cuda=None, stable_clock="auto"):
        self._init_device(device, cuda)
        if stable_clock not in ("auto", "dispatch", "hooks"):
            raise ValueError("stable_clock must be 'auto', 'dispatch' or 'hooks', got %r"
                             % (stable_clock,))
        if stable_clock == "auto":
            # The hooks add an aten::detach per saved output unpacked: a fixed
            # policy's trace may not have them, so it runs per-op unless asked.
            stable_clock = "hooks" if (model is not None and policy is None and
                                       C.torch_version() >= (2, 0)) else "dispatch"

        if stable_clock == "hooks" and C.torch_version() < (2, 0):
            raise ValueError("stable_clock='hooks' needs PyTorch >= 2.0 (this is %s): 1.13's "
                             "autograd fails under saved-tensor hooks while a dispatch mode is "
                             "active (\"detach returned invalid type float\" for a saved "
                             "Python scalar); use stable_clock='dispatch'" % torch.__version__)
        if stable_clock == "hooks" and model is None:
            raise ValueError("stable_clock='hooks' needs model=: an iteration's saved-tensor "
                             "clock starts at the root module's forward")
        self.stable_clock = stable_clock
        self._hookclock = None if stable_clock == "dispatch" else (
            H.HookClock(H.HostCopies()) if self._cuda is None else H.HookClock(
                H.CudaCopies(self._cuda.swapper), same_stream=lambda sid: (
                    self._stream_of(sid) in (None, self._cuda.cuda.current_stream()))))
        self._compiled = CompiledRegions()
        if backend != "host":
            raise ValueError("backend must be 'host' (the PyTorch integration swaps CPU tensors "
                             "on the host backend; CUDA and Ascend run through the C API only), "
                             "got %r" % (backend,))
        if keys not in ("fuzzy", "naive"):
            raise ValueError("keys must be 'fuzzy' or 'naive', got %r" % (keys,))
        if planning not in ("observed", "iteration"):
            raise ValueError("planning must be 'observed' or 'iteration', got %r" % (planning,))
        if on_oom not in ("raise", "count"):
            raise ValueError("on_oom must be 'raise' or 'count', got %r" % (on_oom,))
        if record is not None and (not isinstance(record, (str, os.PathLike)) or
                                   not os.fspath(record) or os.fspath(record).endswith(os.sep)):
            raise ValueError("record must name a trace file (run.trace, run.trace.gz, run.json, "
                             "run.json.gz), got %r" % (record,))
        self.policy = None if policy is None else str(policy)
        self.device_memory = parse_bytes(device_memory, "device_memory")
        self.model = model
        self.optimizers = [] if optimizer is None else (
            list(optimizer) if isinstance(optimizer, (list, tuple)) else [optimizer])
        self.record = None if record is None else os.fspath(record)
        self.keys = keys
        self.on_oom = on_oom
        self.auto_step = auto_step
        self._opts = dict(
            h2d=parse_bandwidth(h2d_bandwidth, "h2d_bandwidth"),
            d2h=parse_bandwidth(d2h_bandwidth, "d2h_bandwidth"),
            latency=parse_duration_ns(copy_latency, "copy_latency"),
            m=int(warmup_iterations), n=int(genpolicy_iterations),
            by_input=bool(policies_by_input),
            planning=L.PLANNING_OBSERVED if planning == "observed" else L.PLANNING_ITERATION,
            observed=int(observed_records), remembered=int(remembered_sequences),
            window=int(matcher_window_ops), inflight=int(max_inflight_copies),
            strict=bool(strict_fingerprint), timed=bool(timed_copies))
        self._owned_work_dir = work_dir is None
        self.work_dir = str(work_dir) if work_dir is not None else None
        if provider == "default":
            provider = SwapplanPlanProvider(binary=swapplan_binary, planner_args=planner_args,
                                            planner=planner)
        self.provider = provider
        self.plans = []          # (record path, policy path) per provided policy
        self._lib = None
        self._env = None
        self._mode = None
        self._phases = PhaseTracker(model, self._after_backward, self._after_optimizer)
        self._tracker = _Tracker(self._freed)
        # RECOMPUTE items: per storage an op created, how to re-run the op
        # (_recompute.py); _new_outputs collects the op's new storages.
        self._recipes = R.Recipes(self._tracker, self._storage_of)
        # Recipes (µs per op) only where RECOMPUTE items can come from; an
        # item without one falls back to a swap (counted).
        self._recipes_on = recipes if recipes is not None else self.policy is not None or (
            provider is not None and not (isinstance(provider, SwapplanPlanProvider) and
                                          provider.planner == "chameleon"))
        self._tracker.forget.append(self._recipes.forget)
        if self._copies is not None:
            self._tracker.forget.append(self._copies.forget)
            self._recipes.rng = K.RngStates(self._cuda.cuda)
        self._new_outputs = []
        self._held = {}          # storage id -> strong reference while a copy needs it
        self._ops = {}           # op overload -> (op id, write positions, write kwargs, aliases)
        self._callback_error = None
        self._in_iteration = False
        self._paused = 0
        self._ibuf = (ctypes.c_uint64 * _MAX_USES)()
        self._obuf = (ctypes.c_uint64 * _MAX_USES)()
        self._shape = (ctypes.c_int64 * 64)()
        self._handle = ctypes.c_uint64()
        self._handle_ref = ctypes.byref(self._handle)
        self._last_stats = None
        self._last_iterations = None
        self._closed = False
        # Room before the kernel (_predict.py); None: after it (Algorithm 3
        # once the outputs are there, over the budget until it ran).
        self._predict = OutputBytes(self._dev) if predict_allocations else None
        self._op_new_bytes = 0
        self.discovered_bytes = 0    # storages made outside the block, at first use
        self.discovered_storages = 0
        # Misuse (docs/runtime-torch.md): rt.step() right after the
        # optimizer ended the iteration; iterations that never repeat.
        self._optimizer_ended = False
        self.redundant_steps = 0
        self.warn_unrepeated_after = int(warn_unrepeated_after)
        self._warmup_run = 0         # consecutive iterations in WarmUp, none Stable yet
        self._ever_stable = False
        self._iterations_seen = 0
        self.unrepeated_warning = None
        self._nops = 0               # ops this iteration (the callbacks' positions)
        self._cbpos = 0
        self._forward_hook = None
        self._forwarded = False      # the iteration's root forward ran
        self._hook_iteration = False
        self._mode_depth = None      # dispatch-mode depth with ours on top
        self._key = None
        self.step_clocks = []        # per ended iteration: "ops" (rt.iterations' rows) or "hooks"

    # ------------------------------------------------------------- context
    def __enter__(self):
        if self._env is not None or self._closed:
            raise RuntimeError("a SwapRuntime runs once; make a new one")
        lib = self._lib = L.load()
        # The per-op entry points, bound once.
        self._op_begin = lib.swapplan_rt_op_begin
        self._op_end = lib.swapplan_rt_op_end
        self._op_reserve = lib.swapplan_rt_op_reserve
        self._register_fn = lib.swapplan_rt_tensor_register
        self._free_fn = lib.swapplan_rt_tensor_free
        if self.work_dir is None:
            self.work_dir = tempfile.mkdtemp(prefix="swapplan-runtime-")
        os.makedirs(self.work_dir, exist_ok=True)
        o = L.Options()
        lib.swapplan_rt_options_init(ctypes.byref(o))
        if o.struct_size != ctypes.sizeof(o):
            raise RuntimeError("swapplan_rt_options is %d bytes in the library, %d in this package: "
                               "rebuild both from one tree" % (o.struct_size, ctypes.sizeof(o)))
        o.backend = L.BACKEND_HOST  # explicit: $SWAPPLAN_RT_BACKEND is not for this integration
        o.device_memory_bytes = self.device_memory
        o.h2d_bandwidth_bytes_per_s = self._opts["h2d"]
        o.d2h_bandwidth_bytes_per_s = self._opts["d2h"]
        o.copy_latency_ns = self._opts["latency"]
        o.timed_copies = 1 if self._opts["timed"] else 0
        o.matcher = L.MATCHER_NAIVE if self.keys == "naive" else L.MATCHER_FUZZY
        o.matcher_window_ops = self._opts["window"]
        o.warmup_iterations = self._opts["m"]
        o.genpolicy_iterations = self._opts["n"]
        o.policies_by_input = 1 if self._opts["by_input"] else 0
        o.planning = self._opts["planning"]
        o.observed_records = self._opts["observed"]
        o.remembered_sequences = self._opts["remembered"]
        o.overcommit_on_oom = 1 if self.on_oom == "count" else 0
        o.strict_fingerprint = 1 if self._opts["strict"] else 0
        o.max_inflight_copies = self._opts["inflight"]
        o.keep_record = 1 if self.record else 0
        self._work_dir_bytes = self.work_dir.encode()
        o.work_dir = self._work_dir_bytes
        env = ctypes.c_void_p()
        L.check(lib, lib.swapplan_rt_create_swap_env(ctypes.byref(o), ctypes.byref(env)),
                "create_swap_env")
        self._env = env
        try:
            # Callbacks: kept referenced for the life of the environment.
            self._cb = L.Framework(ctypes.sizeof(L.Framework), None, L.HOLD_FN(self._cb_hold),
                                   L.RELEASE_FN(self._cb_release),
                                   L.RESTORE_FN(self._cb_restore),
                                   L.CAN_RECOMPUTE_FN(self._cb_can_recompute),
                                   L.RECOMPUTE_FN(self._cb_recompute),
                                   # _recompute.py re-runs a seeded op under
                                   # the generator states it first ran with.
                                   1, L.WORKSPACE_FN(self._cb_recompute_workspace),
                                   L.COPY_FN(self._cb_copy) if self._copies is not None
                                   else L.COPY_FN())
            L.check(lib, lib.swapplan_rt_set_framework(env, ctypes.byref(self._cb)),
                    "set_framework")
            if self.provider is not None and self.policy is None:
                self._provider_fn = L.PROVIDER_FN(self._cb_provider)
                L.check(lib, lib.swapplan_rt_set_policy_provider(env, self._provider_fn, None),
                        "set_policy_provider")
            if self.policy is not None:
                L.check(lib, lib.swapplan_rt_load_policy(env, self.policy.encode(), None, 0),
                        "load_policy(%s)" % self.policy)
            gc.collect()
            self._register_resident()
            self._phases.install(self.optimizers, False, module_names=False)
            self._compiled.enter(self.model)
            self._begin()
            if self._hookclock is None:
                self._push_mode()
            else:  # the op clock starts at the root module's forward
                self._hookclock.install()
                self._forward_hook = self.model.register_forward_pre_hook(self._on_forward)
        except BaseException:
            self._uninstall_hooks()
            self._compiled.exit()
            self._phases.uninstall()
            lib.swapplan_rt_close_swap_env(env)
            self._env = None
            self._closed = True
            self._tracker.release()
            if self._owned_work_dir:
                shutil.rmtree(self.work_dir, ignore_errors=True)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._hook_iteration:
                self._hookclock.end_hook_iteration()
                self._hook_iteration = False
            self._pop_mode()
        finally:
            self._uninstall_hooks()
            self._phases.uninstall()
            self._compiled.poll()
            self._compiled.exit()
            try:
                self._tracker.full_poll(-1)
                if self._in_iteration:
                    self._end()
                if self.record and exc_type is None:
                    L.check(self._lib, self._lib.swapplan_rt_write_record(
                        self._env, self.record.encode()), "write_record(%s)" % self.record)
                self._last_stats = self.stats
                self._last_iterations = self.iterations
            finally:
                # Brings every swapped-out storage back before the tensors go
                # on without the runtime.
                rc = self._lib.swapplan_rt_close_swap_env(self._env)
                self._env = None
                self._closed = True
                self._tracker.release()
                self._held.clear()
                if self._owned_work_dir:
                    shutil.rmtree(self.work_dir, ignore_errors=True)
                if rc != L.OK and exc_type is None:
                    raise L.error(self._lib, rc, "close_swap_env")
        return False

    def step(self):
        """Ends the iteration and begins the next one. Right after an
        optimizer step ended the iteration (auto_step), with no backward op
        since, it ends nothing (stats["redundant_steps"]): `opt.step();
        rt.step()` is one iteration (docs/runtime-torch.md)."""
        if self._env is None:
            raise RuntimeError("SwapRuntime.step() outside the with-block")
        if self._optimizer_ended:
            self._optimizer_ended = False
            self.redundant_steps += 1
            return
        self._step()

    def _step(self):
        self._forwarded = False
        self.step_clocks.append("hooks" if self._hook_iteration else "ops")
        if self._hook_iteration:  # the stage machine never saw it
            self._hook_iteration = False
            self._hookclock.end_hook_iteration()
            self._phases.new_iteration()
            return
        self._tracker.full_poll(-1)
        self._end()
        self._begin()
        if self._hookclock is not None:
            self._pop_mode()  # on again at the next root forward

    def pause(self):
        """Context manager: ops inside it are not seen (their storages are
        registered at their first use outside it)."""
        return _Pause(self)

    # ------------------------------------------------------------ internals
    def _begin(self):
        L.check(self._lib, self._lib.swapplan_rt_iteration_begin(self._env), "iteration_begin")
        self._in_iteration = True
        self._nops = 0
        self._phases.new_iteration()

    def _end(self):
        self._in_iteration = False
        rc = self._lib.swapplan_rt_iteration_end(self._env)
        self._raise_callback_error()
        L.check(self._lib, rc, "iteration_end")
        self._watch_repeats()
        self._compiled.poll()
        if self._hookclock is not None and self._hookclock.recording:
            self._capture()

    def _watch_repeats(self):
        """Warns once when `warn_unrepeated_after` iterations in a row stayed
        in WarmUp before any reached Stable: no two had one op sequence."""
        s = L.Stats()
        L.check(self._lib, self._lib.swapplan_rt_get_stats(self._env, ctypes.byref(s)),
                "get_stats")
        if s.iterations == self._iterations_seen:
            return  # no op ran: no iteration
        self._iterations_seen = s.iterations
        if L.STAGES[s.stage] != "WarmUp":
            self._warmup_run = 0
            self._ever_stable = True
            return
        self._warmup_run += 1
        n = self.warn_unrepeated_after
        if not self._ever_stable and n > 0 and self._warmup_run == n:
            self.unrepeated_warning = (
                "SwapRuntime: %d iterations in a row and no two ran the same op sequence, so the "
                "stage machine stays in WarmUp (no policy, Algorithm 3 only). Causes: an "
                "iteration boundary that moves (rt.step() where no optimizer= ends iterations, "
                "a step called twice), data-dependent control flow; docs/runtime-torch.md"
                % n)
            warnings.warn(self.unrepeated_warning, RuntimeWarning, stacklevel=4)

    def _after_backward(self):
        pass

    def _after_optimizer(self, opt):
        if self.auto_step and self._env is not None:
            self._step()
            self._optimizer_ended = True

    def _register_resident(self):
        seen = set()
        tensors = []
        if self.model is not None:
            tensors += [(p, L.KIND_PARAMETER) for p in self.model.parameters()]
            tensors += [(b, L.KIND_OTHER) for b in self.model.buffers()]
        for opt in self.optimizers:
            for group in opt.param_groups:
                tensors += [(p, L.KIND_PARAMETER) for p in group["params"]]
            for state in opt.state.values():
                tensors += [(v, L.KIND_OPTIMIZER_STATE) for v in state.values()
                            if isinstance(v, _Tensor)]
        for t, kind in tensors:
            try:
                sid = _storage_id(t)
            except (RuntimeError, NotImplementedError):
                continue
            if sid in seen or t.device.type != self._dev:
                continue
            seen.add(sid)
            self._tracker.watch(t, sid)
            self._register(t, sid, kind, persistent=1)

    def _register(self, t, sid, kind=L.KIND_ACTIVATION, persistent=-1):
        """Registers the storage of `t` (seen for the first time); its handle
        (0 when it holds no bytes: not counted)."""
        storage = C.untyped_storage(t)
        size = storage.nbytes()
        ptr = storage.data_ptr()
        handle = 0
        if size > 0:
            shape = t.shape
            ndim = min(len(shape), 64)
            buf = self._shape
            for i in range(ndim):
                buf[i] = shape[i]
            rc = self._register_fn(self._env, sid, ptr, size, _DTYPES.get(t.dtype, 0), buf, ndim,
                                   kind, persistent, self._handle_ref)
            if self._callback_error is not None:
                self._raise_callback_error()
            if rc:
                raise L.error(self._lib, rc, "tensor_register")
            handle = self._handle.value
        stream = None if self._cuda is None else self._cuda.cuda.current_stream()
        self._tracker.track(sid, _Member(size, handle, ptr, stream), storage)
        return handle

    def _freed(self, m):
        if m.handle:
            rc = self._free_fn(self._env, m.handle)
            if rc:
                raise L.error(self._lib, rc, "tensor_free")

    def _raise_callback_error(self):
        e = self._callback_error
        if e is not None:
            self._callback_error = None
            raise e

    # The per-op path.
    def _describe(self, func):
        write_pos, write_kw, aliases, instrumentation = C.schema_effects(func)
        schema = func._schema
        if instrumentation:
            op = -1  # instrumentation, not an op (as the recorder)
        else:
            oid = ctypes.c_int32()
            L.check(self._lib, self._lib.swapplan_rt_intern_op(
                self._env, schema.name.encode(), ctypes.byref(oid)), "intern_op")
            op = oid.value
        recipe = 0 if op < 0 or not self._recipes_on or not R.eligible(
            func, write_pos, write_kw, aliases) else (
            2 if R.seeded(func) else 1)
        info = (op, tuple(write_pos), frozenset(write_kw), aliases, recipe)
        self._ops[func] = info
        return info

    def _use(self, t, buf, n):
        """Puts the handle of `t`'s storage (registered at first sight) in
        buf[n]; returns the new count."""
        try:
            sid = _storage_id(t)
        except (RuntimeError, NotImplementedError):
            return n
        tracker = self._tracker
        m = tracker.live.get(sid)
        if id(t) not in tracker._watched:
            tracker.watch(t, sid)
        if m is None:
            if t.device.type != self._dev:
                return n
            # Made before __enter__ (or in a pause): on the device from its
            # first use on, room made for it before the op (docs/runtime.md
            # "Budget").
            h = self._register(t, sid, L.KIND_INPUT)
            self.discovered_storages += 1
            self.discovered_bytes += tracker.live[sid].size
        else:
            h = m.handle
        if h and n < _MAX_USES:
            buf[n] = h
            n += 1
        return n

    def _produce(self, t, written, listed, buf, n):
        try:
            sid = _storage_id(t)
        except (RuntimeError, NotImplementedError):
            return n
        tracker = self._tracker
        tracker.watch(t, sid)
        m = tracker.live.get(sid)
        if m is None:
            if t.device.type != self._dev:
                return n
            h = self._register(t, sid)
            self._op_new_bytes += tracker.live[sid].size
            if not written:
                self._new_outputs.append((t, sid))
        elif written:
            m.writes += 1
            if self._cuda is not None:
                m.stream = self._cuda.cuda.current_stream()
            storage = C.untyped_storage(t)
            if storage.nbytes() != m.size or (m.ptr and storage.data_ptr() != m.ptr):
                # resize_ / set_: the old allocation ends, a new one begins.
                C.free_weak_ref(tracker.end_member(sid, -1))
                self._freed(m)
                h = self._register(t, sid)
            else:
                h = m.handle
        elif listed:
            h = m.handle
        else:
            return n
        if h and n < _MAX_USES:
            buf[n] = h
            n += 1
        return n

    def _dispatch(self, func, args, kwargs):
        if self._paused:
            return func(*args, **kwargs)
        info = self._ops.get(func)
        if info is None:
            info = self._describe(func)
        op, write_pos, write_kw, aliases, recipe = info
        if op < 0:
            return func(*args, **kwargs)
        self._tracker.before_op(-1)
        phase = self._phases.op_phase()[0]
        if phase == _BACKWARD:
            self._optimizer_ended = False
        ibuf = self._ibuf
        n = 0
        for a in args:
            if isinstance(a, _Tensor):
                n = self._use(a, ibuf, n)
            elif isinstance(a, (list, tuple)):
                for e in a:
                    if isinstance(e, _Tensor):
                        n = self._use(e, ibuf, n)
        for a in kwargs.values():  # out= too: it must be on the device
            if isinstance(a, _Tensor):
                n = self._use(a, ibuf, n)
            elif isinstance(a, (list, tuple)):
                for e in a:
                    if isinstance(e, _Tensor):
                        n = self._use(e, ibuf, n)
        lib = self._lib
        k = self._nops
        self._cbpos = k  # the callbacks' position: k ops completed
        rc = self._op_begin(self._env, op, phase, ibuf, n)
        if self._callback_error is not None:
            self._raise_callback_error()
        if rc:
            raise L.error(lib, rc, "op_begin(%s)" % func._schema.name)
        try:
            predict = self._predict
            if predict is not None:
                # Room for the outputs before they exist (_predict.py).
                key, expected = predict.before(func, args, kwargs, aliases)
                if expected:
                    rc = self._op_reserve(self._env, expected)
                    if self._callback_error is not None:
                        self._raise_callback_error()
                    if rc:
                        raise L.error(lib, rc, "op_reserve(%s, %d bytes)"
                                      % (func._schema.name, expected))
            self._op_new_bytes = 0
            # A random op's generator state, for its recipe (_recompute.py).
            rng = self._recipes.rng.get() if recipe == 2 else None
            if self._oom is None:
                out = func(*args, **kwargs)
            else:
                out = self._run_with_oom_retry(func, args, kwargs)
        except BaseException:
            self._op_end(self._env, self._obuf, 0)
            raise
        hc = self._hookclock
        # Recording: the resident bytes during the op, as the meter's
        # post-kernel sample (in use after op_begin plus the new storages).
        resident = self._in_use() if hc is not None and hc.recording else None
        self._cbpos = k + 1
        obuf = self._obuf
        m = 0
        new = self._new_outputs
        new.clear()
        try:
            for i in write_pos:
                if i < len(args):
                    m = self._produce_all(args[i], True, True, obuf, m)
            for k in write_kw:
                if k in kwargs:
                    m = self._produce_all(kwargs[k], True, True, obuf, m)
            if isinstance(out, _Tensor):
                m = self._produce(out, False, not (aliases and aliases[0]), obuf, m)
            elif isinstance(out, (list, tuple)):
                single = len(aliases) == 1
                for i, r in enumerate(out):
                    aliased = aliases[0 if single else i] if aliases and (
                        single or i < len(aliases)) else False
                    m = self._produce_all(r, False, not aliased, obuf, m)
            if recipe and new:
                # Before op_end: the runtime may ask about them there.
                self._recipes.record(func, args, kwargs, out, new, rng)
            if predict is not None:
                predict.after(key, expected, self._op_new_bytes)
            if resident is not None:
                hc.bound.append(resident + self._op_new_bytes)
        finally:
            new.clear()
            rc = self._op_end(self._env, obuf, m)
            self._nops = k + 1
        if self._callback_error is not None:
            self._raise_callback_error()
        if rc:
            raise L.error(lib, rc, "op_end(%s)" % func._schema.name)
        return out

    def _produce_all(self, value, written, listed, buf, n):
        if isinstance(value, _Tensor):
            return self._produce(value, written, listed, buf, n)
        if isinstance(value, (list, tuple)):
            for e in value:
                if isinstance(e, _Tensor):
                    n = self._produce(e, written, listed, buf, n)
        return n


class _Pause:
    def __init__(self, runtime):
        self.runtime = runtime

    def __enter__(self):
        self.runtime._paused += 1
        return self

    def __exit__(self, *exc):
        self.runtime._paused -= 1
        return False
