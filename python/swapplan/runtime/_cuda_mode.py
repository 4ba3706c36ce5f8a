"""The device="cuda" side of SwapRuntime (docs/runtime-torch.md "CUDA"),
mixed into it (runtime.py): the runtime library decides every swap, a
_cuda.CudaSwapper moves the bytes (framework copies, _callbacks.py), an op's
OutOfMemoryError is retried once after Algorithm 3 made room, and rt.stats
carries the caching allocator's figures (None on the CPU device)."""

import ctypes

from . import _cuda as K
from . import _lib as L


class CudaMode:
    """Uses SwapRuntime's state (runtime.py)."""

    def _init_device(self, device, cuda):
        self.device = K.check_device(device, None if cuda is None else cuda.cuda)
        if cuda is not None and self.device != "cuda":
            raise ValueError("SwapRuntime: cuda= goes with device='cuda', got device=%r"
                             % (device,))
        # device="cuda": the framework copies (_cuda.FrameworkCopies); the
        # storages counted are those of the device type (fakes: "cpu").
        self._cuda = (cuda or K.CudaDevice()) if self.device == "cuda" else None
        self._dev = "cpu" if self._cuda is None else self._cuda.device_type
        self._copies = None if self._cuda is None else K.FrameworkCopies(self._cuda)
        self._oom = None if self._cuda is None else self._cuda.oom_error
        self.oom_retries = 0  # ops re-run after an OutOfMemoryError
        self.oom_errors = 0   # OutOfMemoryErrors the retry did not resolve
        self.restore_oom_errors = 0  # OutOfMemoryErrors of a swap-in's allocation

    def _cuda_stats(self):
        if self._cuda is None:
            return dict({k: None for k in K.CUDA_STAT_KEYS}, cuda_oom_retries=None,
                        cuda_oom_errors=None, cuda_restore_oom_errors=None,
                        pinned_blocks=None)
        d = self._cuda.swapper.stats()
        d["cuda_oom_retries"] = self.oom_retries
        d["cuda_oom_errors"] = self.oom_errors
        d["cuda_restore_oom_errors"] = self.restore_oom_errors
        return d

    def _run_with_oom_retry(self, func, args, kwargs):
        """device="cuda": an OutOfMemoryError from the op's allocation frees
        the bytes it names (Algorithm 3 through op_reserve) and the op runs
        once more (_cuda.call_with_oom_retry); counted in stats."""
        try:
            return K.call_with_oom_retry(lambda: func(*args, **kwargs), self._make_room,
                                         self._oom, func._schema.name)
        except self._oom:
            self.oom_errors += 1
            raise

    def _make_room(self, wanted):
        """Swaps out at least `wanted` bytes (1 when the error named none):
        op_reserve of (budget - in use + wanted) makes Algorithm 3 free that
        much whatever the ledger says. Returns the bytes freed (0: none)."""
        lib, env = self._lib, self._env
        s = L.Stats()
        L.check(lib, lib.swapplan_rt_get_stats(env, ctypes.byref(s)), "get_stats")
        before = s.device_bytes_in_use
        rc = self._op_reserve(env, s.device_budget_bytes - before + max(int(wanted), 1))
        self._raise_callback_error()
        if rc not in (L.OK, L.OUT_OF_MEMORY):
            raise L.error(lib, rc, "op_reserve(out-of-memory retry)")
        L.check(lib, lib.swapplan_rt_get_stats(env, ctypes.byref(s)), "get_stats")
        freed = before - s.device_bytes_in_use
        if freed > 0:
            self.oom_retries += 1
        return max(freed, 0)
