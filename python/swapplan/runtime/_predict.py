"""The bytes an ATen op is about to allocate, known before its kernel runs,
so that the runtime makes room first (swapplan_rt_op_reserve) instead of
after the allocation crossed the budget.

    predict = OutputBytes()
    key, nbytes = predict.before(func, args, kwargs, aliases)  # None: unknown
    out = func(*args, **kwargs)
    predict.after(key, nbytes, actual_new_bytes)

An op's new storages are a function of its schema and its arguments'
shapes, strides, dtypes and scalar values for every op but the
data-dependent ones (nonzero, unique, masked_select, ...). So the answer is
cached per (op, argument signature): the first sighting evaluates the op on
meta tensors (no data, no kernel, no generator consumed), later sightings
look the cache up. When the meta evaluation fails (no meta kernel — common
on torch 1.13 — or a data-dependent size) the op is unpredicted this time
(counted) and its actual bytes are cached after the kernel. The kernel's
answer replaces a wrong meta answer (an op whose schema promises a new
storage but returns a view); an op whose kernel answers change for one key
(data-dependent) is marked dynamic and never predicted again (`dynamic_ops`;
`mispredicted` counts the ops that allocated more than predicted).

Cost: the signature (a tuple per tensor argument) and one dict lookup per
op; a meta evaluation per new signature.
"""

import torch

from .. import _torch_compat as C

_Tensor = torch.Tensor
_META = torch.device("meta")
_SCALARS = (int, float, bool, str, complex, type(None), torch.dtype, torch.device,
            torch.memory_format, torch.layout)


def _sig(v):
    if isinstance(v, _Tensor):
        try:
            return (v.shape, v.stride(), v.dtype, v.device)
        except RuntimeError:  # no strides (sparse)
            return (v.shape, None, v.dtype, v.device)
    if isinstance(v, (list, tuple)):
        return tuple([_sig(e) for e in v])
    if isinstance(v, _SCALARS):
        return v
    return type(v).__name__


def _to_meta(v):
    if isinstance(v, _Tensor):
        if v.layout != torch.strided:
            raise NotImplementedError("non-strided tensor")
        return torch.empty_strided(tuple(v.shape), v.stride(), dtype=v.dtype, device=_META)
    if isinstance(v, list):
        return [_to_meta(e) for e in v]
    if isinstance(v, tuple):
        return tuple(_to_meta(e) for e in v)
    return v


def _returns_tensors(func):
    return any("Tensor" in str(r.type) for r in func._schema.returns)


class OutputBytes:
    """`device_type`: the runtime's device ("cpu": the host backend; "cuda"):
    an op whose outputs land on another device allocates nothing the budget
    counts. The output device is the `device=` argument, else the tensor
    arguments' (a factory without either: the CPU)."""

    def __init__(self, device_type="cpu"):
        self._cpu = device_type == "cpu"
        self._device_type = device_type
        self._known = {}       # (func, signature) -> bytes of new storages
        self._dynamic = set()  # ops whose bytes depend on data
        self._learned = set()  # keys whose bytes the kernel told (not the meta evaluation)
        self._no_tensor = {}   # func -> returns no tensor (0 bytes, nothing to ask)
        self.meta_evaluations = 0
        self.unpredicted = 0   # ops run without a prediction
        self.mispredicted = 0  # ops that allocated more than predicted

    def before(self, func, args, kwargs, aliases):
        """(key, predicted bytes or None)."""
        none = self._no_tensor.get(func)
        if none is None:
            none = self._no_tensor[func] = not _returns_tensors(func)
        if none or (aliases and all(aliases)):
            return None, 0  # no new storage: a view, in place, or no tensor at all
        cpu = self._cpu
        device = kwargs.get("device") if kwargs else None
        if device is not None:
            if torch.device(device).type != self._device_type:
                return None, 0  # made on another device: not counted
        else:
            tensors = False
            for a in args:
                if isinstance(a, _Tensor):
                    if a.is_cpu != cpu:
                        return None, 0  # another device's: not counted
                    tensors = True
            if not tensors and not cpu:
                return None, 0  # a factory on the default device, the CPU
        if func in self._dynamic:
            self.unpredicted += 1
            return None, None
        key = (func, _sig(args), _sig(tuple(kwargs.items())) if kwargs else None)
        nbytes = self._known.get(key)
        if nbytes is None:
            nbytes = self._meta(func, args, kwargs, aliases)
            if nbytes is None:
                self.unpredicted += 1
            else:
                self._known[key] = nbytes
        return key, nbytes

    def after(self, key, predicted, actual):
        """The op allocated `actual` bytes of new storages."""
        if key is None or actual == predicted:
            return
        if predicted is not None and actual > predicted:
            self.mispredicted += 1
        if predicted is None or key not in self._learned:
            # First sighting, or the meta evaluation's answer was wrong (an
            # op whose schema says new storage but that returns a view, e.g.
            # _unsafe_view): the kernel's answer from now on.
            self._known[key] = actual
            self._learned.add(key)
        else:
            self._dynamic.add(key[0])  # the kernel's own answer changed: data-dependent
            self._known.pop(key, None)

    @property
    def dynamic_ops(self):
        return sorted(f._schema.name for f in self._dynamic)

    def _meta(self, func, args, kwargs, aliases):
        try:
            margs = _to_meta(args)
            mkwargs = {k: _to_meta(v) for k, v in kwargs.items()}
            if "device" in mkwargs or not any(isinstance(a, _Tensor) for a in args):
                if any(a.name == "device" for a in func._schema.arguments):
                    mkwargs["device"] = _META
            if mkwargs.get("pin_memory"):
                mkwargs["pin_memory"] = False
            self.meta_evaluations += 1
            out = func(*margs, **mkwargs)
        except Exception:  # noqa: BLE001 - no meta kernel, data-dependent size
            return None
        outs = out if isinstance(out, (list, tuple)) else (out,)
        single = len(aliases) == 1
        seen, total = set(), 0
        for i, o in enumerate(outs):
            aliased = aliases[0 if single else i] if aliases and (single or i < len(aliases)) \
                else False
            for t in (o if isinstance(o, (list, tuple)) else (o,)):
                if not isinstance(t, _Tensor) or aliased or t.device.type != "meta":
                    continue
                sid = C.storage_id(t)
                if sid not in seen:
                    seen.add(sid)
                    total += C.untyped_storage(t).nbytes()
        return total
