"""The saved-tensor clock: Stable iterations without the per-op dispatch mode
(SwapRuntime(stable_clock="hooks"); docs/runtime-torch.md "The op clock and
its cost").

A Python TorchDispatchMode costs more per ATen op than the op's own dispatch
(bench/runtime_overhead.py), so a runtime that sees every op cannot be cheap.
But an iteration in Stable repeats the op sequence its policy was planned and
executed on, so what the runtime library did in one Stable iteration under
the per-op clock can be replayed against a coarser, cheaper clock: autograd's
saved-tensor events (the pack hook in forward, the unpack hook in backward,
one numbering for both), as torchtune's OffloadActivations, TransformerEngine
and Megatron's offloading do.

Recording (a per-op Stable iteration of one input key: the dtypes and shapes
of the root module's first forward's tensor arguments): every event's
position (ops completed so far), every storage's first pack event, every
release and restore the library made (the op position of the callback), and
per op a resident bound (bytes in use after op_begin plus the op's new bytes:
the meter's post-kernel sample). The iteration is captured when it had no
passive swap, no use while off device, no OOM, no drop or recomputation, and
every storage released was packed and restored within it.

Snapping (positions = ops completed; one item, released at r, restored at s
in the recorded iteration, its first use after s at u >= s):

    ops        0 ........ r ......... s ...... u
    recorded   |--------- |off device |--------|
    events        P1   P2   P3       U7  U8  U9      (P pack, U unpack)
    replayed   |------------|off dev.|-----------|
                            ^ first event >= r     ^ last event <= s
                              (and >= its pack)       (and after the release)

A release moves later and a restore earlier, so the item's bytes stay
resident over [r, first event) and [last event, s); an item with no event in
between stays resident. The schedule is taken only when the recorded bound
plus those bytes stays within the budget at every op: then, as long as the
iteration repeats, the measured residency does too. Otherwise the key stays
on the per-op clock (stats["hook_rejections"], the reason in
stats["hook_last_rejection"]).

Replaying (a hook iteration): the dispatch mode is off from the iteration's
start to its end; each event runs the actions due there — grab the packed
storage (its bytes checked against the recording), copy it out and free it,
allocate it and copy it back (device="cpu": ctypes memmove through host
buffers allocated once per schedule, never seen by PyTorch; device="cuda":
_cuda.CudaSwapper's stream-ordered copies, the consumer waiting at the
unpack). A divergence (a packed storage of another size, another event
count, an unpack of a storage still off the device) restores what is off the
device, drops the key's schedule and is counted; the rest of that iteration
runs without swaps, and the key's next iteration runs on the per-op clock.

Cost: per event one Python call and a dict lookup; per item two copies.
Capture: O(events + ops + items log events). Threading: the training thread
(and autograd's backward thread on CUDA, which runs while the training
thread waits: the GIL orders them); no locks.
"""

import ctypes

from .. import _torch_compat as C
from . import _lib as L

_OUT, _IN, _GRAB, _WRAP = 0, 1, 2, 3


class _Packed:
    """What the pack hook returns for a scheduled storage: the tensor (as
    autograd would keep it) and the schedule's slot."""
    __slots__ = ("t", "slot", "schedule")

    def __init__(self, t, slot, schedule):
        self.t = t
        self.slot = slot
        self.schedule = schedule


class Schedule:
    """One key's replayable iteration: per event index the actions due."""

    def __init__(self, at, nbytes, shapes, checked_peak_bytes, resident_items):
        self.at = at                    # event index -> ((action, slot), ...)
        self.shapes = shapes            # per event: the packed tensor's shape (None: unpack)
        events = len(shapes)
        self.nbytes = nbytes            # per slot: the storage's bytes
        self.events = events            # the recorded iteration's event count
        self.checked_peak_bytes = checked_peak_bytes
        self.resident_items = resident_items  # recorded swaps kept resident (no event between)
        self.host = [None] * len(nbytes)      # device="cpu": a host buffer per slot, once
        self.storage = [None] * len(nbytes)   # this iteration: the grabbed storage
        self.off = [None] * len(nbytes)       # this iteration: off the device (a copy token)
        self.fill = [None] * len(nbytes)      # device="cuda": the copy back a use waits for
        self.stream = [None] * len(nbytes)    # device="cuda": the stream current at its pack


def snap(events, shapes, packs, actions, bound, budget):
    """The schedule of one recorded iteration, or (None, reason).

    events: per event its position; shapes: per event the packed tensor's
    shape (None for an unpack); packs: sid -> (pack events, nbytes);
    actions: (position, _OUT or _IN, sid) in call order; bound: per op the
    resident bytes during it. Each window is snapped by the library's rule
    (swapplan_rt_snap_saved_window: policy/saved_tensor_clock.h, the
    simulator's --clock saved-tensors). Worked example in
    python/runtime_tests/test_hookclock.py."""
    n = len(events)
    out_at, items = {}, []
    for pos, kind, sid in actions:
        if kind == _OUT:
            if sid in out_at:
                return None, "storage %d released twice" % sid
            out_at[sid] = pos
        else:
            r = out_at.pop(sid, None)
            if r is None:
                return None, "storage %d restored without a release" % sid
            items.append((sid, r, pos))
    if out_at:
        return None, "%d storages released and not restored in the iteration" % len(out_at)
    extra = [0] * (len(bound) + 1)

    def keep(a, b, nbytes):  # resident over ops [a, b) beyond the recording
        if a < b:
            extra[min(a, len(bound))] += nbytes
            extra[min(b, len(bound))] -= nbytes

    lib = L.load()
    ev = (ctypes.c_int32 * max(n, 1))(*events)
    out_ev, in_ev = ctypes.c_int32(), ctypes.c_int32()
    out_ref, in_ref = ctypes.byref(out_ev), ctypes.byref(in_ev)
    at, nbytes, kept = {}, [], 0
    for sid, r, s in items:
        p = packs.get(sid)
        if p is None:
            return None, "storage %d is swapped but never saved for backward" % sid
        pack_events, size = p
        first_pack = pack_events[0]
        # The rule is the library's (the simulator's --clock saved-tensors).
        L.check(lib, lib.swapplan_rt_snap_saved_window(
            ev, n, first_pack, r, s, out_ref, in_ref), "snap_saved_window")
        e_out, e_in = out_ev.value, in_ev.value
        if e_out < 0:
            keep(r, s, size)
            kept += 1
            continue
        keep(r, events[e_out], size)
        keep(events[e_in], s, size)
        slot = len(nbytes)
        nbytes.append(size)
        at.setdefault(first_pack, []).append((_GRAB, slot))
        for e in pack_events[1:]:  # other saved views of it: their uses wait too
            at.setdefault(e, []).append((_WRAP, slot))
        at.setdefault(e_out, []).append((_OUT, slot))
        at.setdefault(e_in, []).append((_IN, slot))
    peak, run = 0, 0
    for k, b in enumerate(bound):
        run += extra[k]
        peak = max(peak, b + run)
    if peak > budget:
        return None, ("replayed on saved-tensor events the peak would be %d bytes, over the "
                      "budget of %d" % (peak, budget))
    # Within one event: grab (or wrap) before release before restore.
    order = {_GRAB: 0, _WRAP: 0, _OUT: 1, _IN: 2}
    frozen = {e: tuple(sorted(a, key=lambda x: (order[x[0]], x[1]))) for e, a in at.items()}
    return Schedule(frozen, nbytes, list(shapes), peak, kept), None


class HostCopies:
    """device="cpu": synchronous copies through host buffers PyTorch never
    sees (the meter counts every storage an op touches)."""

    def stream(self):
        return None

    def out(self, schedule, slot, storage):
        """Copies the bytes out and frees them; returns the copy token."""
        n = schedule.nbytes[slot]
        buf = schedule.host[slot]
        if buf is None:
            buf = schedule.host[slot] = (ctypes.c_ubyte * n)()
        ctypes.memmove(buf, storage.data_ptr(), n)
        storage.resize_(0)
        return True

    def back(self, schedule, slot, storage, token):
        """Allocates and fills the storage; returns what a use waits for."""
        storage.resize_(schedule.nbytes[slot])
        ctypes.memmove(storage.data_ptr(), schedule.host[slot], schedule.nbytes[slot])
        return None

    def wait(self, fill):
        pass


class CudaCopies:
    """device="cuda": _cuda.CudaSwapper (copy after an event on the producing
    stream, stream-ordered free; allocate on the consumer's stream, fill on the
    H2D stream, the consumer waits at the unpack)."""

    def __init__(self, swapper):
        self.swapper = swapper

    def stream(self):
        """At the pack: the stream of the op saving the tensor, which wrote
        it or read it last so far (the copy out follows its work)."""
        return self.swapper.cuda.current_stream()

    def out(self, schedule, slot, storage):
        sw = self.swapper.swap_out(storage, schedule.stream[slot])
        self.swapper.release(sw)
        return sw

    def back(self, schedule, slot, storage, swap):
        self.swapper.allocate(swap)
        self.swapper.fill(swap)
        return swap

    def wait(self, swap):
        self.swapper.wait_filled(swap)


class HookClock:
    """Recording in per-op Stable iterations, replay in hook iterations; the
    saved-tensor hooks are installed for the whole with-block."""

    def __init__(self, copies, same_stream=None):
        self.copies = copies
        # device="cuda": sid -> whether its last write was on the stream
        # current at its first pack (the stream the replay orders it by).
        self.same_stream = same_stream
        self.schedules = {}       # input key -> Schedule
        self.event = 0            # this iteration's events so far
        self.active = None        # the Schedule being replayed
        self.draining = None      # a diverged one: its storages come back at their use
        self.recording = False
        self.pos = None           # callable: ops completed (per-op iterations)
        # Per-op iterations: sink(unpack, tensor) gets every event (the
        # runtime's execution record); None in hook iterations.
        self.sink = None
        self._hooks = None
        self.reset_recording()
        self.iterations = 0
        self.swaps = 0
        self.bytes_moved = 0
        self.divergences = 0
        self.late_restores = 0
        self.rejections = 0
        self.last_rejection = None

    def reset_recording(self):
        self.ev_pos = []
        self.ev_shape = []
        self.packs = {}
        self.cross_stream = set()
        self.actions = []
        self.bound = []

    # --------------------------------------------------- saved-tensor hooks
    def install(self):
        import torch
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()

    def uninstall(self):
        if self._hooks is not None:
            self._hooks.__exit__(None, None, None)
            self._hooks = None

    def _pack(self, t):
        e = self.event
        self.event = e + 1
        s = self.active
        if s is not None:
            if e >= s.events or t.shape != s.shapes[e]:
                was = "no event" if e >= s.events else (
                    "an unpack" if s.shapes[e] is None else "shape %s" % (tuple(s.shapes[e]),))
                self.diverge("saved tensor %d: shape %s where the recording has %s"
                             % (e, tuple(t.shape), was))
                return t
            a = s.at.get(e)
            if a is not None:
                return self._run(s, a, t)
            return t
        if self.sink is not None:
            self.sink(False, t)
        if self.recording:
            self.ev_pos.append(self.pos())
            self.ev_shape.append(t.shape)
            try:
                sid = C.storage_id(t)
            except (RuntimeError, NotImplementedError):
                return t
            p = self.packs.get(sid)
            if p is None:
                self.packs[sid] = ([e], C.untyped_storage(t).nbytes())
                if self.same_stream is not None and not self.same_stream(sid):
                    self.cross_stream.add(sid)
            else:
                p[0].append(e)
        return t

    def _unpack(self, x):
        e = self.event
        self.event = e + 1
        s = self.active
        if s is not None:
            if e >= s.events or s.shapes[e] is not None:
                self.diverge("event %d: an unpack where the recording has %s" % (
                    e, "no event" if e >= s.events else "a pack"))
            else:
                a = s.at.get(e)
                if a is not None:
                    self._run(s, a, None)
        else:
            if self.sink is not None:
                self.sink(True, x.t if x.__class__ is _Packed else x)
            if self.recording:
                self.ev_pos.append(self.pos())
                self.ev_shape.append(None)
        if x.__class__ is _Packed:
            return self._use(x)
        return x

    # ------------------------------------------------------------- replay
    def _run(self, s, actions, t):
        packed = t
        for kind, slot in actions:
            if kind == _GRAB:
                st = C.untyped_storage(t)
                if st.nbytes() != s.nbytes[slot]:
                    self.diverge("a saved storage of %d bytes where %d were recorded"
                                 % (st.nbytes(), s.nbytes[slot]))
                    return t
                s.storage[slot] = st
                s.stream[slot] = self.copies.stream()
                packed = _Packed(t, slot, s)
            elif kind == _WRAP:
                packed = _Packed(t, slot, s)
            elif kind == _OUT:
                st = s.storage[slot]
                if st is not None and s.off[slot] is None:
                    s.off[slot] = self.copies.out(s, slot, st)
                    self.swaps += 1
                    self._moved(s, slot)
            else:
                self._back(s, slot)
        return packed

    def _back(self, s, slot):
        token = s.off[slot]
        if token is None:
            return
        s.fill[slot] = self.copies.back(s, slot, s.storage[slot], token)
        s.off[slot] = None
        s.storage[slot] = None   # held no longer than autograd holds it
        self._moved(s, slot)

    def _moved(self, s, slot):
        """One copy of a slot's bytes, either way."""
        self.bytes_moved += s.nbytes[slot]

    def _use(self, x):
        s, slot = x.schedule, x.slot
        if s.off[slot] is not None:
            # Unpacked while off the device: brought back for its use (after
            # a divergence, how every storage still out comes back).
            if s is self.active:
                self.late_restores += 1
            self._back(s, slot)
        f = s.fill[slot]
        if f is not None:
            self.copies.wait(f)
            s.fill[slot] = None
        return x.t

    def begin_hook_iteration(self, schedule):
        self.active = schedule
        self.event = 0
        self.iterations += 1

    def end_hook_iteration(self):
        """Restores what is still off the device; a wrong event count is a
        divergence. Returns True when the iteration repeated the recording."""
        s = self.active
        ok = s is not None and self.event == s.events
        if s is not None and not ok:
            self.diverge("%d saved-tensor events where %d were recorded" % (self.event, s.events))
        self._clear(s)
        self._clear(self.draining)
        self.active = self.draining = None
        self.event = 0
        return ok

    def diverge(self, why):
        """The iteration is not the recorded one: no further action of the
        schedule runs; what is off the device stays there until its unpack
        brings it back (or the iteration's end); the key is recorded anew."""
        s = self.active
        self.divergences += 1
        self.last_rejection = "divergence: " + why
        for key, v in list(self.schedules.items()):
            if v is s:
                del self.schedules[key]
        self.draining = s
        self.active = None

    def _clear(self, s):
        if s is None:
            return
        for slot in range(len(s.nbytes)):
            self._back(s, slot)
            if s.fill[slot] is not None:
                self.copies.wait(s.fill[slot])
            s.fill[slot] = None
            s.storage[slot] = None
            s.stream[slot] = None

    # ---------------------------------------------------------- recording
    def begin_recording(self, pos):
        self.reset_recording()
        self.pos = pos
        self.recording = True
        self.event = 0

    def action(self, pos, kind, sid):
        if self.recording:
            self.actions.append((pos, kind, sid))

    def capture(self, key, clean, budget):
        """Ends a recording: the key's schedule when the iteration was clean
        (module docstring) and its snapped peak fits."""
        self.recording = False
        if not clean:
            self.reset_recording()
            return None
        crossed = [sid for _, _, sid in self.actions if sid in self.cross_stream]
        if crossed:
            self.rejections += 1
            self.last_rejection = ("storage %d is saved on another stream than the one that "
                                   "wrote it" % crossed[0])
            self.reset_recording()
            return None
        sched, why = snap(self.ev_pos, self.ev_shape, self.packs, self.actions, self.bound,
                          budget)
        self.reset_recording()
        if sched is None:
            self.rejections += 1
            self.last_rejection = why
            return None
        self.schedules[key] = sched
        return sched

    def stats(self):
        """rt.stats' hook_* keys (NO_HOOK_STATS when the clock is off)."""
        return {"hook_iterations": self.iterations, "hook_swaps": self.swaps,
                "hook_bytes_moved": self.bytes_moved, "hook_schedules": len(self.schedules),
                "hook_divergences": self.divergences, "hook_late_restores": self.late_restores,
                "hook_rejections": self.rejections, "hook_last_rejection": self.last_rejection,
                "hook_checked_peak_bytes": max(
                    [s.checked_peak_bytes for s in self.schedules.values()], default=None)}


# rt.stats' hook_* keys with stable_clock="dispatch".
NO_HOOK_STATS = {"hook_iterations": 0, "hook_swaps": 0, "hook_bytes_moved": 0,
                 "hook_schedules": 0, "hook_divergences": 0, "hook_late_restores": 0,
                 "hook_rejections": 0, "hook_last_rejection": None,
                 "hook_checked_peak_bytes": None}
