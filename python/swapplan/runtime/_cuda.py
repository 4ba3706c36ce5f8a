"""CUDA tensors for the PyTorch integration: stream-ordered swaps over the
torch.cuda API (no extension compiled against torch), a pinned host pool
grown in blocks, one retry after a CUDA out-of-memory error, and the
generator states a RECOMPUTE restores. docs/runtime-torch.md "CUDA".

    swapper = CudaSwapper(torch.cuda, pool=PinnedPool(64 << 20))
    swap = swapper.swap_out(storage)      # after the producing op, on its stream
    swapper.release(swap)                 # device bytes freed, in stream order
    swapper.swap_in(swap)                 # before the consuming op

Every function takes a "torch.cuda-like" namespace `cuda` (current_stream,
stream, Stream, Event, memory_allocated, memory_reserved, OutOfMemoryError,
get_rng_state, set_rng_state), so the CPU tests drive it with fakes
(python/runtime_tests/cuda_fakes.py). The ordering rules, each tested:

  swap-out  an event recorded on the producer's stream (the current stream
            when the tensor was made: inside ``with torch.cuda.stream(s)``
            that is s); the D2H stream waits on it (and on the H2D copy that
            last read the pinned bytes it reuses), copies non-blocking into
            the pinned pool, records copy-done.
  release   the stream the storage was allocated on (the producer's: the
            caching allocator reuses its block there) and the current
            stream wait on copy-done, then ``storage.resize_(0)``. Stream
            order, never host polling (no synchronize / query) and never
            ``record_stream`` (its frees depend on how far the CPU runs ahead).
  swap-in   ``resize_(nbytes)`` with the consumer's stream current (the block
            is the consumer's), an event recorded there, the H2D stream waits
            on it, copies, records; the consumer waits on that event before
            its op. The pinned slice goes back to the pool fenced by it.

Complexity: O(1) stream calls per swap; the pool's allocate and free are
O(free ranges of the blocks).
"""

import contextlib
import re

import torch

ALIGNMENT_BYTES = 512  # pinned slices start on 512-byte boundaries (DMA-friendly)


def _align(nbytes, alignment):
    return -(-nbytes // alignment) * alignment


def check_device(device, cuda=None):
    """'cpu' (the host backend: the device is emulated in CPU memory), 'cuda'
    (framework copies through CudaSwapper), or a clear error (`cuda`:
    torch.cuda, or a fake)."""
    cuda = cuda if cuda is not None else torch.cuda
    kind = torch.device(device).type
    if kind == "cpu":
        return kind
    if kind == "cuda":
        if not cuda.is_available():
            raise RuntimeError(
                "SwapRuntime(device=%r): this process has no CUDA device (torch %s, built with "
                "CUDA %s; torch.cuda.is_available() is False). device='cpu' runs the host "
                "backend, which emulates the device in CPU memory" % (device, torch.__version__,
                                                                      torch.version.cuda))
        return kind
    raise ValueError("SwapRuntime: device must be 'cpu' or 'cuda', got %r" % (device,))


class PinnedSlice:
    """`nbytes` of pinned memory at `offset` in block `block`; `fences`: the
    events of the copies that last read these bytes (a writer waits first)."""
    __slots__ = ("block", "offset", "nbytes", "span", "fences")

    def __init__(self, block, offset, nbytes, span, fences):
        self.block = block
        self.offset = offset
        self.nbytes = nbytes
        self.span = span      # the aligned bytes taken from the block
        self.fences = fences


class PinnedPool:
    """Pinned host memory allocated once per block and reused: first fit over
    each block's free ranges, a freed range merged with its neighbours. The
    pool grows by one block of `block_bytes` when nothing fits; a request
    larger than a block gets a block of its own of exactly its aligned size
    (no power-of-two rounding). Blocks are never returned before close().

    alloc_block(nbytes) -> a 1-D uint8 host tensor (default: plain memory
    registered with cudaHostRegister through torch.cuda.cudart(), so the
    caching host allocator's power-of-two rounding never applies)."""

    def __init__(self, block_bytes=64 << 20, alloc_block=None, alignment=ALIGNMENT_BYTES):
        if block_bytes <= 0 or block_bytes % alignment:
            raise ValueError("PinnedPool: block_bytes must be a positive multiple of %d, got %r"
                             % (alignment, block_bytes))
        self.block_bytes = block_bytes
        self.alignment = alignment
        self._alloc_block = alloc_block or _registered_block
        self._unregister = _unregister_block if alloc_block is None else None
        self.blocks = []       # host tensors
        self._free = []        # per block: sorted [offset, size, fences]
        self.in_use_bytes = 0  # aligned bytes handed out

    @property
    def reserved_bytes(self):
        return sum(b.numel() for b in self.blocks)

    def allocate(self, nbytes):
        span = _align(max(int(nbytes), 1), self.alignment)
        for b, ranges in enumerate(self._free):
            for i, r in enumerate(ranges):
                if r[1] >= span:
                    return self._take(b, i, nbytes, span)
        size = max(self.block_bytes, span)
        self.blocks.append(self._alloc_block(size))
        self._free.append([[0, size, []]])
        return self._take(len(self.blocks) - 1, 0, nbytes, span)

    def _take(self, b, i, nbytes, span):
        r = self._free[b][i]
        s = PinnedSlice(b, r[0], int(nbytes), span, r[2])
        if r[1] == span:
            del self._free[b][i]
        else:
            r[0] += span
            r[1] -= span
            r[2] = list(r[2])  # the rest keeps its own copy of the fences
        self.in_use_bytes += span
        return s

    def free(self, s, fence=None):
        """Returns a slice; `fence`: the event of the copy reading it."""
        fences = [fence] if fence is not None else []
        ranges = self._free[s.block]
        start, end = s.offset, s.offset + s.span
        i = 0
        while i < len(ranges) and ranges[i][0] < start:
            i += 1
        ranges.insert(i, [start, s.span, fences])
        if i + 1 < len(ranges) and ranges[i + 1][0] == end:  # merge right
            nxt = ranges.pop(i + 1)
            ranges[i][1] += nxt[1]
            ranges[i][2] += nxt[2]
        if i > 0 and ranges[i - 1][0] + ranges[i - 1][1] == start:  # merge left
            cur = ranges.pop(i)
            ranges[i - 1][1] += cur[1]
            ranges[i - 1][2] += cur[2]
        self.in_use_bytes -= s.span

    def view(self, s):
        return self.blocks[s.block][s.offset:s.offset + s.nbytes]

    def close(self):
        """Gives the blocks back (after every copy using them is done)."""
        for b in self.blocks:
            if self._unregister is not None:
                self._unregister(b)
        self.blocks = []
        self._free = []
        self.in_use_bytes = 0


def _registered_block(nbytes):
    t = torch.empty(nbytes, dtype=torch.uint8)
    rc = torch.cuda.cudart().cudaHostRegister(t.data_ptr(), nbytes, 0)
    if int(rc) != 0:
        raise RuntimeError("PinnedPool: cudaHostRegister(%d bytes) failed: %s" % (nbytes, rc))
    return t


def _unregister_block(t):
    torch.cuda.cudart().cudaHostUnregister(t.data_ptr())


def _byte_view(storage):
    """A uint8 tensor over all of `storage` (the bytes a swap copies)."""
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


class Swap:
    """One storage off the device: its pinned slice and the events."""
    __slots__ = ("storage", "nbytes", "host", "producer", "copied", "released", "filled")

    def __init__(self, storage, nbytes, host, producer, copied):
        self.storage = storage    # strong: the bytes stay until release
        self.nbytes = nbytes
        self.host = host
        self.producer = producer  # the stream whose allocator block it is
        self.copied = copied      # the last copy's done event (D2H, then H2D)
        self.released = False
        self.filled = False       # the H2D copy was issued


class CudaSwapper:
    """The three streams' protocol (module docstring): compute (whatever is
    current), the runtime's D2H and H2D streams."""

    def __init__(self, cuda, pool, byte_view=_byte_view):
        self.cuda = cuda
        self.pool = pool
        self.byte_view = byte_view
        self.d2h = cuda.Stream()
        self.h2d = cuda.Stream()
        self.bytes_d2h = 0
        self.bytes_h2d = 0

    def swap_out(self, storage, producer=None):
        """Starts the copy of `storage` to pinned memory; `producer`: the
        stream that produced it (default: the current one, as right after the
        op that made it)."""
        cuda = self.cuda
        producer = producer if producer is not None else cuda.current_stream()
        nbytes = storage.nbytes()
        ready = cuda.Event()
        ready.record(producer)
        self.d2h.wait_event(ready)
        host = self.pool.allocate(nbytes)
        for e in host.fences:          # an H2D copy may still read these bytes
            self.d2h.wait_event(e)
        host.fences = []
        with cuda.stream(self.d2h):
            self.pool.view(host).copy_(self.byte_view(storage), non_blocking=True)
        copied = cuda.Event()
        copied.record(self.d2h)
        self.bytes_d2h += nbytes
        return Swap(storage, nbytes, host, producer, copied)

    def release(self, swap):
        """Frees the device bytes in stream order: the allocator reuses the
        block on the producer's stream, so that stream (and the current one)
        waits on copy-done before resize_(0) hands the block back; when the
        current stream is another one, the producer's also waits for the work
        issued on it so far (ops that read the tensor there)."""
        current = self.cuda.current_stream()
        swap.producer.wait_event(swap.copied)
        if current != swap.producer:
            current.wait_event(swap.copied)
            self._after_current(swap.producer, current)
        swap.storage.resize_(0)
        swap.released = True

    def _after_current(self, stream, current):
        read = self.cuda.Event()
        read.record(current)
        stream.wait_event(read)

    def drop(self, storage, producer):
        """Frees a storage with no copy (a RECOMPUTE item), in stream order:
        the block's stream (`producer`) waits for the current one's work."""
        current = self.cuda.current_stream()
        if producer is not None and current != producer:
            self._after_current(producer, current)
        storage.resize_(0)

    def discard(self, swap):
        """A swap-out that will not be released (the tensor stays): the
        current stream waits for the copy before anything may write the
        block, and the pinned slice returns fenced by the copy."""
        self.cuda.current_stream().wait_event(swap.copied)
        self.pool.free(swap.host, fence=swap.copied)

    def swap_in(self, swap, consumer=None):
        """Brings `swap` back before the consuming op on `consumer` (default:
        the current stream); returns the storage. allocate, fill and
        wait_filled in one: SwapRuntime calls them apart (a prefetch fills
        early, the consumer waits at its use)."""
        consumer = consumer if consumer is not None else self.cuda.current_stream()
        if not swap.released:
            # Never left the device: nothing to copy back; the slice returns
            # once the D2H copy writing it is done.
            self.pool.free(swap.host, fence=swap.copied)
            return swap.storage
        self.allocate(swap, consumer)
        self.fill(swap, consumer)
        self.wait_filled(swap, consumer)
        return swap.storage

    def allocate(self, swap, consumer=None):
        """resize_(nbytes) with the consumer's stream current: the new block
        is the consumer's."""
        consumer = consumer if consumer is not None else self.cuda.current_stream()
        with self.cuda.stream(consumer):
            swap.storage.resize_(swap.nbytes)
        swap.producer = consumer

    def fill(self, swap, consumer=None):
        """The H2D copy, after an event recorded on the consumer's stream
        (the allocation); records `filled` and returns the pinned slice to the
        pool fenced by it. The consumer does not wait here (wait_filled)."""
        cuda = self.cuda
        consumer = consumer if consumer is not None else cuda.current_stream()
        allocated = cuda.Event()
        allocated.record(consumer)
        self.h2d.wait_event(allocated)
        with cuda.stream(self.h2d):
            self.byte_view(swap.storage).copy_(self.pool.view(swap.host), non_blocking=True)
        filled = cuda.Event()
        filled.record(self.h2d)
        self.pool.free(swap.host, fence=filled)
        swap.copied = filled  # the tensor's last copy
        swap.filled = True
        self.bytes_h2d += swap.nbytes

    def wait_filled(self, swap, consumer=None):
        """The consumer's stream waits for the tensor's last copy (before its
        op uses it)."""
        consumer = consumer if consumer is not None else self.cuda.current_stream()
        consumer.wait_event(swap.copied)

    def stats(self):
        """What the device's allocator and the pool hold (rt.stats)."""
        return device_memory(self.cuda, {
            "pinned_reserved_bytes": self.pool.reserved_bytes,
            "pinned_in_use_bytes": self.pool.in_use_bytes,
            "pinned_blocks": len(self.pool.blocks),
            "bytes_d2h": self.bytes_d2h, "bytes_h2d": self.bytes_h2d})


# The caching allocator's figures in rt.stats (None on the CPU device).
CUDA_STAT_KEYS = ("cuda_memory_allocated_bytes", "cuda_memory_reserved_bytes",
                  "cuda_max_memory_allocated_bytes", "cuda_max_memory_reserved_bytes")


def device_memory(cuda, into=None):
    """The budget's measure: memory_allocated() (bytes in live tensors, what
    the budget bounds), with memory_reserved() (the caching allocator's
    segments) beside it, and their peaks (max_memory_allocated /
    max_memory_reserved, since the process start or the last
    reset_peak_memory_stats). A smaller device is emulated with
    torch.cuda.set_per_process_memory_fraction."""
    d = dict(into or {})
    d["cuda_memory_allocated_bytes"] = int(cuda.memory_allocated())
    d["cuda_memory_reserved_bytes"] = int(cuda.memory_reserved())
    d["cuda_max_memory_allocated_bytes"] = int(cuda.max_memory_allocated())
    d["cuda_max_memory_reserved_bytes"] = int(cuda.max_memory_reserved())
    return d


def fits(cuda, budget_bytes, nbytes):
    """Whether `nbytes` more keep memory_allocated() within the budget."""
    return int(cuda.memory_allocated()) + int(nbytes) <= budget_bytes


_TRIED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
_UNIT = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def requested_bytes(error):
    """The bytes the caching allocator's message says it tried to allocate
    (rounded as it prints them), or 0."""
    m = _TRIED.search(str(error))
    return int(float(m.group(1)) * _UNIT[m.group(2)]) if m else 0


def call_with_oom_retry(call, make_room, oom_error, what):
    """Runs call(); on `oom_error` asks make_room(bytes wanted) to free
    device memory (Algorithm 3: swap out) and retries once. make_room
    returns the bytes it freed; 0, or a second OOM, re-raises with a message
    that names `what`."""
    try:
        return call()
    except oom_error as first:
        wanted = requested_bytes(first)
        freed = make_room(wanted)
        if not freed:
            raise oom_error("%s: CUDA out of memory, and Algorithm 3 found nothing to swap out "
                            "for %d bytes: %s" % (what, wanted, first)) from first
    try:
        return call()
    except oom_error as second:
        raise oom_error("%s: CUDA out of memory again after swapping out %d bytes and one retry: "
                        "%s" % (what, freed, second)) from second


class RngStates:
    """The generator states a seeded op draws from: the CPU generator's and,
    with `cuda`, the CUDA device's. get() before the op; applied(state)
    around its re-run (RECOMPUTE), restoring what was there afterwards, so
    the global streams carry on as if nothing ran (as fork_rng)."""

    def __init__(self, cuda=None, device_index=None):
        self.cuda = cuda
        self.device_index = device_index

    def get(self):
        dev = None if self.cuda is None else self._cuda_get()
        return (torch.get_rng_state(), dev)

    def _cuda_get(self):
        if self.device_index is None:
            return self.cuda.get_rng_state()
        return self.cuda.get_rng_state(self.device_index)

    def _cuda_set(self, state):
        if self.device_index is None:
            self.cuda.set_rng_state(state)
        else:
            self.cuda.set_rng_state(state, self.device_index)

    @contextlib.contextmanager
    def applied(self, state):
        cpu, dev = state
        saved_cpu = torch.get_rng_state()
        saved_dev = None if dev is None else self._cuda_get()
        try:
            torch.set_rng_state(cpu)
            if dev is not None:
                self._cuda_set(dev)
            yield
        finally:
            torch.set_rng_state(saved_cpu)
            if dev is not None:
                self._cuda_set(saved_dev)


class CudaDevice:
    """What SwapRuntime(device="cuda", cuda=...) runs on: a torch.cuda-like
    namespace `cuda`, the CudaSwapper over a PinnedPool, the device type of
    the storages the runtime counts ("cuda"; a CPU test with fakes passes
    "cpu" and a byte_view / alloc_block of its own), and the out-of-memory
    error an op may raise (cuda.OutOfMemoryError)."""

    def __init__(self, cuda=None, pool=None, byte_view=_byte_view, device_type="cuda"):
        self.cuda = cuda if cuda is not None else torch.cuda
        self.swapper = CudaSwapper(self.cuda, pool if pool is not None else PinnedPool(),
                                   byte_view=byte_view)
        self.device_type = device_type
        self.oom_error = self.cuda.OutOfMemoryError


class FrameworkCopies:
    """SwapRuntime's half of the runtime library's framework copies
    (swapplan_runtime.h, swapplan_rt_framework.copy): the library decides, a
    CudaSwapper moves the bytes. Per storage id the Swap from COPY_OUT until
    the consumer waited for its COPY_IN (or DISCARD). A released Swap keeps
    no reference to its storage (the storage may die while off the device).

      COPY_OUT      swap_out after an event on the stream of its last write
      release(1)    release (waits on copy-done, then resize_(0)); without a
                    Swap (a RECOMPUTE drop): drop
      restore       allocate on the current (consumer) stream
      COPY_IN       fill (H2D after the allocation; the consumer waits later)
      COPY_WAIT     the current stream waits for the last copy
      COPY_DISCARD  discard (the current stream waits for the copy out)
    """

    OUT, IN, WAIT, DISCARD = 0, 1, 2, 3

    def __init__(self, device):
        self.swapper = device.swapper
        self.cuda = device.cuda
        self.swaps = {}

    def copy(self, sid, storage, action, producer):
        sw = self.swapper
        if action == self.OUT:
            self.swaps[sid] = sw.swap_out(storage, producer)
        elif action == self.IN:
            swap = self.swaps[sid]
            swap.storage = storage
            sw.fill(swap)
            swap.storage = None
        elif action == self.WAIT:
            swap = self.swaps[sid]
            sw.wait_filled(swap)
            if swap.filled:
                del self.swaps[sid]  # resident again
        elif action == self.DISCARD:
            swap = self.swaps.pop(sid, None)
            if swap is None or swap.filled:
                return  # forgotten (the storage died first), or its copy in took the slice
            sw.discard(swap)
        else:
            raise ValueError("framework copy: unknown action %r" % (action,))

    def release(self, sid, storage, producer):
        swap = self.swaps.get(sid)
        if swap is None:
            self.swapper.drop(storage, producer)
            return
        swap.storage = storage
        self.swapper.release(swap)
        swap.storage = None

    def restore(self, sid, storage, nbytes):
        swap = self.swaps.get(sid)
        if swap is None:  # a RECOMPUTE item's storage: the recipe fills it
            storage.resize_(nbytes)
            return
        swap.storage = storage
        self.swapper.allocate(swap)
        swap.storage = None

    def forget(self, sid):
        """The storage died: its Swap (and pinned slice) go."""
        swap = self.swaps.pop(sid, None)
        if swap is not None and not swap.filled:
            self.swapper.pool.free(swap.host, fence=swap.copied)
