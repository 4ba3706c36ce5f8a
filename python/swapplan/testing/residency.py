"""An independent measure of device residency: what is really on the device
at every ATen op, whatever a runtime's own counters say.

    from swapplan.testing.residency import ResidencyMeter

    with ResidencyMeter(budget_bytes=budget) as meter:   # enter it FIRST
        with SwapRuntime(device_memory=budget, ...) as rt:
            train()
    assert meter.peak_bytes <= budget, meter.violations[:3]

What it measures: the sum of the *current* byte sizes of every live storage
on `device` (``storage.nbytes()`` now, so a storage a runtime freed with
``resize_(0)`` counts 0 and one it brought back counts again), each storage
once (views share their storage), sampled twice per op: before the kernel
(after whatever a runtime did in front of it: swap-ins, evictions) and right
after it (its outputs allocated, before a runtime reacts to them). That
second sample is the one a device allocator would have failed.

Which storages: every storage an op takes or returns while the meter is
active, from that op on — on the CPU the "device" is emulated, and a tensor
made before (parameters, a dataset in memory) is on it from its first use,
as if moved there then; with include_existing (the default on CUDA, where
every live device storage is on the device) also every tensor alive when
the meter is entered, found by a scan of the garbage collector's objects.
It keeps a weak reference per storage (``_torch_compat.weak_ref``), never a strong
one, and never reads a runtime's state.

The order matters: the meter is a TorchDispatchMode and must be entered
*before* (outside) a runtime's own mode, so that the runtime's handler runs
first and the meter sees the op at the kernel. Entered inside, it would
measure after the runtime's post-op releases and miss the transient peak;
``__enter__`` therefore warns when another dispatch mode is already active.

On CUDA, the caching allocator's counter is sampled too
(``torch.cuda.memory_allocated`` at both samples: ``allocator_peak_bytes``).

Cost: O(live storages) per sample (a weak-pointer dereference each) — a
test instrument, not a production profiler.
"""

import gc
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .. import _torch_compat as C

_Tensor = torch.Tensor
_from_weak = torch.UntypedStorage._new_with_weak_ptr


def _active_dispatch_modes():
    """How many dispatch modes are active now (0 where it cannot be told)."""
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
        return len(_get_current_dispatch_mode_stack())
    except ImportError:  # torch 1.13: the stack's length from the C side
        try:
            return int(torch._C._len_torch_dispatch_stack())
        except AttributeError:
            return 0


class Violation:
    """One sample over the budget."""
    __slots__ = ("op_index", "op", "when", "bytes")

    def __init__(self, op_index, op, when, nbytes):
        self.op_index, self.op, self.when, self.bytes = op_index, op, when, nbytes

    def __repr__(self):
        return "Violation(op %d %s %s: %d bytes)" % (self.op_index, self.op, self.when,
                                                    self.bytes)


class ResidencyMeter(TorchDispatchMode):
    """Measures the resident bytes on `device` at every op (module docstring).

    Args:
      device: the device type whose storages count ("cpu" for the host
        backend's emulated device, "cuda").
      budget_bytes: samples above it are kept in `violations` (the first
        `max_violations`; `violation_count` counts all).
      include_existing: count the tensors alive at __enter__ from then on
        (default: on CUDA only; module docstring).
      keep_samples: also keep every sample as (op index, op name, before,
        after) in `samples` (tests that plot or compare curves).

    Results: peak_bytes, ops, violations, violation_count, peak_op (name of
    the op at the peak), allocator_peak_bytes (CUDA; None elsewhere),
    iteration_peaks (one per mark_iteration()).
    """

    def __init__(self, device="cpu", budget_bytes=None, keep_samples=False, max_violations=100,
                 include_existing=None):
        super().__init__()
        # CPU: the emulated device holds a storage from its creation or first
        # use by an op on; CUDA: from its creation (every live one).
        self.include_existing = (device != "cpu") if include_existing is None \
            else include_existing
        self.device = torch.device(device).type
        self.budget_bytes = budget_bytes
        self.keep_samples = keep_samples
        self.max_violations = max_violations
        self._weak = {}  # storage id -> weak handle
        self.peak_bytes = 0
        self.peak_op = None
        self.ops = 0
        self.violations = []
        self.violation_count = 0
        self.samples = []
        self.iteration_peaks = []
        self._iteration_peak = 0
        self.allocator_peak_bytes = None
        self._cuda = self.device == "cuda"

    # -- tracking ---------------------------------------------------------
    def _track(self, t):
        if t.device.type != self.device:
            return
        try:
            sid = C.storage_id(t)
        except (RuntimeError, NotImplementedError):
            return  # no storage (sparse, functional wrappers)
        if sid not in self._weak:
            self._weak[sid] = C.weak_ref(C.untyped_storage(t))

    def _track_all(self, value):
        if isinstance(value, _Tensor):
            self._track(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                if isinstance(v, _Tensor):
                    self._track(v)
        elif isinstance(value, dict):
            for v in value.values():
                self._track_all(v)

    def resident_bytes(self):
        """The current bytes of every live tracked storage (drops dead ones)."""
        total = 0
        dead = []
        for sid, w in self._weak.items():
            if C.expired(w):
                dead.append(sid)
                continue
            s = _from_weak(w)
            if s is None:
                dead.append(sid)
                continue
            total += s.nbytes()
        for sid in dead:
            C.free_weak_ref(self._weak.pop(sid))
        return total

    def _sample(self, op, when):
        b = self.resident_bytes()
        if b > self.peak_bytes:
            self.peak_bytes = b
            self.peak_op = op
        if b > self._iteration_peak:
            self._iteration_peak = b
        if self.budget_bytes is not None and b > self.budget_bytes:
            self.violation_count += 1
            if len(self.violations) < self.max_violations:
                self.violations.append(Violation(self.ops, op, when, b))
        if self._cuda:
            a = torch.cuda.memory_allocated()
            self.allocator_peak_bytes = max(self.allocator_peak_bytes or 0, a)
        return b

    # -- the mode ---------------------------------------------------------
    def __enter__(self):
        if _active_dispatch_modes() > 0:
            warnings.warn("ResidencyMeter entered inside another dispatch mode: it measures "
                          "after that mode's handler, not at the kernel; enter it first",
                          RuntimeWarning, stacklevel=2)
        if self.include_existing:
            gc.collect()
            for obj in gc.get_objects():
                if issubclass(type(obj), _Tensor):  # type(): no proxy's __class__ hook
                    self._track(obj)
        if self._cuda:
            self.allocator_peak_bytes = torch.cuda.memory_allocated()
        self._iteration_peak = self.resident_bytes()
        self.peak_bytes = max(self.peak_bytes, self._iteration_peak)
        return super().__enter__()

    def __exit__(self, *exc):
        r = super().__exit__(*exc)
        self.mark_iteration()
        for w in self._weak.values():
            C.free_weak_ref(w)
        self._weak.clear()
        return r

    def mark_iteration(self):
        """Closes the current iteration's peak (iteration_peaks) and opens the
        next one at the bytes resident now."""
        if self._iteration_peak or not self.iteration_peaks:
            self.iteration_peaks.append(self._iteration_peak)
        self._iteration_peak = self.resident_bytes() if self._weak else 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        for a in args:
            self._track_all(a)
        for a in kwargs.values():
            self._track_all(a)
        before = self._sample(name, "before")
        out = func(*args, **kwargs)
        self._track_all(out)
        after = self._sample(name, "after")
        if self.keep_samples:
            self.samples.append((self.ops, name, before, after))
        self.ops += 1
        return out
