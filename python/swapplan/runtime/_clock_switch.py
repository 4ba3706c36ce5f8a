"""The op clock's switches of SwapRuntime with stable_clock="hooks", mixed
into it (runtime.py): the per-op dispatch mode from the root module's
forward to the iteration's end, a recorded Stable iteration turned into a
saved-tensor schedule (_hookclock.py), hook iterations the stage machine
never sees."""

import ctypes

import torch

from .. import _torch_compat as C
from . import _lib as L

_Tensor = torch.Tensor


class ClockSwitch:
    """Uses SwapRuntime's state (runtime.py); _Mode comes from it."""

    def _push_mode(self):
        self._mode = self._mode_class(self)
        self._mode.__enter__()
        self._mode_depth = C.dispatch_mode_depth()

    def _pop_mode(self):
        if self._hookclock is not None:
            self._hookclock.sink = None
        if self._mode is None:
            return
        if self._mode_depth is not None and C.dispatch_mode_depth() != self._mode_depth:
            raise RuntimeError("SwapRuntime: another dispatch mode was entered inside the "
                               "runtime's and is still active at the iteration's end; "
                               "stable_clock='hooks' switches the runtime's mode per iteration")
        mode, self._mode = self._mode, None
        mode.__exit__(None, None, None)

    def _uninstall_hooks(self):
        if self._forward_hook is not None:
            self._forward_hook.remove()
            self._forward_hook = None
        if self._hookclock is not None:
            self._hookclock.uninstall()

    def _on_forward(self, module, args):
        """The root module's first forward of an iteration: replay the key's
        schedule, or run the per-op clock (recording a Stable iteration)."""
        if self._forwarded or self._env is None or self._paused:
            return
        self._forwarded = True
        hc = self._hookclock
        key = tuple((tuple(a.shape), a.dtype, a.device.type) if isinstance(a, _Tensor)
                    else type(a) for a in args)
        self._key = key
        schedule = hc.schedules.get(key)
        if schedule is not None and not self._compiled.modules:
            self._hook_iteration = True
            hc.begin_hook_iteration(schedule)
            return
        self._tracker.full_poll(-1)
        self._push_mode()
        # A per-op iteration: its saved-tensor events go into the record.
        L.check(self._lib, self._lib.swapplan_rt_saved_tensor_events_recorded(self._env),
                "saved_tensor_events_recorded")
        hc.sink = self._saved_event
        s = L.Stats()
        L.check(self._lib, self._lib.swapplan_rt_get_stats(self._env, ctypes.byref(s)),
                "get_stats")
        if L.STAGES[s.stage] == "Stable" and not self._compiled.modules:
            self._in_use_stats = s
            hc.begin_recording(self._position)

    def _position(self):
        return self._nops

    def _saved_event(self, unpack, t):
        """The hook clock's sink in per-op iterations: one saved-tensor event
        into the runtime's record (its storage's handle, 0 when not held)."""
        try:
            m = self._tracker.live.get(C.storage_id(t))
        except (RuntimeError, NotImplementedError):
            m = None
        rc = self._lib.swapplan_rt_saved_tensor_event(self._env, 1 if unpack else 0,
                                                      m.handle if m is not None else 0)
        if rc:
            raise L.error(self._lib, rc, "saved_tensor_event")

    def _in_use(self):
        s = self._in_use_stats
        self._lib.swapplan_rt_get_stats(self._env, ctypes.byref(s))
        return s.device_bytes_in_use

    def _capture(self):
        """After a recorded Stable iteration: the key's replay schedule when
        the iteration was clean (_hookclock.py)."""
        hc = self._hookclock
        s = L.Stats()
        L.check(self._lib, self._lib.swapplan_rt_get_stats(self._env, ctypes.byref(s)),
                "get_stats")
        r = L.IterationStats()
        L.check(self._lib, self._lib.swapplan_rt_get_iteration_stats(
            self._env, s.iterations - 1, ctypes.byref(r)), "get_iteration_stats")
        c = r.counts.to_dict()
        clean = (L.STAGES[r.stage] == "Stable" and L.STAGES[r.next_stage] == "Stable" and
                 all(c[k] == 0 for k in (
                     "passive_swap_outs", "passive_swap_ins", "uses_while_off_device", "ooms",
                     "allocation_failures", "copy_errors", "policy_drops", "policy_recomputes",
                     "recompute_fallbacks_to_swap")) and not self._compiled.modules)
        hc.capture(self._key, clean, self.device_memory)
