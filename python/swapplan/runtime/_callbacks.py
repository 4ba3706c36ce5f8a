"""The framework callbacks of SwapRuntime (swapplan_runtime.h
swapplan_rt_framework): called by the runtime library on the training thread
to hold, release (``storage.resize_(0)``), restore (``resize_(nbytes)``; an
out-of-memory error there is answered SWAPPLAN_RT_OUT_OF_MEMORY, so the
runtime makes room and retries),
copy (device="cuda": _cuda.FrameworkCopies, stream-ordered) and recompute
storages, and to ask the policy provider. A callback never raises
across the C boundary: the exception is kept in ``_callback_error`` and
raised by the caller after the C call returns."""

import ctypes

from .. import _torch_compat as C

import torch

_new_with_weak_ptr = torch.UntypedStorage._new_with_weak_ptr


class Callbacks:
    """Mixed into SwapRuntime (runtime.py), whose state it uses."""

    # Framework callbacks (called by the runtime on this thread).
    def _cb_hold(self, user, sid):
        try:
            w = self._tracker.weak.get(sid)
            if w is None or C.expired(w):
                return 2  # gone: its free is not reported yet
            s = _new_with_weak_ptr(w)
            if s is None:
                return 2
            self._held[sid] = s
            return 0
        except BaseException as e:  # noqa: BLE001 - never across the C boundary
            self._callback_error = e
            return 1

    def _cb_release(self, user, sid, free_memory):
        try:
            s = self._held.pop(sid, None)
            if free_memory:
                if not self._recipes.may_free(sid):
                    return 3  # a pending recomputation needs its bytes
                if s is None:
                    s = _new_with_weak_ptr(self._tracker.weak[sid])
                try:
                    if self._copies is None:
                        s.resize_(0)
                    else:  # CUDA: in stream order after the copy (_cuda.py)
                        self._copies.release(sid, s, self._stream_of(sid))
                except RuntimeError as e:
                    if "not resizable" in str(e):
                        return 3  # memory PyTorch does not own (from_numpy, shared)
                    raise
                m = self._tracker.live.get(sid)
                if m is not None:
                    m.ptr = 0
                if self._hookclock is not None:
                    self._hookclock.action(self._cbpos, 0, sid)  # _hookclock._OUT
            return 0
        except BaseException as e:  # noqa: BLE001
            self._callback_error = e
            return 1

    def _cb_restore(self, user, sid, nbytes, out):
        try:
            s = self._held.get(sid)
            if s is None:
                s = _new_with_weak_ptr(self._tracker.weak[sid])
            if self._copies is None:
                s.resize_(nbytes)
            else:  # CUDA: on the consumer's stream (_cuda.py)
                self._copies.restore(sid, s, nbytes)
            self._held[sid] = s
            ptr = s.data_ptr()
            m = self._tracker.live.get(sid)
            if m is not None:
                m.ptr = ptr
            out[0] = ptr
            if self._hookclock is not None:
                self._hookclock.action(self._cbpos, 1, sid)  # _hookclock._IN
            return 0
        except BaseException as e:  # noqa: BLE001
            if self._oom is not None and isinstance(e, self._oom):
                # The device allocator had no block (device="cuda"): the
                # runtime swaps out nbytes (Algorithm 3) and asks once more,
                # then fails the call as out of memory (SwapOutOfMemory).
                self.restore_oom_errors += 1
                return 3  # SWAPPLAN_RT_OUT_OF_MEMORY
            self._callback_error = e
            return 1

    def _cb_copy(self, user, sid, action, nbytes):
        """Framework copies (device="cuda"): _cuda.FrameworkCopies."""
        try:
            s = self._held.get(sid)
            if s is None:
                s = self._storage_of(sid)
            self._copies.copy(sid, s, action, self._stream_of(sid))
            return 0
        except BaseException as e:  # noqa: BLE001
            self._callback_error = e
            return 1

    def _stream_of(self, sid):
        m = self._tracker.live.get(sid)
        return None if m is None else m.stream

    def _storage_of(self, sid):
        w = self._tracker.weak.get(sid)
        if w is None or C.expired(w):
            return None
        return _new_with_weak_ptr(w)

    def _cb_can_recompute(self, user, sid):
        try:
            return 1 if self._recipes.can_recompute(sid) else 0
        except BaseException as e:  # noqa: BLE001
            self._callback_error = e
            return 0

    def _cb_recompute(self, user, sid, ptr):
        try:
            self._paused += 1  # the re-run op is not an op of the iteration
            try:
                self._recipes.recompute(sid, ptr or 0)
            finally:
                self._paused -= 1
            return 0
        except BaseException as e:  # noqa: BLE001
            self._callback_error = e
            return 1

    def _cb_recompute_workspace(self, user, sid):
        try:
            return self._recipes.workspace_bytes(sid)
        except BaseException as e:  # noqa: BLE001
            self._callback_error = e
            return -1

    def _recompute_for_test(self, sid):
        """Recomputes a resident storage in place (tests: the recompute
        callback's path without a drop)."""
        self._paused += 1
        try:
            self._recipes.recompute(sid, self._storage_of(sid).data_ptr())
        finally:
            self._paused -= 1

    def _cb_provider(self, user, request, out, capacity):
        r = request.contents
        req = {"record_path": r.record_path.decode(), "iteration": r.iteration,
               "runtime_iteration": r.runtime_iteration,
               "device_budget_bytes": r.device_budget_bytes, "work_dir": r.work_dir.decode(),
               "input_signature_hash": r.input_signature_hash,
               "input_signature_bytes": r.input_signature_bytes,
               "observed_record_paths": [r.observed_record_paths[k].decode()
                                         for k in range(r.num_observed_records)]}
        try:
            path = self.provider(req) or ""
            if path:
                self.plans.append((req["record_path"], path))
            data = path.encode()
            code = 0
        except BaseException as e:  # noqa: BLE001
            data = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")
            code = 1
        data = data[:capacity - 1] + b"\0"
        ctypes.memmove(out, data, len(data))
        return code
