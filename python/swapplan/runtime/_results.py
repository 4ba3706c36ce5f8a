"""SwapRuntime's per-iteration rows and the host backend's fault injection,
mixed into it (runtime.py)."""

import ctypes

from . import _lib as L


class Results:
    """Uses SwapRuntime's state (runtime.py)."""

    @property
    def iterations(self):
        """One dict per iteration: stage, policy, ops, peak, counts."""
        if self._env is None:
            return self._last_iterations
        rows = []
        s = L.Stats()
        L.check(self._lib, self._lib.swapplan_rt_get_stats(self._env, ctypes.byref(s)),
                "get_stats")
        msg = ctypes.create_string_buffer(4096)
        for i in range(s.iterations):
            r = L.IterationStats()
            L.check(self._lib, self._lib.swapplan_rt_get_iteration_stats(
                self._env, i, ctypes.byref(r)), "get_iteration_stats")
            L.check(self._lib, self._lib.swapplan_rt_get_plan_error(self._env, i, msg, 4096),
                    "get_plan_error")
            rows.append({"iteration": r.iteration, "stage": L.STAGES[r.stage],
                         "policy": r.policy, "ops": r.ops, "wall_ms": r.wall_ns / 1e6,
                         "peak_bytes": r.peak_bytes,
                         "fingerprint_matched": bool(r.fingerprint_matched),
                         "first_divergent_op": r.first_divergent_op,
                         "next_stage": L.STAGES[r.next_stage],
                         "generated_policy": r.generated_policy,
                         "input_signature_hash": r.input_signature_hash,
                         "input_signature_bytes": r.input_signature_bytes,
                         "policy_of_other_input": bool(r.policy_of_other_input),
                         "plan_error": msg.value.decode("utf-8", "replace"),
                         "counts": r.counts.to_dict()})
        return rows

    def inject_fault(self, kind, direction=-1, skip=0, count=1, slow_factor=10.0):
        """Host backend fault injection (tests): kind "copy_error",
        "alloc_failure" or "slow_copy"; direction "d2h", "h2d" or -1 (any)."""
        kinds = {"copy_error": L.FAULT_COPY_ERROR, "alloc_failure": L.FAULT_ALLOC_FAILURE,
                 "slow_copy": L.FAULT_SLOW_COPY}
        dirs = {"d2h": L.D2H, "h2d": L.H2D, -1: -1, None: -1}
        L.check(self._lib, self._lib.swapplan_rt_inject_fault(
            self._env, kinds[kind], dirs[direction], skip, count, slow_factor), "inject_fault")
