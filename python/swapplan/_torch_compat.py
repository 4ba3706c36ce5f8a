"""Every PyTorch API swapplan uses that differs between the versions it
supports, in one place (the recorder, the runtime and the tests import it as
``C``). Supported: PyTorch 1.13 (Debian 12's python3-torch) to 2.13 (pip);
tested on 1.13, 2.6 (Debian 13) and 2.13 (docs/building.md). The test
python/tests/test_torch_compat.py runs on each.

Version differences held here:

* storage: ``untyped_storage(t)`` is ``Tensor.untyped_storage()`` from 2.0 on,
  ``Tensor._storage()`` on 1.13 (``Tensor.storage()`` warns on 2.x: TypedStorage
  is deprecated).
* dispatch modes: ``TorchDispatchMode`` and ``dispatch_mode_depth()`` (how many
  modes are on the stack; ``_get_current_dispatch_mode_stack`` from 2.0 on,
  ``torch._C._len_torch_dispatch_stack`` before).
* profiler: ``record_function_placeholder()`` tells whether a
  ``record_function`` range allocates a tensor (1.13) or not (2.x);
  ``legacy_profiler_config()`` builds the legacy (sequential)
  profiler's ``ProfilerConfig`` for CPU memory profiling, whose constructor
  grew arguments over the versions; ``record_function_enter/exit`` are the
  ``profiler::`` ops that mark a range.
* op schemas: ``schema_effects(func)`` reads alias annotations; the
  ``profiler::`` ops a 2.x profiler range dispatches are flagged.
* autograd: ``accumulate_grad_ops()`` are the ops AccumulateGrad dispatches
  when it stores a leaf's first gradient (two ``aten::detach`` on 1.13 and
  2.6, one on 2.13), measured on the running torch.
* torch.compile: ``compile_unavailable_reason()`` says why its default
  backend cannot run here (no torch.compile before 2.0, a Python dynamo does
  not support, torch's C++ headers missing), or None.

Storage identity and lifetime come from the C++ ``StorageImpl``, not from
Python objects:

* ``storage_id(t)`` is the address of the tensor's ``StorageImpl``; every view
  of a storage returns the same value.
* ``weak_ref(storage)`` takes a ``c10::weak_intrusive_ptr`` on the
  ``StorageImpl`` (an opaque integer handle). ``expired(handle)`` is true once
  the last strong reference is gone, i.e. once the storage's memory has been
  returned to the allocator. The handle keeps the ``StorageImpl`` control
  block (not the data) allocated, so the address cannot be reused for another
  storage while the recorder holds it. ``free_weak_ref(handle)`` drops it.

These are the primitives behind ``torch.multiprocessing.reductions.
StorageWeakRef``; they exist from PyTorch 1.13 on.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401  (re-exported)

# The oldest PyTorch swapplan supports (pyproject.toml's torch extra, README).
OLDEST_TORCH = (1, 13)


def torch_version(version=None):
    """(major, minor) of ``version`` (default: the running torch's), e.g.
    "2.13.0+cpu" -> (2, 13), "1.13.0a0+git" -> (1, 13)."""
    parts = (version or torch.__version__).split("+")[0].split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


storage_id = torch._C._storage_id

if hasattr(torch.Tensor, "untyped_storage"):  # PyTorch >= 2.0

    def untyped_storage(t):
        return t.untyped_storage()

else:  # PyTorch 1.13

    def untyped_storage(t):
        return t._storage()


expired = torch.UntypedStorage._expired
free_weak_ref = torch.UntypedStorage._free_weak_ref


def weak_ref(storage):
    return storage._weak_ref()


# swapplan dtype names (proto/trace.proto, src/trace/types.cc). Anything else
# is written as "unknown".
DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float64: "float64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
}
for _name, _spelling in (("float8_e4m3fn", "float8_e4m3"), ("float8_e5m2", "float8_e5m2")):
    if hasattr(torch, _name):
        DTYPE_NAMES[getattr(torch, _name)] = _spelling


def dtype_name(dtype):
    return DTYPE_NAMES.get(dtype, "unknown")


def dispatch_mode_depth():
    """How many TorchDispatchModes are active (0 outside any)."""
    from torch.utils import _python_dispatch as pd
    if hasattr(pd, "_get_current_dispatch_mode_stack"):  # PyTorch >= 2.0
        return len(pd._get_current_dispatch_mode_stack())
    return torch._C._len_torch_dispatch_stack()  # PyTorch 1.13


def legacy_profiler_available():
    """True when the sequential legacy profiler (used by allocator_check) exists."""
    return hasattr(torch.autograd, "_enable_profiler_legacy") and hasattr(
        torch.ops.profiler, "_record_function_enter_new")


def legacy_profiler_config():
    """The legacy profiler's configuration for CPU memory profiling: state CPU,
    no input shapes, memory on, no stacks, flops or modules. Its constructor
    takes the experimental config from 1.13 on (positional; 2.x added a
    trace id with a default)."""
    from torch.autograd import ProfilerConfig, ProfilerState
    args = [ProfilerState.CPU, False, True, False, False, False]
    experimental = getattr(torch._C._profiler, "_ExperimentalConfig", None)
    if experimental is not None:
        args.append(experimental())
    return ProfilerConfig(*args)


def record_function_placeholder():
    """True when ``torch.autograd.profiler.record_function`` allocates a
    4-byte placeholder tensor (one ``aten::zeros`` op in a recording) when it
    is created: PyTorch 1.13, whose ranges (``optimizer.step()``,
    ``zero_grad()``) keep their handle in a tensor; 2.x keeps it in a script
    object and runs no op."""
    handle = getattr(torch.autograd.profiler.record_function("swapplan::probe"), "handle", None)
    return isinstance(handle, torch.Tensor)


def record_function_enter(name):
    """Opens a profiler range named ``name``; returns its handle."""
    return torch.ops.profiler._record_function_enter_new(name, None)


def record_function_exit(handle):
    """Closes the range ``record_function_enter`` opened."""
    torch.ops.profiler._record_function_exit._RecordFunction(handle)


def schema_effects(func):
    """What an ATen op's schema says it writes and aliases:
    (positions of the positional arguments it writes in place, names of the
    keyword-only ones it writes, a tuple telling for each return whether it
    aliases an input, whether it is profiler instrumentation — a
    ``profiler::`` range, whose "tensors" are not the allocator's)."""
    schema = func._schema
    write_pos, write_kw = [], set()
    for i, a in enumerate(schema.arguments):
        info = a.alias_info
        if info is not None and info.is_write:
            if a.kwarg_only:
                write_kw.add(a.name)
            else:
                write_pos.append(i)
    returns_alias = tuple(r.alias_info is not None for r in schema.returns)
    return write_pos, write_kw, returns_alias, schema.name.startswith("profiler::")


_accumulate_grad_ops = None


def accumulate_grad_ops():
    """The op names (``aten::detach`` ...) autograd's AccumulateGrad dispatches
    when it stores a leaf's first gradient, a fresh contiguous tensor: two
    detaches on 1.13 and 2.6, one on 2.13 (the release in between that
    dropped one is not pinned down, so this is measured, once, with a plain
    dispatch mode: w * 2's backward is an aten::mul, after it AccumulateGrad;
    1.13 checks the seed's size with aten::is_same_size before)."""
    global _accumulate_grad_ops
    if _accumulate_grad_ops is None:
        names = []

        class _Names(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                names.append(func._schema.name)
                return func(*args, **(kwargs or {}))

        w = torch.zeros(4, requires_grad=True)
        y, seed = w * 2, torch.ones(4)
        with _Names():
            y.backward(seed)
        if "aten::mul" not in names:
            raise RuntimeError("AccumulateGrad probe: backward of w * 2 ran %s" % names)
        _accumulate_grad_ops = names[names.index("aten::mul") + 1:]
    return list(_accumulate_grad_ops)


def compile_unavailable_reason():
    """Why ``torch.compile`` with its default backend cannot run here, or None
    when it can: torch 1.13 has no torch.compile; dynamo refuses a Python it
    does not support (``check_if_dynamo_supported``'s message); and inductor,
    the default backend, compiles its CPU kernels at run time against torch's
    C++ headers (``<torch>/include/ATen``): pip's wheels carry them, Debian's
    python3-torch only recommends them (libtorch-dev; without it the
    ``include/`` links dangle and the first compiled call fails in g++)."""
    if not hasattr(torch, "compile"):
        return "torch %s has no torch.compile" % torch.__version__
    import os
    from torch._dynamo import eval_frame
    try:
        eval_frame.check_if_dynamo_supported()
    except Exception as e:  # RuntimeError on 2.x; the message says why
        return "torch.compile is not supported here: %s" % e
    headers = os.path.join(os.path.dirname(torch.__file__), "include", "ATen")
    if not os.path.isdir(headers):
        return ("torch.compile's inductor backend needs torch's C++ headers, and %s is missing "
                "(Debian: apt install libtorch-dev)" % headers)
    return None
