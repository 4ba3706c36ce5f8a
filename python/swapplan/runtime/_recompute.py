"""Recipes: what SwapRuntime keeps to re-run the ATen op that produced a
storage, for the runtime's RECOMPUTE items (docs/runtime.md,
"Recomputation").

Per storage an op created (a fresh output, not an alias of an input), a
recipe holds the op (its OpOverload), its arguments with every tensor
replaced by a reference to its storage (the storage tracker's member, the
view's size / stride / offset / dtype) and the member's write count, the
output's position and view, and, for an op tagged
``nondeterministic_seeded`` (dropout, randn, bernoulli), the generator
states (the CPU's, and on a CUDA runtime the CUDA device's: _cuda.RngStates)
taken just before the op ran (SwapRuntime therefore declares
rng_state_restorable to the runtime, which writes it into the execution
record, so planners may recompute random ops). No recipe (the storage is not
recomputable; the runtime swaps it instead) for an op that writes an input
or returns an alias (its schema's alias_info), an ``empty*`` factory (its
bytes are whatever the allocator held), an op given an explicit
``torch.Generator`` (its state is not saved), or an op of a storage written later
(the write count moved). Keeping a recipe keeps no input alive.

The runtime asks ``can_recompute(sid)`` when it matches a RECOMPUTE item,
before anything is dropped. Yes needs: the recipe, no write to the storage
since it was made, and every input storage alive, unwritten since, and
either holding its bytes or itself recomputable (a chain). On yes the
inputs are pinned (strong references, which the runtime counts as device
memory as long as they live) until the storage has been recomputed or dies,
so they cannot die in between. When the runtime later frees the bytes of a
pinned input (its own drop or swap-out), ``may_free`` pins that input's own
inputs too, so it can be recomputed into a temporary; if it cannot be, the
free is refused (release code 3: the runtime keeps it resident). ``recompute(sid, ptr)`` re-runs the op under
no_grad with SwapRuntime's dispatch interception paused, with
the saved generator states set and the current ones put back afterwards
(RngStates.applied, as ``torch.random.fork_rng``: the global stream carries on as if nothing ran), checks the result's shape and dtype
against the recorded view and copies it into a fresh tensor over the
restored storage (never into a tensor autograd saved: no version bump). An
input whose bytes are off the device (dropped, or swapped) is recomputed
into a temporary from its own recipe. Those temporaries are real device
memory: ``workspace_bytes(sid)`` tells the runtime, before the re-run, the
most of them alive at once (swapplan_runtime.h recompute_workspace_bytes),
so that it makes room for them and counts them, as a device allocator
would.
"""

import time

import torch

from .. import _torch_compat as C

from ._cuda import RngStates

_EMPTY = ("aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
          "aten::new_empty_strided")
_SEEDED = getattr(torch, "Tag", None) and getattr(torch.Tag, "nondeterministic_seeded", None)


class _Ref:
    """A tensor argument: the view of a tracked storage."""
    __slots__ = ("sid", "member", "writes", "size", "stride", "offset", "dtype")

    def __init__(self, sid, member, t):
        self.sid = sid
        self.member = member
        self.writes = member.writes
        self.size = tuple(t.shape)
        self.stride = tuple(t.stride())
        self.offset = t.storage_offset()
        self.dtype = t.dtype


class _Recipe:
    __slots__ = ("func", "args", "kwargs", "index", "view", "rng", "member", "pins",
                 "alloc_bytes")

    def __init__(self, func, args, kwargs, index, view, rng, member, alloc_bytes):
        self.func = func
        self.args = args
        self.kwargs = kwargs
        self.index = index  # position of the output (-1: the op returns one tensor)
        self.view = view    # a _Ref of the output itself
        self.rng = rng
        self.member = member
        self.pins = None    # {sid: storage} while the runtime may recompute it
        # The bytes of every new storage the op allocated when it ran (all
        # its outputs): what a re-run computed aside allocates again.
        self.alloc_bytes = alloc_bytes


def eligible(func, write_pos, write_kw, aliases):
    """Whether outputs of `func` can get recipes (schema-level checks)."""
    if write_pos or write_kw or any(aliases):
        return False
    return func._schema.name not in _EMPTY


def seeded(func):
    return _SEEDED is not None and _SEEDED in func.tags


class Recipes:
    """The recipes of the live storages of one SwapRuntime."""

    def __init__(self, tracker, storage_of, rng=None):
        self._tracker = tracker
        # The generator states (_cuda.RngStates: CPU, and CUDA on a CUDA
        # runtime) a seeded op's recipe keeps and its re-run restores.
        self.rng = rng if rng is not None else RngStates()
        self._storage_of = storage_of  # sid -> a strong UntypedStorage or None
        self._by_sid = {}
        self.recomputed = 0         # storages recomputed
        self.recomputed_seeded = 0  # of which by a random op (generator state restored)
        self.recomputed_via_copy = 0  # of which computed aside, then copied in (no out= overload)
        self.refused = 0            # can_recompute answered no
        self.kept = 0               # frees refused: a pinned input with no way back
        self.recompute_ns = 0       # wall time in recompute (re-run, checks, copy)
        self.workspace_peak_bytes = 0  # the largest workspace_bytes answer
        self._pinned = {}           # sid -> recipes pinning it

    # -- recording (on the dispatch path) --------------------------------
    def record(self, func, args, kwargs, out, new_outputs, rng):
        """Keeps a recipe per new output storage of the op that just ran.
        new_outputs: (tensor, sid) registered by this op."""
        live = self._tracker.live
        try:
            a = _refs(args, live)
            k = _refs(kwargs, live)
        except _Unrecordable:
            return
        alloc = sum(live[sid].size for _, sid in new_outputs if sid in live)
        for t, sid in new_outputs:
            index = -1
            if not isinstance(out, torch.Tensor):
                index = next((i for i, o in enumerate(out) if o is t), None)
                if index is None:
                    continue
            m = live.get(sid)
            if m is None:
                continue
            self._by_sid[sid] = _Recipe(func, a, k, index, _Ref(sid, m, t), rng, m, alloc)

    def forget(self, sid):
        r = self._by_sid.pop(sid, None)
        if r is not None:
            self._unpin(r)

    def may_free(self, sid):
        """Whether the runtime may free the bytes of `sid` (a swap-out's or a
        drop's release). A storage a pending recomputation needs may go only
        if it can itself be recomputed later: its own inputs are pinned now.
        Otherwise the free is refused (the runtime keeps it resident)."""
        if sid not in self._pinned:
            return True
        r = self._valid(sid, 0)
        pins = {}
        if r is None or not self._pin(r, pins, 0):
            self.kept += 1
            return False
        self._set_pins(r, pins)
        return True

    # -- the runtime's questions -----------------------------------------
    def can_recompute(self, sid):
        r = self._valid(sid, 0)
        if r is None:
            self.refused += 1
            return False
        pins = {}
        if not self._pin(r, pins, 0):
            self.refused += 1
            return False
        self._set_pins(r, pins)
        return True

    def workspace_bytes(self, sid):
        """The most bytes recompute(sid) holds at once besides the restored
        storage itself, given what is resident now (the runtime makes room
        for them and counts them while it runs): 0 through an out=
        overload with every input resident; else the op's outputs computed
        aside (all of them: the other outputs of a multi-output op live until
        it returns) and, per input off the device, its own recomputation
        into a temporary (its peak, then its storage, kept until the op
        ran; plus a copy when the input is a view of another shape). Follows
        recompute() step by step: materialised arguments in order, each
        temporary alive until the op returns."""
        r = self._by_sid.get(sid)
        if r is None:
            return 0
        into = r.index < 0 and _out_overload(r.func) is not None
        nbytes = self._peak(r, 0, into)
        self.workspace_peak_bytes = max(self.workspace_peak_bytes, nbytes)
        return nbytes

    def _peak(self, r, depth, into_target):
        held = peak = 0  # temporaries of the arguments so far; the most at once
        for ref in _iter_refs((r.args, r.kwargs)):
            s = self._storage_of(ref.sid)
            if s is None or s.nbytes() >= ref.member.size:
                continue  # resident: a view over its own storage, no bytes
            inner = self._valid(ref.sid, depth + 1)
            if inner is None:
                continue  # recompute() fails on it before allocating more
            peak = max(peak, held + self._peak(inner, depth + 1, False))
            same = (inner.view.size == ref.size and inner.view.stride == ref.stride and
                    inner.view.offset == ref.offset)
            if not same:  # the full storage beside the computed view, then it goes
                peak = max(peak, held + 2 * ref.member.size)
            held += ref.member.size
        return max(peak, held + (0 if into_target else r.alloc_bytes))

    def recompute(self, sid, ptr):
        r = self._by_sid.get(sid)
        if r is None or r.pins is None:
            raise RuntimeError("storage %#x: no pinned recipe to recompute it" % sid)
        t0 = time.perf_counter_ns()
        storage = self._storage_of(sid)
        if storage is None or storage.data_ptr() != ptr:
            raise RuntimeError("storage %#x: not restored at the address the runtime gave" % sid)
        v = r.view
        target = torch.empty(0, dtype=v.dtype, device=storage.device).set_(
            storage, v.offset, v.size, v.stride)
        # Into the restored storage through the op's out= overload where it
        # has one (no temporary: the device holds the bytes the runtime made
        # room for, nothing more); else computed, then copied in.
        if not self._run_into(r, target):
            value = self._run(r, 0)
            if tuple(value.shape) != v.size or value.dtype != v.dtype:
                raise RuntimeError("storage %#x: %s recomputed a %s %s tensor, recorded %s %s" % (
                    sid, r.func._schema.name, tuple(value.shape), value.dtype, v.size, v.dtype))
            with torch.no_grad():
                target.copy_(value)
            del value
            self.recomputed_via_copy += 1
        self._unpin(r)
        self.recompute_ns += time.perf_counter_ns() - t0
        self.recomputed += 1
        if r.rng is not None:
            self.recomputed_seeded += 1

    # -- internals -------------------------------------------------------
    def _set_pins(self, r, pins):
        self._unpin(r)
        r.pins = pins
        for s in pins:
            self._pinned[s] = self._pinned.get(s, 0) + 1

    def _unpin(self, r):
        if r.pins is None:
            return
        for s in r.pins:
            n = self._pinned.get(s, 0) - 1
            if n > 0:
                self._pinned[s] = n
            else:
                self._pinned.pop(s, None)
        r.pins = None

    def _valid(self, sid, depth):
        r = self._by_sid.get(sid)
        if r is None or depth > 64:
            return None
        if self._tracker.live.get(sid) is not r.member or r.member.writes != r.view.writes:
            return None
        return r

    def _pin(self, r, pins, depth):
        """Strong references to every storage `r` needs (recursively for
        inputs without their bytes); False when one is gone or written."""
        for ref in _iter_refs((r.args, r.kwargs)):
            if ref.sid in pins:
                continue
            if self._tracker.live.get(ref.sid) is not ref.member or ref.member.writes != ref.writes:
                return False
            s = self._storage_of(ref.sid)
            if s is None:
                return False
            pins[ref.sid] = s
            if s.nbytes() < ref.member.size:  # off the device: needs its own recipe
                inner = self._valid(ref.sid, depth + 1)
                if inner is None or not self._pin(inner, pins, depth + 1):
                    return False
        return True

    def _tensor(self, ref, depth):
        s = self._storage_of(ref.sid)
        if s is None or self._tracker.live.get(ref.sid) is not ref.member or \
                ref.member.writes != ref.writes:
            raise RuntimeError("storage %#x, an input of a recomputation, is gone or was "
                               "written" % ref.sid)
        if s.nbytes() < ref.member.size:
            inner = self._valid(ref.sid, depth + 1)
            if inner is None:
                raise RuntimeError("storage %#x, an input of a recomputation, is off the device "
                                   "and not recomputable" % ref.sid)
            full = self._run(inner, depth + 1)
            if inner.view.size == ref.size and inner.view.stride == ref.stride and \
                    inner.view.offset == ref.offset:
                return full
            base = torch.empty(ref.member.size // full.element_size(), dtype=full.dtype,
                               device=full.device)
            base.as_strided(inner.view.size, inner.view.stride, inner.view.offset).copy_(full)
            return base.as_strided(ref.size, ref.stride, ref.offset)
        return torch.empty(0, dtype=ref.dtype, device=s.device).set_(s, ref.offset, ref.size,
                                                                     ref.stride)

    def _run_into(self, r, target):
        """Runs `r`'s op writing `target` through its out= overload; False
        (nothing written) when it has no matching one."""
        out_op = _out_overload(r.func) if r.index < 0 else None
        if out_op is None:
            return False
        op, name = out_op
        args = _materialise(r.args, lambda ref: self._tensor(ref, 0))
        kwargs = _materialise(r.kwargs, lambda ref: self._tensor(ref, 0))
        kwargs[name] = target
        with torch.no_grad():
            if r.rng is None:
                op(*args, **kwargs)
            else:
                with self.rng.applied(r.rng):
                    op(*args, **kwargs)
        return True

    def _run(self, r, depth):
        args = _materialise(r.args, lambda ref: self._tensor(ref, depth))
        kwargs = _materialise(r.kwargs, lambda ref: self._tensor(ref, depth))
        with torch.no_grad():
            if r.rng is None:
                out = r.func(*args, **kwargs)
            else:
                with self.rng.applied(r.rng):
                    out = r.func(*args, **kwargs)
        return out if r.index < 0 else out[r.index]


_OUT_OVERLOADS = {}


def _out_overload(func):
    """(the .out overload of `func`, its out argument's name) when it takes
    exactly func's arguments plus one written out tensor; else None."""
    if func in _OUT_OVERLOADS:
        return _OUT_OVERLOADS[func]
    found = None
    op = getattr(func.overloadpacket, "out", None)
    if op is not None and len(func._schema.returns) == 1:
        outs = [a.name for a in op._schema.arguments
                if a.alias_info is not None and a.alias_info.is_write]
        rest = [a.name for a in op._schema.arguments if a.name not in outs]
        if len(outs) == 1 and rest == [a.name for a in func._schema.arguments]:
            found = (op, outs[0])
    _OUT_OVERLOADS[func] = found
    return found


class _Unrecordable(Exception):
    pass


def _refs(value, live):
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu" or value.is_sparse:
            raise _Unrecordable()
        sid = C.storage_id(value)
        m = live.get(sid)
        if m is None:
            raise _Unrecordable()
        return _Ref(sid, m, value)
    if isinstance(value, torch.Generator):
        # Only the default generators' states are saved and restored: an
        # op drawing from its own generator would not repeat its numbers.
        raise _Unrecordable()
    if isinstance(value, (list, tuple)):
        return type(value)(_refs(v, live) for v in value)
    if isinstance(value, dict):
        return {k: _refs(v, live) for k, v in value.items()}
    return value


def _iter_refs(value):
    if isinstance(value, _Ref):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _iter_refs(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _iter_refs(v)


def _materialise(value, tensor_of):
    if isinstance(value, _Ref):
        return tensor_of(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_materialise(v, tensor_of) for v in value)
    if isinstance(value, dict):
        return {k: _materialise(v, tensor_of) for k, v in value.items()}
    return value
