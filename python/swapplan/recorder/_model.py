"""What the recorder accumulates while a program runs: trace tensors (one per
storage lifetime), ops and iterations. Plain Python, no torch.

Op indices here are global (all iterations concatenated), like
``swapplan::Trace``; the writer converts them to per-iteration indices.
"""

FORWARD, BACKWARD, OPTIMIZER, OTHER = 0, 1, 2, 3
PHASE_NAMES = ("FORWARD", "BACKWARD", "OPTIMIZER", "OTHER")

KIND_OTHER = "OTHER"
KIND_PARAMETER = "PARAMETER"
KIND_GRADIENT = "GRADIENT"
KIND_OPTIMIZER_STATE = "OPTIMIZER_STATE"
KIND_ACTIVATION = "ACTIVATION"
KIND_INPUT = "INPUT"
KIND_TEMPORARY = "TEMPORARY"
KINDS = (KIND_OTHER, KIND_PARAMETER, KIND_GRADIENT, KIND_OPTIMIZER_STATE, KIND_ACTIVATION,
         KIND_INPUT, KIND_TEMPORARY)
# Kinds the trace format treats as persistent by default (trace.proto).
PERSISTENT_BY_DEFAULT = (KIND_PARAMETER, KIND_OPTIMIZER_STATE)

# Where a trace tensor came from.
ORIGIN_REGISTERED = 0   # parameters, buffers, .grad, optimizer state, register()
ORIGIN_PREEXISTING = 1  # any other tensor alive at __enter__ (found by a gc scan)
ORIGIN_OUTPUT = 2       # first appeared as an output of a recorded op
ORIGIN_FIRST_USE = 3    # first appeared as an input (made outside the dispatcher)
RESIDENT_ORIGINS = (ORIGIN_REGISTERED, ORIGIN_PREEXISTING)


class Member:
    """One trace tensor: one storage from its allocation to its free.

    ``alloc_op`` is -1 for storages resident before the first op; ``free_op``
    is None while the storage is alive, -1 when it died before the first op
    (it is then left out of the trace: it never occupied memory during an op).
    """

    __slots__ = ("index", "size", "dtype", "shape", "address", "name", "kind", "origin",
                 "alloc_op", "alloc_phase", "free_op", "used", "forward_input")

    def __init__(self, index, size, dtype, shape, address, origin, alloc_op, alloc_phase):
        self.index = index
        self.size = size
        self.dtype = dtype
        self.shape = shape
        self.address = address
        self.name = ""
        # Fixed kind (registered tensors, .grad, optimizer state); None until
        # classification derives it from phase and lifetime.
        self.kind = None
        self.origin = origin
        self.alloc_op = alloc_op
        self.alloc_phase = alloc_phase
        self.free_op = None
        self.used = False
        # Read by a FORWARD op or by any op inside the root module's forward.
        self.forward_input = False

    def resident_from_start(self):
        return self.origin in RESIDENT_ORIGINS


class Recording:
    """Ops, iterations and tensors of one recording session."""

    def __init__(self):
        self.members = []
        self.op_names = []          # interned names; ops refer to them by index
        self.op_name_index = {}
        # Per op (global index), parallel lists.
        self.op_name = []
        self.op_phase = []
        self.op_inputs = []         # tuples of Member.index
        self.op_outputs = []
        self.op_micro_batch = []    # -1 when absent
        self.op_layer = []
        self.op_stack = []
        self.op_duration_ns = []    # only filled with record_op_durations
        self.op_during_bytes = []   # recorder's own "bytes in use during the op"
        self.op_allocator_bytes = None  # list filled by the allocator check
        # Iterations: [op_begin, op_end, wall_time_ns].
        self.iterations = []
        # Autograd saved-tensor events: (iteration, ops completed in it,
        # unpack, Member.index or None); None: not recorded at all.
        self.saved_events = None

    @property
    def num_ops(self):
        return len(self.op_name)

    def intern(self, name):
        i = self.op_name_index.get(name)
        if i is None:
            i = self.op_name_index[name] = len(self.op_names)
            self.op_names.append(name)
        return i

    def new_member(self, size, dtype, shape, address, origin, alloc_op, alloc_phase):
        m = Member(len(self.members), size, dtype, shape, address, origin, alloc_op, alloc_phase)
        self.members.append(m)
        return m

    def iteration_of(self, op):
        """(iteration index, index within it) of a global op; O(log iterations)."""
        lo, hi = 0, len(self.iterations) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.iterations[mid][0] <= op:
                lo = mid
            else:
                hi = mid - 1
        return lo, op - self.iterations[lo][0]
