"""SwapRuntime's per-iteration rows and the host backend's fault injection,
mixed into it (runtime.py)."""

import ctypes

from . import _lib as L


class Results:
    """Uses SwapRuntime's state (runtime.py)."""

    @property
    def stats(self):
        """Counts of the whole run (a dict; after the with-block: its final
        figures)."""
        if self._env is None:
            return self._last_stats
        s = L.Stats()
        L.check(self._lib, self._lib.swapplan_rt_get_stats(self._env, ctypes.byref(s)),
                "get_stats")
        c = s.counts.to_dict()
        return {
            "iterations": s.iterations,
            "stage": L.STAGES[s.stage],
            "device_budget_bytes": s.device_budget_bytes,
            "device_bytes_in_use": s.device_bytes_in_use,
            "peak_device_bytes": s.peak_device_bytes,
            "live_tensors": s.live_tensors,
            "policies_loaded": s.policies_loaded,
            "swaps": c["policy_swap_outs"] + c["manual_swap_outs"] + c["passive_swap_outs"],
            "policy_swaps": c["policy_swap_outs"],
            "passive_swaps": c["passive_swap_outs"] + c["passive_swap_ins"],
            "bytes_moved": c["bytes_d2h"] + c["bytes_h2d"],
            "stalls": c["stalls"],
            "stall_ms": c["stall_ns"] / 1e6,
            "use_while_off_device": c["uses_while_off_device"],
            "ooms": c["ooms"],
            "policy_drops": c["policy_drops"],
            "policy_recomputes": c["policy_recomputes"],
            "recompute_fallbacks_to_swap": c["recompute_fallbacks_to_swap"],
            "recomputed_storages": self._recipes.recomputed,
            "recomputed_random_storages": self._recipes.recomputed_seeded,
            "recompute_ms": self._recipes.recompute_ns / 1e6,
            # The largest workspace a recomputation asked the runtime for
            # (outputs computed aside, dropped inputs recomputed on the way).
            "recompute_workspace_peak_bytes": self._recipes.workspace_peak_bytes,
            "pinned_reserved_bytes": s.pinned_reserved_bytes,
            "policy_keys": s.policy_keys,
            "policy_of_other_input": s.policy_of_other_input,
            "known_sequence_returns": s.known_sequence_returns,
            # Budget semantics and misuse (docs/runtime-torch.md).
            "discovered_storages": self.discovered_storages,
            "discovered_bytes": self.discovered_bytes,
            "unpredicted_allocations": self._predict.unpredicted if self._predict else None,
            "mispredicted_allocations": self._predict.mispredicted if self._predict else None,
            "redundant_steps": self.redundant_steps,
            "unrepeated_iterations": 0 if self._ever_stable else self._warmup_run,
            "unrepeated_warning": self.unrepeated_warning,
            # torch.compile regions (_compiled.py).
            "compiled_modules": self._compiled.modules,
            "compiled_frames_run_eagerly": self._compiled.frames,
            # device="cuda": the caching allocator's figures, the pinned
            # pool's, out-of-memory retries; None on the CPU device.
            **self._cuda_stats(),
            # stable_clock="hooks" (_hookclock.py): iterations replayed on
            # saved-tensor events, not seen by the stage machine.
            "stable_clock": self.stable_clock,
            **self._hook_stats(),
            "counts": c,
        }

    def _hook_stats(self):
        from ._hookclock import NO_HOOK_STATS
        hc = self._hookclock
        return hc.stats() if hc is not None else dict(NO_HOOK_STATS)

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
