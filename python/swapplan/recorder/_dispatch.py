"""The per-op path of the Recorder (mixed into it): called by the dispatch
mode for every op, in dispatch order.

For op g:
  1. poll: storages that died since op g-1 get FREE at g-1;
  2. inputs: every tensor argument, by storage; a storage never seen before
     (made outside the dispatcher: torch.tensor, from_numpy, a DataLoader
     worker, a paused region) is allocated at g;
  3. the kernel runs (timed, and bracketed for the allocator check, if asked);
  4. outputs: new storages among the results are allocated at g; storages
     the op wrote (in-place self, out=, mutated lists) are listed as outputs
     too; results that merely alias an input (views) are not. A written
     storage whose size changed (resize_) ends one trace tensor at g and
     starts another;
  5. bytes in use during g = live bytes when g started + bytes allocated at g.

Which arguments an op writes and which results alias its inputs come from
the op's schema (alias annotations), computed once per op overload.
"""

import os
import sys
import time

import torch

from .. import _torch_compat as C
from . import _model as M

_Tensor = torch.Tensor
_storage_id = C.storage_id


class DispatchMixin:
    def _describe(self, func):
        # profiler:: ops are instrumentation (record_function ranges, e.g. the
        # one optimizer.step() opens); their "tensors" are handles whose memory
        # is not the allocator's. Not recorded.
        write_pos, write_kw, returns_alias, skip = C.schema_effects(func)
        name_id = -1 if skip else self.recording.intern(func._schema.name)
        info = (name_id, tuple(write_pos), frozenset(write_kw), returns_alias)
        self._op_cache[func] = info
        return info

    def _first_seen(self, t, sid, g, phase, origin):
        """A trace tensor for a storage seen for the first time at op g, or
        None when it is not recorded (other device, no bytes)."""
        if t.device != self.device:
            return None
        storage = C.untyped_storage(t)
        size = storage.nbytes()
        if size == 0:
            return None
        m = self.recording.new_member(size, C.dtype_name(t.dtype), tuple(t.shape),
                                      storage.data_ptr() if self.record_addresses else 0,
                                      origin, g, phase)
        if origin == M.ORIGIN_OUTPUT and self.record_module_names:
            m.name = self._producer_name()  # "" outside modules: the writer's op@it:op
        if self._pending:
            pending = self._pending.pop(sid, None)
            if pending is not None:
                weak, kind, name = pending
                if not C.expired(weak):
                    m.kind = kind
                    m.name = name
                C.free_weak_ref(weak)
        self._tracker.track(sid, m, storage)
        self._op_alloc += size
        return m

    def _producer_name(self):
        """Name of a tensor the op being recorded produces inside a module:
        the dotted path of the innermost running module and the op's short
        name ("layers.3.attn._softmax"); "" outside any module (the root's
        own ops, backward, optimizer), where the writer names it after the
        op and its position ("aten::mm@0:17"). Cached per (module, op)."""
        path = self._phases.module_path()
        if not path:
            return ""
        key = (path, self._producing_op)
        name = self._producer_names.get(key)
        if name is None:
            op = self.recording.op_names[self._producing_op]
            op = op.split("::", 1)[-1].split(".", 1)[0]  # "aten::add.Tensor" -> "add"
            name = self._producer_names[key] = "%s.%s" % (path, op)
        return name

    def _use(self, t, g, phase, forward_input, acc):
        try:
            sid = _storage_id(t)
        except (RuntimeError, NotImplementedError):
            return  # no storage (sparse, ...)
        tracker = self._tracker
        if id(t) not in tracker._watched:
            tracker.watch(t, sid)
        m = tracker.live.get(sid)
        if m is None:
            m = self._first_seen(t, sid, g, phase, M.ORIGIN_FIRST_USE)
            if m is None:
                return
        m.used = True
        if forward_input:
            m.forward_input = True
        acc.append(m.index)

    def _produce(self, t, g, phase, written, listed, acc):
        """Output bookkeeping for tensor ``t``: ``written`` when the op wrote
        into it, ``listed`` when a non-new storage is listed anyway."""
        try:
            sid = _storage_id(t)
        except (RuntimeError, NotImplementedError):
            return
        tracker = self._tracker
        tracker.watch(t, sid)
        m = tracker.live.get(sid)
        if m is None:
            m = self._first_seen(t, sid, g, phase, M.ORIGIN_OUTPUT)
            if m is None:
                return
        elif written:
            storage = C.untyped_storage(t)
            size = storage.nbytes()
            if size != m.size:
                # resize_: the old allocation ends with this op, a new one starts.
                C.free_weak_ref(tracker.end_member(sid, g))
                if size == 0:
                    return
                m = self._first_seen(t, sid, g, phase, M.ORIGIN_OUTPUT)
        elif not listed:
            return
        m.used = True
        acc.append(m.index)

    def _dispatch(self, func, args, kwargs):
        if self._paused:
            return func(*args, **kwargs)
        info = self._op_cache.get(func)
        if info is None:
            info = self._describe(func)
        name_id, write_pos, write_kw, returns_alias = info
        if name_id < 0:
            return func(*args, **kwargs)

        rec = self.recording
        g = rec.num_ops
        self._tracker.before_op(g - 1)
        start_bytes = self._tracker.live_bytes
        self._op_alloc = 0
        phases = self._phases
        phase, micro_batch = phases.op_phase()
        forward_input = phase == M.FORWARD or phases.fwd_depth > 0

        inputs = []
        for a in args:
            if isinstance(a, _Tensor):
                self._use(a, g, phase, forward_input, inputs)
            elif isinstance(a, (list, tuple)):
                for e in a:
                    if isinstance(e, _Tensor):
                        self._use(e, g, phase, forward_input, inputs)
        for k, a in kwargs.items():
            if k in write_kw:
                continue  # out=: written, not read
            if isinstance(a, _Tensor):
                self._use(a, g, phase, forward_input, inputs)
            elif isinstance(a, (list, tuple)):
                for e in a:
                    if isinstance(e, _Tensor):
                        self._use(e, g, phase, forward_input, inputs)

        # Storages of written arguments may lose a reference without any
        # tensor dying (set_ swaps a tensor's storage): check them next time.
        written_sids = self._written_sids(args, kwargs, write_pos, write_kw) if (
            write_pos or write_kw) else None

        allocator = self._allocator
        t0 = time.perf_counter_ns() if self.record_op_durations else 0
        handle = allocator.enter() if allocator is not None else None
        out = None
        failed = True
        try:
            out = func(*args, **kwargs)
            failed = False
        finally:
            if handle is not None:
                allocator.exit(handle)
            duration = time.perf_counter_ns() - t0 if self.record_op_durations else 0
            outputs = []
            self._producing_op = name_id
            if not failed:
                self._outputs(out, args, kwargs, write_pos, write_kw, returns_alias, g, phase,
                              outputs)
            if written_sids:
                for sid in written_sids:
                    self._tracker.mark(sid)
            self._record_op(name_id, phase, micro_batch, inputs, outputs, duration,
                            start_bytes + self._op_alloc)
        return out

    def _written_sids(self, args, kwargs, write_pos, write_kw):
        sids = []
        values = [args[i] for i in write_pos if i < len(args)]
        values.extend(kwargs[k] for k in write_kw if k in kwargs)
        for a in values:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, _Tensor):
                    try:
                        sids.append(_storage_id(t))
                    except (RuntimeError, NotImplementedError):
                        pass
        return sids

    def _outputs(self, out, args, kwargs, write_pos, write_kw, returns_alias, g, phase, acc):
        for i in write_pos:
            if i < len(args):
                a = args[i]
                if isinstance(a, _Tensor):
                    self._produce(a, g, phase, True, True, acc)
                elif isinstance(a, (list, tuple)):
                    for e in a:
                        if isinstance(e, _Tensor):
                            self._produce(e, g, phase, True, True, acc)
        for k in write_kw:
            a = kwargs.get(k)
            if isinstance(a, _Tensor):
                self._produce(a, g, phase, True, True, acc)
            elif isinstance(a, (list, tuple)):
                for e in a:
                    if isinstance(e, _Tensor):
                        self._produce(e, g, phase, True, True, acc)
        if isinstance(out, _Tensor):
            aliased = bool(returns_alias) and returns_alias[0]
            self._produce(out, g, phase, False, not aliased, acc)
        elif isinstance(out, (list, tuple)):
            single = len(returns_alias) == 1  # one Tensor[] return
            for i, r in enumerate(out):
                aliased = returns_alias[0 if single else i] if returns_alias and (
                    single or i < len(returns_alias)) else False
                if isinstance(r, _Tensor):
                    self._produce(r, g, phase, False, not aliased, acc)
                elif isinstance(r, (list, tuple)):
                    for e in r:
                        if isinstance(e, _Tensor):
                            self._produce(e, g, phase, False, not aliased, acc)

    def _record_op(self, name_id, phase, micro_batch, inputs, outputs, duration, during):
        rec = self.recording
        rec.op_name.append(name_id)
        rec.op_phase.append(phase)
        rec.op_inputs.append(tuple(dict.fromkeys(inputs)) if len(inputs) > 1 else tuple(inputs))
        rec.op_outputs.append(tuple(dict.fromkeys(outputs)) if len(outputs) > 1 else
                              tuple(outputs))
        rec.op_micro_batch.append(micro_batch)
        rec.op_layer.append(self._phases.layer() if self.layer_hints else -1)
        rec.op_stack.append(self._call_site() if self.record_call_sites else -1)
        if self.record_op_durations:
            rec.op_duration_ns.append(duration)
        rec.op_during_bytes.append(during)

    def _call_site(self):
        """Stack id of the first Python frame outside torch and this package."""
        f = sys._getframe(2)
        skip = self._skip_code
        while f is not None:
            code = f.f_code
            s = skip.get(code)
            if s is None:
                s = skip[code] = os.path.realpath(code.co_filename).startswith(
                    self._skip_prefixes)
            if not s:
                break
            f = f.f_back
        if f is None:
            return -1
        key = (code, f.f_lineno)
        sid = self._sites.get(key)
        if sid is None:
            sid = self._sites[key] = len(self._site_names)
            self._site_names.append("%s:%d (%s)" % (_short_path(code.co_filename), f.f_lineno,
                                                    code.co_name))
        return sid


def _short_path(filename):
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
