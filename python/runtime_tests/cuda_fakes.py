"""A fake torch.cuda namespace for the CPU tests of swapplan.runtime._cuda.

It keeps the device work as a happens-before graph: every operation enqueued
on a stream (a kernel, a copy, an event record, an event wait) is a node that
follows the stream's previous node; a wait also follows the node its event
was recorded at. `happens_before(a, b)` is reachability, so a test asks what
the GPU guarantees, not in which order the host called. Host-side
synchronization (synchronize, query) and record_stream are recorded, and
resize_ records the stream current at the call (where the caching allocator
takes or returns the block)."""

import contextlib

import torch


class FakeOOM(RuntimeError):
    """Stands for torch.cuda.OutOfMemoryError."""


class FakeStream:
    def __init__(self, cuda, name):
        self.cuda = cuda
        self.name = name

    def wait_event(self, event):
        extra = () if event.node is None else (event.node,)
        self.cuda._enqueue("wait", self, event, extra)

    def synchronize(self):
        self.cuda.host_syncs.append(("stream.synchronize", self.name))

    def query(self):
        self.cuda.host_syncs.append(("stream.query", self.name))
        return True

    def __repr__(self):
        return "FakeStream(%s)" % self.name


class FakeEvent:
    def __init__(self, cuda):
        self.cuda = cuda
        self.node = None

    def record(self, stream=None):
        stream = stream if stream is not None else self.cuda.current_stream()
        self.node = self.cuda._enqueue("record", stream, self)

    def synchronize(self):
        self.cuda.host_syncs.append(("event.synchronize", self.node))

    def query(self):
        self.cuda.host_syncs.append(("event.query", self.node))
        return True


class FakeView:
    """Bytes of a storage or of a pinned block; copy_ enqueues a copy on the
    current stream."""

    def __init__(self, cuda, owner, start, stop):
        self.cuda = cuda
        self.owner = owner
        self.start = start
        self.stop = stop

    def copy_(self, src, non_blocking=False):
        if not non_blocking:
            self.cuda.host_syncs.append(("blocking copy", self.owner))
        node = self.cuda._enqueue("copy", self.cuda.current_stream(), (self, src))
        self.cuda.copies.append(node)
        return self


class FakeBlock:
    """A pinned host block (PinnedPool's alloc_block)."""

    def __init__(self, cuda, nbytes):
        self.cuda = cuda
        self.nbytes = nbytes

    def numel(self):
        return self.nbytes

    def __getitem__(self, sl):
        return FakeView(self.cuda, self, sl.start, sl.stop)


class FakeStorage:
    def __init__(self, cuda, nbytes):
        self.cuda = cuda
        self.size = nbytes
        cuda.allocated += nbytes
        cuda.max_allocated = max(cuda.max_allocated, cuda.allocated)

    def nbytes(self):
        return self.size

    def resize_(self, n):
        self.cuda.allocated += n - self.size
        self.cuda.max_allocated = max(self.cuda.max_allocated, self.cuda.allocated)
        self.size = n
        self.cuda.host_log.append(("resize", self, n, self.cuda.current_stream(),
                                   len(self.cuda.nodes)))

    def record_stream(self, stream):
        self.cuda.record_streams.append((self, stream))


class FakeCuda:
    OutOfMemoryError = FakeOOM

    def __init__(self):
        self.nodes = []          # (kind, stream, info)
        self.preds = []          # per node: the nodes it directly follows
        self._last = {}
        self.default = FakeStream(self, "compute")
        self._current = [self.default]
        self.host_syncs = []
        self.record_streams = []
        self.host_log = []
        self.copies = []
        self.blocks = []         # every FakeBlock allocated (PinnedPool growth)
        self.allocated = 0
        self.reserved = 0
        self.max_allocated = 0
        self.max_reserved = 0
        self._streams = 0
        self.rng = b"cuda-state-0"
        self.rng_sets = []

    # torch.cuda's surface used by _cuda.py
    def is_available(self):
        return True

    def Stream(self):  # noqa: N802 - torch.cuda's name
        self._streams += 1
        return FakeStream(self, "side%d" % self._streams)

    def Event(self):  # noqa: N802
        return FakeEvent(self)

    def current_stream(self):
        return self._current[-1]

    @contextlib.contextmanager
    def stream(self, s):
        self._current.append(s)
        try:
            yield s
        finally:
            self._current.pop()

    def synchronize(self):
        self.host_syncs.append(("cuda.synchronize", None))

    def memory_allocated(self):
        return self.allocated

    def memory_reserved(self):
        return self.reserved

    def max_memory_allocated(self):
        return self.max_allocated

    def max_memory_reserved(self):
        return max(self.max_reserved, self.reserved)

    def get_rng_state(self, device=None):
        return self.rng

    def set_rng_state(self, state, device=None):
        self.rng_sets.append(state)
        self.rng = state

    # test helpers
    def block(self, nbytes):
        b = FakeBlock(self, nbytes)
        self.blocks.append(b)
        return b

    def byte_view(self, storage):
        return FakeView(self, storage, 0, storage.nbytes())

    def launch(self, name, stream=None):
        """A kernel on `stream` (default: the current one); its node."""
        return self._enqueue("kernel", stream or self.current_stream(), name)

    def _enqueue(self, kind, stream, info, extra=()):
        node = len(self.nodes)
        preds = set(extra)
        if stream in self._last:
            preds.add(self._last[stream])
        self._last[stream] = node
        self.nodes.append((kind, stream, info))
        self.preds.append(preds)
        return node

    def happens_before(self, a, b):
        """Whether node a completes before node b starts on the GPU."""
        seen = set()
        todo = list(self.preds[b])
        while todo:
            n = todo.pop()
            if n == a:
                return True
            if n not in seen:
                seen.add(n)
                todo.extend(self.preds[n])
        return False


class RealView:
    """A byte range of a real CPU tensor (a storage's bytes, or a pinned
    block's slice): copy_ copies the bytes and enqueues the copy node, whose
    info names the storages (`key`: the storage id, or the block)."""

    def __init__(self, cuda, key, tensor):
        self.cuda = cuda
        self.key = key
        self.t = tensor

    def copy_(self, src, non_blocking=False):
        if not non_blocking:
            self.cuda.host_syncs.append(("blocking copy", self.key))
        self.cuda.quiet += 1
        try:
            self.t.copy_(src.t)
        finally:
            self.cuda.quiet -= 1
        node = self.cuda._enqueue("copy", self.cuda.current_stream(), (self.key, src.key))
        self.cuda.copies.append(node)
        return self


class RealBlock:
    def __init__(self, cuda, nbytes):
        self.cuda = cuda
        self.t = torch.empty(nbytes, dtype=torch.uint8)

    def numel(self):
        return self.t.numel()

    def __getitem__(self, sl):
        return RealView(self.cuda, ("pinned", id(self), sl.start), self.t[sl])


class RealBytesCuda(FakeCuda):
    """FakeCuda for SwapRuntime(device="cuda") on the CPU: the "CUDA"
    storages are real CPU storages (device_type "cpu"), pinned blocks are
    CPU tensors, copies move the real bytes, and every stream operation is a
    node of the happens-before graph. KernelLog (below) adds the ops'
    kernels. `quiet` > 0: work of the swap machinery, not kernels."""

    device_type = "cpu"

    def __init__(self):
        super().__init__()
        self.quiet = 0
        self.storage_id = None  # set by the test (_torch_compat.storage_id)

    def block(self, nbytes):
        b = RealBlock(self, nbytes)
        self.blocks.append(b)
        return b

    def byte_view(self, storage):
        self.quiet += 1
        try:
            t = torch.empty(0, dtype=torch.uint8).set_(storage)
        finally:
            self.quiet -= 1
        return RealView(self, ("storage", storage._cdata), t)
