"""Allocator check: an independent measurement of what the recorder claims.

PyTorch's CPU allocator reports every allocation and free to the profiler
when memory profiling is on. The legacy (autograd) profiler keeps those
reports per thread *in order*, interleaved with the push/pop records of
record_function ranges. The recorder brackets each recorded op's kernel call
with a ``swapplan::op`` range, so the running sum of the reports gives, for
every op g, exactly:

  start[g]   bytes the allocator held when op g's kernel started
  peak[g]    the most it held while the kernel ran (internal workspaces too)
  after[g]   what it held when the next op started (= after op g and the
             frees between g and g+1), or at the end of the recording

These are relative to an unknown base (whatever the process held before), so
they are rebased: the allocator figure written for op g is

  allocator_bytes_in_use[g] = resident + after[g] - start[0]

where ``resident`` is the bytes of the trace tensors resident before op 0.
``swapplan inspect`` compares it with the bytes after op g rebuilt from the
recorded ALLOC/FREE events; a difference means a storage the recorder missed
or mis-timed (or one made outside the dispatcher). ``peak[g]`` minus the
recorded bytes during op g measures what no dispatcher-level recorder can see:
temporaries internal to a kernel.

CPU only (the legacy profiler's CPU memory reports). Time O(profiler records).
"""

from .. import _torch_compat as C

MARKER = "swapplan::op"


class AllocatorCheck:
    def __init__(self):
        self.records = None

    def start(self):
        from torch.autograd import _enable_profiler_legacy
        _enable_profiler_legacy(C.legacy_profiler_config())

    def enter(self):
        return C.record_function_enter(MARKER)

    def exit(self, handle):
        C.record_function_exit(handle)

    def stop(self):
        from torch.autograd import _disable_profiler_legacy
        self.records = _disable_profiler_legacy()

    def apply(self, rec, resident_bytes, untouched_bytes):
        """Fills rec.op_allocator_bytes and returns summary statistics."""
        ours, other_events, other_bytes = None, 0, 0
        for thread in self.records:
            if ours is None and any(r.kind() == "push" and r.name() == MARKER for r in thread):
                ours = thread
            else:
                for r in thread:
                    if r.kind() == "memory_alloc":
                        other_events += 1
                        other_bytes += abs(r.cpu_memory_usage())
        if ours is None:
            raise RuntimeError("allocator_check: the profiler recorded no op markers")
        total, starts, peaks = 0, [], []
        in_op, handle, peak = False, None, 0
        for r in ours:
            kind = r.kind()
            if kind == "memory_alloc":
                total += r.cpu_memory_usage()
                if in_op and total > peak:
                    peak = total
            elif kind == "push" and not in_op and r.name() == MARKER:
                starts.append(total)
                in_op, handle, peak = True, r.handle(), total
            elif kind == "pop" and in_op and r.handle() == handle:
                peaks.append(peak)
                in_op = False
        n = rec.num_ops
        if len(starts) != n or len(peaks) != n:
            raise RuntimeError("allocator_check: %d op markers in the profile for %d recorded ops"
                               % (len(starts), n))
        freed_at = [0] * n
        for m in rec.members:
            if m.free_op is not None and m.free_op >= 0:
                freed_at[m.free_op] += m.size
        base = resident_bytes - starts[0]
        allocator, after_diffs = [], 0
        max_diff, max_diff_op, max_hidden, max_hidden_op = 0, -1, 0, -1
        for g in range(n):
            after = starts[g + 1] if g + 1 < n else total
            value = base + after
            allocator.append(max(value, 0))
            during = rec.op_during_bytes[g] - untouched_bytes
            diff = abs(value - (during - freed_at[g]))
            if diff:
                after_diffs += 1
                if diff > max_diff:
                    max_diff, max_diff_op = diff, g
            hidden = base + peaks[g] - during
            if hidden > max_hidden:
                max_hidden, max_hidden_op = hidden, g
        rec.op_allocator_bytes = allocator

        def where(g):
            if g < 0:
                return "-"
            it, local = rec.iteration_of(g)
            return "iteration %d, op %d (%s)" % (it, local, rec.op_names[rec.op_name[g]])

        return {
            "ops": n,
            "ops_with_after_diff": after_diffs,
            "max_abs_after_diff_bytes": max_diff,
            "max_abs_after_diff_at": where(max_diff_op),
            "max_in_kernel_hidden_bytes": max_hidden,
            "max_in_kernel_hidden_at": where(max_hidden_op),
            "other_thread_events": other_events,
            "other_thread_bytes": other_bytes,
        }

