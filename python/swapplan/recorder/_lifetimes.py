"""Storage lifetimes: which recorded storages are alive, and when each dies.

Ground truth is the C++ StorageImpl: the tracker holds a weak reference on
each live storage (``_torch_compat.weak_ref``) and a storage is dead when that
reference has expired — whatever held it (Python tensors, autograd's saved
tensors, engine buffers, .grad) let go. Checking every live storage before
every op is exact but costs O(live) per op. The tracker therefore checks only
*candidates*, found through the Python side:

  Under a TorchDispatchMode every tensor an op returns gets a Python object,
  and PyTorch keeps that object alive for as long as C++ holds the
  TensorImpl ("PyObject preservation"): a Python finalizer on it runs when the
  TensorImpl is destroyed, not when Python drops its last reference. So every
  release of a storage reference by a TensorImpl that went through the
  dispatcher — including autograd's saved copies (``aten::detach`` under a
  mode), which backward drops — shows up as a weakref callback on some tensor
  object the tracker has seen. The callback marks that tensor's storage as a
  candidate; before the next op only candidates are checked.

Things that can release a storage without any tensor object dying — a
``Storage`` object or C++ ``Storage`` handle dropped, a TensorImpl made in C++
without dispatch — are caught by a full check at phase boundaries, at
``step()`` and every ``full_poll_interval_ops`` ops; such frees are counted
(``unsignaled_frees``) because their attribution may be late. With
``poll_every_op`` every live storage is checked before every op.

Costs: per op O(candidates) (plus O(live) / interval amortized); per tensor
argument one dict lookup; one weakref per tensor object seen.
"""

import weakref
from itertools import compress

from .. import _torch_compat as C


class _Watch(weakref.ref):
    __slots__ = ("sid", "oid")


class StorageTracker:
    def __init__(self, poll_every_op, full_poll_interval_ops):
        self.live = {}              # StorageImpl address -> Member
        self.weak = {}              # StorageImpl address -> weak handle (same keys)
        self.live_bytes = 0
        self.poll_every_op = poll_every_op
        self.full_poll_interval_ops = full_poll_interval_ops
        self.unsignaled_frees = 0
        self.unsignaled_free_bytes = 0
        self._watched = {}          # id(tensor object) -> _Watch
        self._dirty = set()
        self._ops_since_full_poll = 0

    # -- tracking -----------------------------------------------------------
    def track(self, sid, member, storage):
        self.live[sid] = member
        self.weak[sid] = C.weak_ref(storage)
        self.live_bytes += member.size

    def watch(self, t, sid):
        """Calls back when tensor object ``t`` (a view of storage ``sid``) dies."""
        oid = id(t)
        old = self._watched.get(oid)
        if old is not None and old.sid == sid:
            return
        w = _Watch(t, self._on_death)
        w.sid, w.oid = sid, oid
        self._watched[oid] = w

    def is_watched(self, t):
        return id(t) in self._watched

    def mark(self, sid):
        """``sid`` may have lost a reference (e.g. its tensor was set_ elsewhere)."""
        self._dirty.add(sid)

    def _on_death(self, w):
        self._dirty.add(w.sid)
        if self._watched.get(w.oid) is w:
            del self._watched[w.oid]

    def end_member(self, sid, free_op):
        """Ends the trace tensor of a storage that is still alive (resize_);
        returns the weak handle so the next member can reuse it."""
        m = self.live.pop(sid)
        m.free_op = free_op
        self.live_bytes -= m.size
        return self.weak.pop(sid)

    # -- detection ----------------------------------------------------------
    def before_op(self, last_op):
        """Frees since the previous op, attributed to ``last_op``."""
        if self.poll_every_op:
            self._collect_all(last_op, count_unsignaled=False)
            return
        if self._dirty:
            self._collect_dirty(last_op)
        self._ops_since_full_poll += 1
        if self._ops_since_full_poll >= self.full_poll_interval_ops:
            self._collect_all(last_op, count_unsignaled=True)

    def full_poll(self, last_op):
        """At phase boundaries, step() and the end."""
        if self._dirty:
            self._collect_dirty(last_op)
        self._collect_all(last_op, count_unsignaled=not self.poll_every_op)

    def _collect_dirty(self, last_op):
        dirty, self._dirty = self._dirty, set()
        weak = self.weak
        for sid in dirty:
            w = weak.get(sid)
            if w is not None and C.expired(w):
                self._free(sid, last_op)

    def _collect_all(self, last_op, count_unsignaled):
        self._ops_since_full_poll = 0
        weak = self.weak
        if not weak:
            return
        dead = list(compress(weak.keys(), map(C.expired, weak.values())))
        for sid in dead:
            m = self._free(sid, last_op)
            if count_unsignaled:
                self.unsignaled_frees += 1
                self.unsignaled_free_bytes += m.size

    def _free(self, sid, last_op):
        m = self.live.pop(sid)
        C.free_weak_ref(self.weak.pop(sid))
        m.free_op = last_op  # -1: died before the first op
        self.live_bytes -= m.size
        return m

    def release(self):
        """Drops every weak reference and watch (end of the recording)."""
        for w in self.weak.values():
            C.free_weak_ref(w)
        self.weak.clear()
        self.live.clear()
        self._watched.clear()
        self._dirty.clear()
