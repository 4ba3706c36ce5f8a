"""SwapRuntime(device="cuda") end to end, on the CPU: the runtime library
decides (stage machine, Algorithm 3, the budget's ledger), _cuda.py moves the
bytes through framework copies (swapplan_rt_framework.copy), and the "CUDA"
is cuda_fakes.RealBytesCuda — real CPU storages and real copies, every
stream operation a node of a happens-before graph, every ATen op a kernel
node (KernelLog, entered outside the runtime). Trained losses must equal a
plain run's bit for bit, and the graph must order every copy as
docs/runtime-torch.md "CUDA" says; each ordering rule of the wiring has a test
here that fails when the rule is taken out (checked by removing each).

  python3 python/runtime_tests/cuda_wired_test.py   (meson: runtime_cuda_wired)
"""

import importlib
import os
import sys
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _measured import budget_of, lm_step, make_lm, measure_plain  # noqa: E402,I100  (exit 77)

import torch  # noqa: E402

from cuda_fakes import FakeOOM, RealBytesCuda  # noqa: E402
from swapplan import _torch_compat as C  # noqa: E402
from swapplan.runtime import SwapOutOfMemory, SwapRuntime  # noqa: E402
from swapplan.runtime import _cuda as K  # noqa: E402

ROWS = 16
STEPS = 4
POLICY_STEPS = 8
OOM_MESSAGE = "CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; fake)"


def _storages(value, into):
    if isinstance(value, torch.Tensor):
        try:
            into.add(C.storage_id(value))
        except (RuntimeError, NotImplementedError):
            pass
    elif isinstance(value, (list, tuple)):
        for v in value:
            _storages(v, into)
    return into


def _on_meta(args, kwargs):
    device = kwargs.get("device")
    if device is not None and torch.device(device).type == "meta":
        return True
    return any(isinstance(a, torch.Tensor) and a.is_meta for a in args)


class KernelLog(C.TorchDispatchMode):
    """Entered before the runtime (outside it): each ATen op the runtime lets
    through is a kernel node on the fake's current stream, with the storages
    it read and wrote. `fail`: (op name, n) raises the fake OOM at the n-th
    call of that op, once (an allocation failing inside the op)."""

    def __init__(self, cuda, fail=None):
        super().__init__()
        self.cuda = cuda
        self.kernels = []  # (node, reads, writes, name)
        self.fail = fail
        self.calls = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.cuda.quiet or _on_meta(args, kwargs):
            return func(*args, **kwargs)  # the swap machinery, the runtime's prediction
        name = func._schema.name
        n = self.calls[name] = self.calls.get(name, 0) + 1
        if self.fail is not None and self.fail == (name, n):
            self.fail = None
            raise FakeOOM(OOM_MESSAGE)
        reads = _storages(list(args) + list(kwargs.values()), set())
        out = func(*args, **kwargs)
        write_pos, write_kw = C.schema_effects(func)[:2]
        writes = _storages(out, set()) - reads  # new storages, not views of inputs
        for i in write_pos:
            if i < len(args):
                _storages(args[i], writes)
        for k in write_kw:
            _storages(kwargs.get(k), writes)
        self.kernels.append((self.cuda.launch(name), reads, writes, name))
        return out


class Events:
    """Wraps the runtime's FrameworkCopies: each call is swap machinery
    (quiet: not a kernel) and logged as (what, sid, node count, current
    stream, the call's third argument: the producer stream of a copy or a
    release, the bytes of a restore)."""

    def __init__(self, cuda, copies):
        self.cuda = cuda
        self.log = []
        for what in ("copy", "release", "restore"):
            setattr(copies, what, self._wrap(what, getattr(copies, what)))

    def _wrap(self, what, fn):
        names = {0: "out", 1: "in", 2: "wait", 3: "discard"}

        def call(sid, storage, arg, *rest):
            kind = names[arg] if what == "copy" else what
            self.log.append((kind, sid, len(self.cuda.nodes), self.cuda.current_stream(),
                             rest[0] if what == "copy" else arg))
            self.cuda.quiet += 1
            try:
                return fn(sid, storage, arg, *rest)
            finally:
                self.cuda.quiet -= 1
        return call


class HookEvents:
    """Wraps the saved-tensor clock's copies (_hookclock.CudaCopies) as
    Events wraps FrameworkCopies: the same log, so the same rules check it."""

    def __init__(self, cuda, copies):
        self.cuda = cuda
        self.log = []
        out, back = copies.out, copies.back

        def logged_out(schedule, slot, storage):
            sid, producer = storage._cdata, schedule.stream[slot]
            self.log.append(("out", sid, len(cuda.nodes), cuda.current_stream(), producer))
            cuda.quiet += 1
            try:
                swap = out(schedule, slot, storage)
            finally:
                cuda.quiet -= 1
            self.log.append(("release", sid, len(cuda.nodes), cuda.current_stream(), producer))
            return swap

        def logged_back(schedule, slot, storage, swap):
            self.log.append(("in", storage._cdata, len(cuda.nodes), cuda.current_stream(),
                             schedule.nbytes[slot]))
            cuda.quiet += 1
            try:
                return back(schedule, slot, storage, swap)
            finally:
                cuda.quiet -= 1
        copies.out, copies.back = logged_out, logged_back


def plain_step(model, opt, i):
    return lm_step(model, opt, i, ROWS)


def side_step(cuda, side):
    """lm_step with the forward on a side stream (`with stream(side)`, the
    torchtitan#2581 shape) and the backward and optimizer on the default."""
    def step(model, opt, i):
        forward = model.forward

        def on_side(*a, **k):
            with cuda.stream(side):
                return forward(*a, **k)
        model.forward = on_side
        try:
            return lm_step(model, opt, i, ROWS)
        finally:
            del model.forward
    return step


def fake_device():
    """(fake, CudaDevice over it): 1 MiB pinned blocks of CPU memory, the
    storages counted those of device type "cpu"."""
    cuda = RealBytesCuda()
    pool = K.PinnedPool(1 << 20, alloc_block=cuda.block)
    return cuda, K.CudaDevice(cuda, pool=pool, byte_view=cuda.byte_view, device_type="cpu")


def run_cuda(budget, steps=STEPS, fail=None, side=False, patch=None, **runtime_args):
    """(losses, runtime, fake, kernel log, copy events) of DropoutLM under
    SwapRuntime(device="cuda") with the fake; patch(rt) before the run.
    log.end: the node count when the last step ended (before the runtime's
    exit brings every tensor back)."""
    cuda, dev = fake_device()
    model, opt = make_lm()
    torch.manual_seed(12345)
    step = side_step(cuda, cuda.Stream()) if side else plain_step
    runtime_args.setdefault("provider", None)
    rt = SwapRuntime(device="cuda", cuda=dev, device_memory=budget, model=model, optimizer=opt,
                     **runtime_args)
    events = Events(cuda, rt._copies)
    if patch is not None:
        patch(rt)
    log = KernelLog(cuda, fail)
    losses = []
    with log:
        with rt:
            for i in range(steps):
                losses.append(step(model, opt, i))
            log.end = len(cuda.nodes)
    return losses, rt, cuda, log, events


def nth_call(op, step, k):
    """(op, n): the k-th call of `op` in step `step` (0-based) of the plain
    run, counted as KernelLog counts."""
    cuda = RealBytesCuda()
    model, opt = make_lm()
    log = KernelLog(cuda)
    with log:
        lm_step(model, opt, 0, ROWS)
    per_step = log.calls.get(op, 0)
    if per_step < k:
        raise AssertionError("%s runs %d times a step, not %d" % (op, per_step, k))
    return (op, step * per_step + k)


def copy_of(cuda, sid, after_node, direction):
    """The first copy node at or after `after_node` that moves storage
    `sid` (direction "out": from it, "in": into it)."""
    for node in cuda.copies:
        if node < after_node:
            continue
        dst, src = cuda.nodes[node][2]
        key = src if direction == "out" else dst
        if key == ("storage", sid):
            return node
    raise AssertionError("no %s copy of storage %#x after node %d" % (direction, sid, after_node))


def check_copy_out(tc, cuda, log, events):
    """Rule: each D2H copy follows the last kernel that wrote the storage,
    on whichever stream (the producer is the stream of the last write).
    Returns (copies checked, of them evicted from another stream)."""
    checked = crossed = 0
    for kind, sid, at, current, _ in events.log:
        if kind != "out":
            continue
        writers = [k for k in log.kernels if k[0] < at and sid in k[2]]
        if not writers:
            continue
        copy = copy_of(cuda, sid, at, "out")
        tc.assertTrue(cuda.happens_before(writers[-1][0], copy),
                      "copy out of %#x before its writer %s" % (sid, writers[-1][3]))
        checked += 1
        crossed += cuda.nodes[writers[-1][0]][1] is not current
    return checked, crossed


def check_release(tc, cuda, log, events):
    """Rule: after a release, the next kernels on the block's stream (the
    allocator hands the block out there) follow the copy out and the last
    kernel that read the tensor, on whichever stream. Returns (releases
    checked, of them read last on another stream than the block's)."""
    checked = crossed = 0
    for kind, sid, at, current, producer in events.log:
        if kind != "release":
            continue
        outs = [e for e in events.log if e[0] == "out" and e[1] == sid and e[2] <= at]
        if not outs:
            continue  # a drop (RECOMPUTE): no copy
        copy = copy_of(cuda, sid, outs[-1][2], "out")
        later = [k[0] for k in log.kernels if k[0] > at and cuda.nodes[k[0]][1] is producer]
        for node in later[:3]:
            tc.assertTrue(cuda.happens_before(copy, node),
                          "kernel %d may reuse %#x's block before its copy" % (node, sid))
        readers = [k[0] for k in log.kernels if k[0] < at and sid in k[1]]
        if readers and later:
            tc.assertTrue(cuda.happens_before(readers[-1], later[0]),
                          "a reader of %#x may run after its block is reused" % sid)
            crossed += cuda.nodes[readers[-1]][1] is not producer
        checked += 1
    return checked, crossed


def check_copy_in(tc, cuda, log, events):
    """Rule: a swapped-in tensor is used only after its H2D copy (the
    consumer waits at the use, COPY_WAIT), and the copy follows the work
    issued before on the allocating stream (the block may have been another
    tensor's). Returns (copies in checked, of them overlapped: a kernel ran
    between the copy's start and the use, not ordered after the copy)."""
    checked = overlapped = 0
    for kind, sid, at, current, _ in events.log:
        if kind != "in" or at >= log.end:  # not the exit's: nothing uses those
            continue
        h2d = copy_of(cuda, sid, at, "in")
        users = [k for k in log.kernels if k[0] > at and sid in k[1]]
        tc.assertTrue(users, "storage %#x swapped in and never used" % sid)
        tc.assertTrue(cuda.happens_before(h2d, users[0][0]),
                      "%s used %#x before its copy in" % (users[0][3], sid))
        before = [k[0] for k in log.kernels if k[0] < at and cuda.nodes[k[0]][1] is current]
        if before:
            tc.assertTrue(cuda.happens_before(before[-1], h2d))
        between = [k[0] for k in log.kernels if at < k[0] < users[0][0]]
        overlapped += any(not cuda.happens_before(h2d, k) for k in between)
        checked += 1
    return checked, overlapped


class WiredTest(unittest.TestCase):
    """DropoutLM, 16 rows, the forward on a side stream, at a budget of
    persistent + (plain peak - persistent) / 1.5 (the meter's figures), with
    Algorithm 3 only: one run, checked by each rule's test."""

    @classmethod
    def setUpClass(cls):
        cls.plain8, peak, persistent = measure_plain(make_lm, plain_step, POLICY_STEPS)
        cls.plain = cls.plain8[:STEPS]
        cls.budget = budget_of(peak, persistent)
        cls.side = run_cuda(cls.budget, side=True)

    def test_losses_bit_identical_and_no_host_sync(self):
        losses, rt, cuda, _, events = self.side
        s = rt.stats
        self.assertEqual(losses, self.plain)
        self.assertEqual((s["ooms"], s["use_while_off_device"]), (0, 0))
        self.assertGreater(s["passive_swaps"], 10)
        self.assertLessEqual(s["peak_device_bytes"], self.budget)
        self.assertEqual(cuda.host_syncs, [])
        self.assertEqual(cuda.record_streams, [])
        kinds = {e[0] for e in events.log}
        self.assertTrue({"out", "release", "restore", "in", "wait"} <= kinds, kinds)
        self.assertEqual(rt._copies.swaps, {})  # every swap came back or was dropped
        # Blocks of exactly 1 MiB (every swap is smaller), all free at the end.
        self.assertEqual(s["pinned_reserved_bytes"], s["pinned_blocks"] << 20)
        self.assertEqual(s["pinned_in_use_bytes"], 0)

    def test_copy_out_follows_the_last_write_on_its_stream(self):
        # Activations written on the side stream, evicted later while the
        # default stream is current.
        _, _, cuda, log, events = self.side
        checked, crossed = check_copy_out(self, cuda, log, events)
        self.assertGreater(checked, 10)
        self.assertGreater(crossed, 0)

    def test_release_orders_reuse_after_the_copy_and_the_readers(self):
        _, _, cuda, log, events = self.side
        checked, crossed = check_release(self, cuda, log, events)
        self.assertGreater(checked, 10)
        self.assertGreater(crossed, 0)

    def test_use_follows_the_copy_in(self):
        _, _, cuda, log, events = self.side
        checked, _ = check_copy_in(self, cuda, log, events)
        self.assertGreater(checked, 10)

    def test_policy_run_prefetches_in_overlap(self):
        # The stage machine plans (the default provider, swapplan plan on
        # the record; m = n = 1): policy swap-outs at their decision ops,
        # prefetches at their anchors, the consumer waiting only at the use.
        losses, rt, cuda, log, events = run_cuda(
            self.budget, steps=POLICY_STEPS, side=True, provider="default",
            warmup_iterations=1, genpolicy_iterations=1,
            planner_args=["--min-tensor-bytes", "1KiB"])
        s = rt.stats
        self.assertEqual(losses, self.plain8)
        self.assertGreater(s["policy_swaps"], 0, [r["plan_error"] for r in rt.iterations])
        self.assertEqual((s["ooms"], s["use_while_off_device"]), (0, 0))
        self.assertLessEqual(s["peak_device_bytes"], self.budget)
        self.assertGreater(check_copy_out(self, cuda, log, events)[0], 0)
        self.assertGreater(check_release(self, cuda, log, events)[0], 0)
        checked, overlapped = check_copy_in(self, cuda, log, events)
        self.assertGreater(overlapped, 0)  # a prefetch ran beside compute
        self.assertEqual(cuda.host_syncs, [])

    def test_copy_out_waits_for_an_in_place_write_on_another_stream(self):
        # Worked case: budget 3,000 B; x (2,000 B) made on the default
        # stream, written in place on a side stream; y (2,000 B) does not fit
        # beside it, so Algorithm 3 evicts x from the default stream. Its D2H
        # copy must follow the side stream's write, not only the default's.
        # Then x.sum() brings x back (evicting y) and y.sum() y.
        cuda, dev = fake_device()
        side = cuda.Stream()
        log = KernelLog(cuda)
        rt = SwapRuntime(device="cuda", cuda=dev, device_memory=3000, provider=None)
        events = Events(cuda, rt._copies)
        with log:
            with rt:
                x = torch.ones(500)
                with cuda.stream(side):
                    x.mul_(3)
                write = log.kernels[-1][0]
                y = torch.ones(500)
                self.assertEqual(rt.stats["counts"]["passive_swap_outs"], 1)
                self.assertEqual(float(x.sum()), 1500.0)  # back (y out): its bytes
                self.assertEqual(float(y.sum()), 500.0)
        sid = C.storage_id(x)
        out = [e for e in events.log if e[0] == "out" and e[1] == sid]
        self.assertEqual(len(out), 2)  # for y, then for y's return
        self.assertIs(out[0][3], cuda.default)       # evicted from the default stream
        self.assertIs(out[0][4], side)               # the stream of its last write
        self.assertTrue(cuda.happens_before(write, copy_of(cuda, sid, out[0][2], "out")))

    @unittest.skipIf(C.torch_version() < (2, 0), "stable_clock='hooks' needs PyTorch >= 2.0")
    def test_saved_tensor_clock_replays_in_stream_order(self):
        # stable_clock="hooks": Stable iterations replayed on autograd's
        # saved-tensor events with _cuda.CudaSwapper's copies; the same
        # rules hold on the replay's copies (the use waits at the unpack:
        # without that wait check_copy_in fails).
        steps = 12
        plain = measure_plain(make_lm, plain_step, steps)[0]
        box = []
        losses, rt, cuda, log, _ = run_cuda(
            self.budget, steps=steps, side=True, provider="default", warmup_iterations=1,
            genpolicy_iterations=1, planner_args=["--min-tensor-bytes", "1KiB"],
            stable_clock="hooks",
            patch=lambda rt: box.append(HookEvents(rt._cuda.cuda, rt._hookclock.copies)))
        s, events = rt.stats, box[0]
        why = {k: v for k, v in s.items() if k.startswith("hook_")}
        self.assertEqual(losses, plain)
        self.assertGreater(s["hook_iterations"], 0, why)
        self.assertGreater(s["hook_swaps"], 0, why)
        self.assertEqual((s["hook_divergences"], s["hook_late_restores"]), (0, 0), why)
        self.assertEqual(cuda.host_syncs, [])
        self.assertEqual(cuda.record_streams, [])
        self.assertGreater(check_copy_out(self, cuda, log, events)[0], 0)
        self.assertGreater(check_release(self, cuda, log, events)[0], 0)
        checked, overlapped = check_copy_in(self, cuda, log, events)
        self.assertGreater(checked, 0)
        self.assertGreater(overlapped, 0)  # restored at an earlier event, used later

    def test_cuda_figures_in_stats(self):
        cuda, dev = fake_device()
        with SwapRuntime(device="cuda", cuda=dev, device_memory=10**9, provider=None) as rt:
            torch.ones(4).sum()
            cuda.allocated, cuda.reserved = 3 << 10, 2 << 20
            cuda.max_allocated, cuda.max_reserved = 5 << 10, 4 << 20
            s = rt.stats
        self.assertEqual((s["cuda_memory_allocated_bytes"], s["cuda_memory_reserved_bytes"],
                          s["cuda_max_memory_allocated_bytes"],
                          s["cuda_max_memory_reserved_bytes"]),
                         (3 << 10, 2 << 20, 5 << 10, 4 << 20))
        self.assertEqual((s["cuda_oom_retries"], s["cuda_oom_errors"]), (0, 0))
        with SwapRuntime(device_memory=10**9, provider=None) as cpu:
            torch.ones(4).sum()
        for key in K.CUDA_STAT_KEYS + ("cuda_oom_retries", "cuda_oom_errors"):
            self.assertIn(key, cpu.stats)
            self.assertIsNone(cpu.stats[key], key)

    def test_oom_inside_an_op_swaps_out_and_retries_once(self):
        # The 3rd aten::addmm of step 2 fails once: Algorithm 3 frees room
        # (nothing else swaps at this budget), the op runs again.
        losses, rt, _, log, _ = run_cuda(10**9, fail=nth_call("aten::addmm", 2, 3))
        s = rt.stats
        self.assertEqual(losses, self.plain)
        self.assertEqual((s["cuda_oom_retries"], s["cuda_oom_errors"]), (1, 0))
        self.assertGreater(s["counts"]["passive_swap_outs"], 0)
        self.assertEqual(s["counts"]["allocation_failures"], 1)
        self.assertIsNone(log.fail)

    def test_oom_with_nothing_to_swap_is_raised_naming_the_op(self):
        # No model or optimizer registered and no tensor made yet: at the
        # first op nothing is resident, nothing may leave.
        cuda, dev = fake_device()
        log = KernelLog(cuda, ("aten::randint", 1))
        with self.assertRaisesRegex(FakeOOM, r"aten::randint: CUDA out of memory, and Algorithm "
                                             r"3 found nothing to swap out for 2097152 bytes"):
            with log:
                with SwapRuntime(device="cuda", cuda=dev, device_memory=10**9, provider=None):
                    torch.randint(0, 10, (4, 4))

    def test_oom_at_the_first_op_moves_a_parameter_as_the_last_resort(self):
        # The first op of the first step: only persistent tensors (and the
        # op's own inputs) are resident. Algorithm 3's last resort moves a
        # parameter the op does not read (it comes back at its next use, or
        # when the step ends); the run goes on with the plain run's losses.
        # aten::randint makes the batch before the root module's forward:
        # only the per-op clock sees it (stable_clock="hooks" watches ops
        # from the forward on, so an OOM there is PyTorch's own).
        plain = run_cuda(10**9)[0]
        losses, rt, _, _, _ = run_cuda(10**9, fail=("aten::randint", 1),
                                       stable_clock="dispatch")
        self.assertEqual(losses, plain)
        # (The ledger may still count an OOM: the 2 MiB the fake allocator
        # says it tried exceed every parameter together, and the retry after
        # the bytes freed succeeds.)
        self.assertGreaterEqual(rt.stats["counts"]["passive_swap_outs"], 1)

    def test_without_the_oom_retry_the_error_escapes(self):
        # The retry is what resolves the OOM above (removing it fails there).
        def no_retry(rt):
            rt._oom = None
        with self.assertRaises(FakeOOM):
            run_cuda(10**9, fail=nth_call("aten::addmm", 2, 3), patch=no_retry)

    def test_oom_in_a_swap_in_allocation_swaps_out_and_retries_once(self):
        # 5000 bytes; x, y, z 2000 each: z sends x out (passive, closest
        # size, the earliest). x.sum() brings x back: y goes for the
        # ledger; then the allocator refuses x's block once (restore answers
        # out of memory): Algorithm 3 swaps out x's 2000 bytes beyond the
        # ledger (z), and the second allocation succeeds.
        cuda, dev = fake_device()
        with SwapRuntime(device="cuda", cuda=dev, device_memory=5000, provider=None) as rt:
            swapper = rt._copies.swapper
            allocate, calls = swapper.allocate, []

            def refuse_once(swap, consumer=None):
                calls.append(swap.nbytes)
                if len(calls) == 1:
                    raise FakeOOM(OOM_MESSAGE)
                return allocate(swap, consumer)

            swapper.allocate = refuse_once
            x = torch.ones(500)
            y = torch.full((500,), 2.0)
            z = torch.full((500,), 3.0)
            self.assertEqual(rt.stats["counts"]["passive_swap_outs"], 1)
            self.assertEqual(float(x.sum()), 500.0)
            self.assertEqual(calls, [2000, 2000])
            s = rt.stats
            self.assertEqual(s["cuda_restore_oom_errors"], 1)
            self.assertEqual(s["counts"]["passive_swap_outs"], 3)  # x, then y and z
            self.assertEqual((float(y.sum()), float(z.sum())), (1000.0, 1500.0))

    def test_oom_in_a_swap_in_allocation_twice_is_swap_out_of_memory(self):
        cuda, dev = fake_device()
        with SwapRuntime(device="cuda", cuda=dev, device_memory=5000, provider=None) as rt:
            swapper = rt._copies.swapper

            def refuse(swap, consumer=None):
                raise FakeOOM(OOM_MESSAGE)

            x = torch.ones(500)
            kept = [torch.full((500,), 2.0), torch.full((500,), 3.0)]
            swapper.allocate = refuse
            with self.assertRaisesRegex(SwapOutOfMemory, r"out of memory for tensor .* again "
                                                         r"after Algorithm 3 swapped out 2000"):
                x.sum()
            self.assertEqual(rt.stats["cuda_restore_oom_errors"], 2)
            del swapper.allocate  # the class's again, for the exit's swap-ins
            self.assertEqual([float(t.sum()) for t in kept], [1000.0, 1500.0])


class DeviceTest(unittest.TestCase):
    def test_cuda_with_cuda_is_accepted(self):
        cuda = RealBytesCuda()
        self.assertEqual(K.check_device("cuda", cuda), "cuda")
        self.assertEqual(K.check_device("cpu", cuda), "cpu")
        with self.assertRaisesRegex(ValueError, "cuda= goes with device='cuda'"):
            SwapRuntime(device_memory=1 << 20, cuda=K.CudaDevice(cuda, device_type="cpu"))

    def test_compiled_regions_stop_listening_at_exit(self):
        # SwapRuntime.__exit__ ends the last iteration after exit(), and that
        # polls: a poll after exit must not start listening again (a filter
        # left on Dynamo's logger silenced the next runtime's count, torch 2.6).
        if not hasattr(torch, "compile"):
            self.skipTest("torch %s has no torch.compile" % torch.__version__)
        importlib.import_module("torch._dynamo")  # what a compiled region imports
        from swapplan.runtime._compiled import CompiledRegions
        c = CompiledRegions()
        c.enter(None)
        self.assertTrue(c._listening)
        c.exit()
        c.poll()
        self.assertFalse(c._listening)

    def test_compiled_model_is_reported(self):
        if not hasattr(torch, "compile"):
            self.skipTest("torch %s has no torch.compile" % torch.__version__)
        model = torch.nn.Linear(4, 4)
        compiled = torch.compile(model)  # not run: no compilation needed to see it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with SwapRuntime(device_memory=10**9, model=compiled, provider=None) as rt:
                model(torch.ones(2, 4)).sum()
        self.assertEqual(rt.stats["compiled_modules"], 1)
        self.assertTrue([w for w in caught if "torch.compile'd module" in str(w.message)])


    def test_compiled_function_inside_the_block_is_reported(self):
        # A counting backend (no inductor: no compilation cost): Dynamo skips
        # the frame under the runtime's mode, the runtime counts it and warns.
        if not hasattr(torch, "compile"):
            self.skipTest("torch %s has no torch.compile" % torch.__version__)
        graphs = []

        def backend(gm, inputs):
            graphs.append(gm)
            return gm.forward
        fn = torch.compile(lambda x: torch.tanh(x) * 2 + 1, backend=backend)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with SwapRuntime(device_memory=10**9, provider=None) as rt:
                y = fn(torch.ones(8))
                rt.step()
                fn(torch.ones(8))
                rt.step()
        self.assertEqual(graphs, [])  # nothing compiled
        self.assertEqual(y.tolist(), (torch.tanh(torch.ones(8)) * 2 + 1).tolist())
        self.assertGreaterEqual(rt.stats["compiled_frames_run_eagerly"], 1)
        self.assertEqual(len([w for w in caught if "ran eagerly" in str(w.message) or
                              "run eagerly" in str(w.message)]), 1)
        self.assertEqual(rt.iterations[0]["ops"], rt.iterations[1]["ops"])


if __name__ == "__main__":
    unittest.main()
