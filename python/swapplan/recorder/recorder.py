"""Recorder: records a PyTorch training loop into a swapplan trace.

    import swapplan.recorder

    with swapplan.recorder.Recorder("step.json.gz", model=model, optimizer=opt) as rec:
        for x, y in batches:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            rec.step()                       # ends the iteration

Every op reaching the dispatcher is seen by a TorchDispatchMode (below
autograd, so forward, backward and optimizer ops alike, each under its aten
name). Tensors are identified by storage: views share one trace tensor whose
size is the storage's bytes. Storage lifetimes are observed, not inferred:
the recorder holds a C++ weak reference on each live StorageImpl and, before
each op is dispatched, collects the ones that expired since the previous op
(their memory went back to the allocator); which ones to check is learnt from
tensor objects dying (see _lifetimes.py). So:

  ALLOC at op i   the storage first appeared as an output of op i (or as an
                  input of op i, for storages made outside the dispatcher);
  FREE at op i    it died after op i was dispatched and before op i+1 (frees
                  between iterations go to the last op before them).

This catches storages kept alive only by C++ — autograd's saved tensors,
engine buffers, .grad — which Python-level finalizers miss (see README,
"Recording PyTorch programs", for the experiments and the limits).

The recorder's own "bytes in use during op i" (``peak_bytes``) uses the
memory-curve definition: bytes of trace tensors live when op i starts plus
bytes allocated by op i. ``swapplan inspect`` rebuilds the same figure from
the written events (peak_unswapped_bytes); the tests check they agree.

Cost per op: O(inputs + outputs + storages that may have died) — about 10 us
of Python on top of the dispatch mode's own cost, independent of how many
storages are live (bench/recorder_overhead.py); with poll_every_op, plus
about 40 ns per live storage. Memory O(ops + uses + tensors).
"""

import gc
import sys
import time
import warnings
from os import path as os_path

import torch

from .. import _torch_compat as C
from . import _model as M
from . import _writer as W
from ._allocator_check import AllocatorCheck
from ._dispatch import DispatchMixin
from ._hooks import PhaseTracker, repeated_layer_count
from ._lifetimes import StorageTracker
from .version import __version__

_TORCH_DIR = os_path.dirname(os_path.realpath(torch.__file__)) + os_path.sep
_OWN_DIR = os_path.dirname(os_path.realpath(__file__)) + os_path.sep


class _Mode(C.TorchDispatchMode):
    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.recorder._dispatch(func, args, kwargs or {})


class Recorder(DispatchMixin):
    """Records the ops, tensors and storage lifetimes of a training loop.

    Args:
      path: output file, ``*.json`` or ``*.json.gz`` (the JSON trace form,
        gzip-compressed for ``.gz``). Written atomically on a clean exit.
      model: the root ``nn.Module``; its forward defines the FORWARD phase,
        its parameters (PARAMETER) and buffers (OTHER) are registered as
        resident, and its top-level children give layer hints.
      optimizer: an optimizer or a list of them; ``step()`` defines the
        OPTIMIZER phase, the state tensors become OPTIMIZER_STATE.
      model_name: metadata; default: the model's class name.
      model_layers: metadata (repeated-layer count); default: the length of
        the longest nn.ModuleList in the model, 0 when there is none.
      record_op_durations: also write each op's wall duration (ns) measured
        around the kernel call (on CPU the kernel's own time; on an
        asynchronous device it would only be the launch).
      record_call_sites: give each op a stack_id for the first Python frame
        outside torch and this package (file:line in the metadata).
      layer_hints: give ops run inside a top-level unit of the model its index.
      record_addresses: write each storage's data pointer as device_address.
      record_module_names: name each tensor an op produces after the
        innermost module running it and the op ("layers.3.attn.softmax";
        forward hooks on every module of ``model``); outside any module the
        writer's "op@iteration:op" name ("aten::mm@0:17"). Parameters,
        buffers, gradients and optimizer state keep their parameter-based
        names ("fc.weight.grad").
      allocator_check: run PyTorch's sequential (legacy) profiler with memory
        profiling during the recording and write what the CPU allocator held
        after each op as allocator_bytes_in_use (rebased, see README), so that
        ``swapplan inspect`` reports any difference from the recorded events.
        Slow; for verifying the recorder, not for routine use.
      keep_untouched: keep tensors that were alive before the recording,
        never used and never freed during it (by default they are left out:
        they only add a constant; their bytes go in the metadata).
      poll_every_op: check every live storage for expiry before every op
        instead of only those whose tensors died (exact whatever holds the
        storages, O(live storages) per op; see _lifetimes.py).
      full_poll_interval_ops: without poll_every_op, also check every live
        storage every this many ops (and at phase boundaries and step()).
      device: device whose memory is recorded (default: that of the model's
        first parameter, else cpu). Tensors on other devices are ignored.
      attributes: extra metadata attributes (str -> str).
      record_saved_tensors: also write autograd's saved-tensor events (every
        pack and unpack of torch.autograd.graph.saved_tensors_hooks, with the
        ops completed in the iteration and the saved storage's tensor), the
        moments the runtime's saved-tensor clock can act at; `swapplan
        simulate --clock saved-tensors` needs them. Off by default: with the
        hooks installed autograd adds an aten::detach (a view, no bytes) when
        it unpacks a saved output (26 per DropoutLM step), as it does under the
        runtime's saved-tensor clock, so the op sequence is that run's, not a
        plain one's. Needs PyTorch >= 2.0 (1.13's autograd fails under
        saved-tensor hooks while a dispatch mode is active).
    """

    def __init__(self, path, model=None, optimizer=None, *, model_name=None, model_layers=None,
                 record_op_durations=False, record_call_sites=True, layer_hints=True,
                 record_addresses=True, allocator_check=False, keep_untouched=False,
                 poll_every_op=False, full_poll_interval_ops=256, device=None,
                 attributes=None, record_module_names=True, record_saved_tensors=False):
        path = str(path)
        if record_saved_tensors and C.torch_version() < (2, 0):
            raise ValueError("record_saved_tensors needs PyTorch >= 2.0 (this is %s): 1.13's "
                             "autograd fails under saved-tensor hooks while a dispatch mode "
                             "is active" % torch.__version__)
        self.record_saved_tensors = bool(record_saved_tensors)
        self._saved_hooks = None
        if not (path.endswith(".json") or path.endswith(".json.gz")):
            raise ValueError("swapplan_recorder writes the JSON trace form; the path must end "
                             "in .json or .json.gz, got %r" % path)
        if optimizer is None:
            optimizers = []
        elif isinstance(optimizer, (list, tuple)):
            optimizers = list(optimizer)
        else:
            optimizers = [optimizer]
        if full_poll_interval_ops < 1:
            raise ValueError("full_poll_interval_ops must be >= 1, got %r"
                             % (full_poll_interval_ops,))
        if allocator_check and not C.legacy_profiler_available():
            raise RuntimeError("allocator_check needs torch.autograd._enable_profiler_legacy, "
                               "which this PyTorch %s does not have" % torch.__version__)
        self.path = path
        self.model = model
        self.optimizers = optimizers
        self.model_name = model_name if model_name is not None else (
            type(model).__name__ if model is not None else "")
        if model_layers is None:
            model_layers = repeated_layer_count(model) if model is not None else 0
        self.model_layers = model_layers
        self.record_op_durations = record_op_durations
        self.record_call_sites = record_call_sites
        self.layer_hints = layer_hints
        self.record_addresses = record_addresses
        self.keep_untouched = keep_untouched
        self.record_module_names = record_module_names
        self._producer_names = {}  # (module path, op name id) -> tensor name
        self._producing_op = 0     # name id of the op whose outputs are being recorded
        self.attributes = dict(attributes or {})
        if device is None:
            device = torch.device("cpu")
            if model is not None:
                for p in model.parameters():
                    device = p.device
                    break
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = device
        if allocator_check and self.device.type != "cpu":
            raise ValueError("allocator_check reads the CPU allocator's reports; the recorded "
                             "device is %s" % self.device)
        self._allocator = AllocatorCheck() if allocator_check else None

        self.recording = M.Recording()
        if self.record_saved_tensors:
            self.recording.saved_events = []
        self._tracker = StorageTracker(poll_every_op, full_poll_interval_ops)
        self._pending = {}       # register() before first sight: address -> (weak, kind, name)
        self._op_cache = {}
        self._sites = {}         # (filename, line) -> stack id
        self._site_names = []
        self._skip_code = {}     # code object -> frame belongs to torch or this package
        self._skip_prefixes = (_TORCH_DIR, _OWN_DIR)
        self._op_alloc = 0       # bytes allocated by the op being recorded
        self._param_names = {}
        self._phases = PhaseTracker(model, self._after_backward, self._after_optimizer)
        self._mode = None
        self._paused = 0
        self._iteration_begin_op = 0
        self._iteration_start_ns = 0
        self._entered = False
        self._finished = False
        self.summary = None

    # ------------------------------------------------------------------ API
    def __enter__(self):
        if self._entered:
            raise RuntimeError("a Recorder records once; make a new one")
        self._entered = True
        # Collect cyclic garbage now rather than at a random op of the recording.
        gc.collect()
        self._register_resident()
        self._phases.install(self.optimizers, self.layer_hints, self.record_module_names)
        self._mode = _Mode(self)
        self._mode.__enter__()
        if self.record_saved_tensors:
            self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
            self._saved_hooks.__enter__()
        if self._allocator is not None:
            self._allocator.start()
        self._iteration_start_ns = time.perf_counter_ns()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._saved_hooks is not None:
                self._saved_hooks.__exit__(None, None, None)
                self._saved_hooks = None
            self._mode.__exit__(None, None, None)
            if exc_type is None:
                self._tracker.full_poll(self.recording.num_ops - 1)
                self._scan_gradients()
                for opt in self.optimizers:
                    self._scan_optimizer(opt)
                self._end_iteration(final=True)
            if self._allocator is not None:
                self._allocator.stop()
        finally:
            self._phases.uninstall()
            self._release()
        if exc_type is None:
            self._finish()
        return False

    def step(self):
        """Ends the current iteration (call it once per training step)."""
        if not self._entered or self._finished:
            raise RuntimeError("Recorder.step() outside the with-block")
        self._tracker.full_poll(self.recording.num_ops - 1)
        self._scan_gradients()
        for opt in self.optimizers:
            self._scan_optimizer(opt)
        self._end_iteration(final=False)

    def register(self, tensor, kind, name=""):
        """Marks ``tensor``'s storage as ``kind`` (one of the trace's kinds,
        e.g. "INPUT"). Before the first op, the storage is registered as
        resident from the start (and kept in the trace even if untouched);
        later, a storage not seen yet gets the kind when it first appears."""
        if kind not in M.KINDS:
            raise ValueError("unknown tensor kind %r (expected one of %s)" % (kind, M.KINDS))
        if self.recording.num_ops == 0:
            m = self._member_for_resident(tensor)
        else:
            m = self._known(tensor)
            if m is None:
                self._register_pending(tensor, kind, name)
                return
        if m is not None:
            m.kind = kind
            if name:
                m.name = name

    def pause(self):
        """Context manager: ops run inside it are not recorded (storages made
        there are allocated, in the trace, at their first recorded use)."""
        return _Pause(self)

    @property
    def peak_bytes(self):
        """The recorder's own peak of bytes in use during an op (see module doc)."""
        return self.summary["peak_bytes"] if self.summary else None

    # ------------------------------------------------------------ internals
    def _saved_event(self, t, unpack):
        """One saved-tensor event: (iteration, ops completed in it, unpack,
        the storage's member index or None: not a recorded storage)."""
        rec = self.recording
        m = None
        if not self._paused:
            try:
                m = self._tracker.live.get(C.storage_id(t))
            except (RuntimeError, NotImplementedError):
                m = None
        rec.saved_events.append((len(rec.iterations), rec.num_ops - self._iteration_begin_op,
                                 unpack, None if m is None else m.index))

    def _pack(self, t):
        self._saved_event(t, False)
        return t

    def _unpack(self, t):
        self._saved_event(t, True)
        return t

    def _register_resident(self):
        named = []
        if self.model is not None:
            for name, p in self.model.named_parameters():
                self._param_names[id(p)] = name
                named.append((p, M.KIND_PARAMETER, name))
            for name, b in self.model.named_buffers():
                named.append((b, M.KIND_OTHER, name))
        for opt in self.optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    if id(p) not in self._param_names:
                        self._param_names[id(p)] = "param%d" % len(self._param_names)
                        named.append((p, M.KIND_PARAMETER, self._param_names[id(p)]))
        for p, kind, name in named:
            self.register(p, kind, name)
        self._scan_gradients()
        for opt in self.optimizers:
            self._scan_optimizer(opt)
        # Everything else alive now: resident from the start. Kept in the trace
        # only if used or freed during the recording (see kept_members).
        tensor_type = torch.Tensor
        for obj in gc.get_objects():
            if issubclass(type(obj), tensor_type):  # type(): no __getattr__ side effects
                try:
                    self._member_for_resident(obj, origin=M.ORIGIN_PREEXISTING)
                except Exception:  # noqa: BLE001 - exotic subclasses (fake, meta, ...)
                    continue

    def _member_for_resident(self, t, origin=M.ORIGIN_REGISTERED):
        try:
            sid = C.storage_id(t)
        except (RuntimeError, NotImplementedError):
            return None  # no storage (sparse, ...)
        if t.device != self.device:
            return None
        self._tracker.watch(t, sid)
        m = self._tracker.live.get(sid)
        if m is not None:
            return m
        storage = C.untyped_storage(t)
        size = storage.nbytes()
        if size == 0:
            return None
        m = self.recording.new_member(size, C.dtype_name(t.dtype), tuple(t.shape),
                                      storage.data_ptr() if self.record_addresses else 0,
                                      origin, -1, M.OTHER)
        self._tracker.track(sid, m, storage)
        return m

    def _register_pending(self, t, kind, name):
        """register() of a storage not seen yet during the recording: the kind
        is applied when it first appears (a weak reference guards against the
        address being reused by another storage meanwhile)."""
        try:
            sid = C.storage_id(t)
        except (RuntimeError, NotImplementedError):
            return
        old = self._pending.pop(sid, None)
        if old is not None:
            C.free_weak_ref(old[0])
        self._pending[sid] = (C.weak_ref(C.untyped_storage(t)), kind, name)

    def _release(self):
        self._tracker.release()
        for w, _, _ in self._pending.values():
            C.free_weak_ref(w)
        self._pending.clear()

    def _after_backward(self):
        self._tracker.full_poll(self.recording.num_ops - 1)
        self._scan_gradients()

    def _after_optimizer(self, opt):
        self._tracker.full_poll(self.recording.num_ops - 1)
        self._scan_optimizer(opt)

    def _scan_gradients(self):
        params = []
        if self.model is not None:
            params.extend(self.model.named_parameters())
        for opt in self.optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    params.append((self._param_names.get(id(p), ""), p))
        for name, p in params:
            g = p.grad
            if g is None:
                continue
            m = self._known(g)
            if m is None and self.recording.num_ops == 0:
                m = self._member_for_resident(g)
            if m is not None and m.kind is None:
                m.kind = M.KIND_GRADIENT
                m.name = name + ".grad"

    def _scan_optimizer(self, opt):
        for p, state in opt.state.items():
            pname = self._param_names.get(id(p), "")
            for key, value in state.items():
                if isinstance(value, torch.Tensor):
                    m = self._known(value)
                    if m is None and self.recording.num_ops == 0:
                        m = self._member_for_resident(value)
                    if m is not None and m.kind is None:
                        m.kind = M.KIND_OPTIMIZER_STATE
                        m.name = "%s.%s" % (pname, key)

    def _known(self, t):
        try:
            return self._tracker.live.get(C.storage_id(t))
        except (RuntimeError, NotImplementedError):
            return None

    def _end_iteration(self, final):
        now = time.perf_counter_ns()
        begin, end = self._iteration_begin_op, self.recording.num_ops
        if end > begin:
            self.recording.iterations.append([begin, end, now - self._iteration_start_ns])
        elif not final:
            warnings.warn("swapplan_recorder: Recorder.step() with no op since the previous "
                          "step; no iteration recorded", stacklevel=3)
        self._iteration_begin_op = end
        self._iteration_start_ns = now
        self._phases.new_iteration()

    def _finish(self):
        self._finished = True
        rec = self.recording
        if not rec.iterations:
            raise RuntimeError("swapplan_recorder: no op was recorded; nothing written to %s"
                               % self.path)
        kept, untouched_bytes = W.kept_members(rec, self.keep_untouched)
        peak = (max(rec.op_during_bytes) - untouched_bytes) if rec.op_during_bytes else 0
        peak_op = rec.op_during_bytes.index(peak + untouched_bytes)
        metadata = self._metadata(peak, untouched_bytes)
        if self._allocator is not None:
            base = sum(m.size for m in kept if m.resident_from_start())
            stats = self._allocator.apply(rec, base, untouched_bytes)
            for key, value in stats.items():
                metadata["attributes"]["allocator_check." + key] = str(value)
        W.write_atomically(self.path, W.build_trace_lines(rec, kept, metadata))
        self.summary = {
            "path": self.path,
            "iterations": len(rec.iterations),
            "ops": rec.num_ops,
            "tensors": len(kept),
            "peak_bytes": peak,
            "peak_op": rec.iteration_of(peak_op),
            "untouched_resident_bytes": untouched_bytes,
            "phase_demoted_ops": self._phases.demoted_ops,
            "unsignaled_frees": self._tracker.unsignaled_frees,
            "unsignaled_free_bytes": self._tracker.unsignaled_free_bytes,
        }
        if self._allocator is not None:
            self.summary["allocator_check"] = stats

    def _metadata(self, peak, untouched_bytes):
        attrs = {
            "recorder.peak_during_op_bytes": str(peak),
            "recorder.untouched_resident_bytes": str(untouched_bytes),
            "recorder.phase_demoted_ops": str(self._phases.demoted_ops),
            "recorder.unsignaled_frees": str(self._tracker.unsignaled_frees),
            "recorder.poll_every_op": str(self._tracker.poll_every_op).lower(),
            "recorder.wall_time": "measured under recording (includes its overhead)",
            "torch.num_threads": str(torch.get_num_threads()),
            "python": sys.version.split()[0],
        }
        for i, site in enumerate(self._site_names):
            attrs["call_site.%d" % i] = site
        for i, (name, _) in enumerate(self._phases.units):
            attrs["layer.%d" % i] = name
        attrs.update({str(k): str(v) for k, v in self.attributes.items()})
        device_name = self.device.type
        if self.device.type == "cuda":
            device_name = torch.cuda.get_device_name(self.device)
        md = {"device_name": device_name, "framework": "pytorch " + torch.__version__,
              "recorder": "swapplan_recorder", "recorder_version": __version__,
              "model_name": self.model_name, "model_layers": int(self.model_layers),
              "attributes": attrs}
        if self.device.type == "cuda":
            md["device_memory_bytes"] = torch.cuda.get_device_properties(
                self.device).total_memory
        return md


class _Pause:
    def __init__(self, recorder):
        self.recorder = recorder

    def __enter__(self):
        self.recorder._paused += 1
        return self

    def __exit__(self, *exc):
        self.recorder._paused -= 1
        return False
