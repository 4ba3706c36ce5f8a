"""The few PyTorch internals the recorder depends on, in one place.

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
StorageWeakRef``; they exist from PyTorch 1.13 on (tested on 1.13).
"""

import torch

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


def legacy_profiler_available():
    """True when the sequential legacy profiler (used by allocator_check) exists."""
    return hasattr(torch.autograd, "_enable_profiler_legacy") and hasattr(
        torch.ops.profiler, "_record_function_enter_new")


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
