"""Turns a finished Recording into the swapplan JSON trace form.

Layout and lifetime rules: docs/trace-format.md, include/swapplan/trace/
io.h and the comment at the top of include/swapplan/trace/trace.h. The parts
that matter here:

* a tensor without an ALLOC event is resident from the start when it is
  persistent; without a FREE event a persistent tensor is never freed, any
  other tensor is freed after its last use;
* ALLOC at op i takes effect at the start of op i, FREE at op i after it.

So every storage the recorder saw allocated gets an explicit ALLOC, every
storage it saw die gets an explicit FREE, and storages resident before the
first op or still alive after the last one are written ``persistent`` — the
defaults never have to guess.

Complexity: O(tensors + ops + uses) time and memory; the JSON is built one
line per tensor / op / event and compressed in one pass.
"""

import gzip
import json
import os
import tempfile

from . import _model as M


def classify(member):
    """The kind of a trace tensor (see README "Recording PyTorch programs").

    Fixed kinds (registered tensors, .grad, optimizer state) win; otherwise:
    data made outside the model and read by the forward pass is INPUT; a
    storage freed right after the op that made it is TEMPORARY; what the
    backward pass makes and keeps is GRADIENT; what the optimizer makes is
    TEMPORARY; everything else living past its op is ACTIVATION.
    """
    if member.kind is not None:
        return member.kind
    outside_model = (member.origin in (M.ORIGIN_PREEXISTING, M.ORIGIN_FIRST_USE) or
                     member.alloc_phase == M.OTHER)
    if outside_model and member.forward_input:
        return M.KIND_INPUT
    if member.origin == M.ORIGIN_PREEXISTING:
        return M.KIND_OTHER
    transient = member.free_op is not None and member.free_op == member.alloc_op
    if member.alloc_phase == M.BACKWARD:
        return M.KIND_TEMPORARY if transient else M.KIND_GRADIENT
    if member.alloc_phase == M.OPTIMIZER:
        return M.KIND_TEMPORARY
    return M.KIND_TEMPORARY if transient else M.KIND_ACTIVATION


def kept_members(rec, keep_untouched):
    """Members written to the trace, and the bytes of those left out because
    they were resident throughout and never touched (a constant offset)."""
    kept, untouched_bytes = [], 0
    for m in rec.members:
        if m.free_op is not None and m.free_op < 0:
            continue  # died before the first op: never occupied memory during an op
        if (m.origin == M.ORIGIN_PREEXISTING and not m.used and m.free_op is None and
                not keep_untouched):
            untouched_bytes += m.size
            continue
        kept.append(m)
    return kept, untouched_bytes


def _tensor_json(m, trace_id, name):
    kind = classify(m)
    t = {"id": trace_id, "size_bytes": m.size, "kind": kind, "dtype": m.dtype,
         "shape": list(m.shape)}
    persistent = m.resident_from_start() or m.free_op is None
    if persistent != (kind in M.PERSISTENT_BY_DEFAULT):
        t["persistent"] = persistent
    if m.address:
        t["device_address"] = m.address
    if name:
        t["name"] = name
    return t


def build_trace_lines(rec, kept, metadata):
    """The JSON document as a list of text chunks (one per tensor/op/event)."""
    ids = {m.index: i for i, m in enumerate(kept)}  # dense ids from 0
    names = rec.op_names
    out = ['{"format":"swapplan-trace","format_version":1,\n"metadata":',
           json.dumps(metadata, sort_keys=True, separators=(",", ":")),
           ',\n"op_names":', json.dumps(names, separators=(",", ":")), ',\n"tensors":[\n']
    tensor_lines = []
    for m in kept:
        name = m.name
        if not name and m.alloc_op >= 0:
            it, local = rec.iteration_of(m.alloc_op)
            name = "%s@%d:%d" % (names[rec.op_name[m.alloc_op]], it, local)
        tensor_lines.append(json.dumps(_tensor_json(m, ids[m.index], name),
                                       separators=(",", ":")))
    out.append(",\n".join(tensor_lines))
    out.append('\n],\n"iterations":[\n')

    # Memory events per iteration, by op.
    events = [[] for _ in rec.iterations]
    for m in kept:
        if not m.resident_from_start():
            it, local = rec.iteration_of(m.alloc_op)
            events[it].append((local, 0, ids[m.index]))
        if m.free_op is not None:
            it, local = rec.iteration_of(m.free_op)
            events[it].append((local, 1, ids[m.index]))

    # Saved-tensor events per iteration, in the order they fired; a storage
    # the trace leaves out (or none: another device) is a pack without a
    # tensor: still a moment the saved-tensor clock acts at.
    saved = None
    if rec.saved_events is not None:
        saved = [[] for _ in rec.iterations]
        for it, position, unpack, index in rec.saved_events:
            if it < len(saved):
                e = {"position": position, "kind": "UNPACK" if unpack else "PACK"}
                t = ids.get(index) if index is not None else None
                if t is not None:
                    e["tensor"] = t
                saved[it].append(json.dumps(e, separators=(",", ":")))

    durations = rec.op_duration_ns
    allocator = rec.op_allocator_bytes
    iteration_chunks = []
    for it, (begin, end, wall_ns) in enumerate(rec.iterations):
        ops = []
        for g in range(begin, end):
            o = {"name": rec.op_name[g], "phase": M.PHASE_NAMES[rec.op_phase[g]]}
            if rec.op_inputs[g]:
                o["inputs"] = [ids[i] for i in rec.op_inputs[g]]
            if rec.op_outputs[g]:
                o["outputs"] = [ids[i] for i in rec.op_outputs[g]]
            if durations:
                o["duration_ns"] = durations[g]
            if allocator is not None:
                o["allocator_bytes_in_use"] = allocator[g]
            if rec.op_stack[g] >= 0:
                o["stack_id"] = rec.op_stack[g]
            if rec.op_micro_batch[g] >= 0:
                o["micro_batch"] = rec.op_micro_batch[g]
            if rec.op_layer[g] >= 0:
                o["layer"] = rec.op_layer[g]
            ops.append(json.dumps(o, separators=(",", ":")))
        ev = sorted(events[it])
        ev_lines = [json.dumps({"op": local, "kind": "FREE" if k else "ALLOC", "tensor": t},
                               separators=(",", ":")) for local, k, t in ev]
        saved_part = "" if saved is None else ',\n"saved_tensor_events":[\n%s\n]' % (
            ",\n".join(saved[it]))
        iteration_chunks.append(
            '{"wall_time_ns":%d,\n"ops":[\n%s\n],\n"memory_events":[\n%s\n]%s}' %
            (wall_ns, ",\n".join(ops), ",\n".join(ev_lines), saved_part))
    out.append(",\n".join(iteration_chunks))
    out.append("\n]}\n")
    return out


def write_atomically(path, chunks):
    """Writes ``chunks`` to ``path`` via a temporary file renamed into place,
    gzip-compressed (deterministically: no name, mtime 0) when ``path`` ends
    in ``.gz``."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".swapplan-trace.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            if path.endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0,
                                   compresslevel=9) as z:
                    for c in chunks:
                        z.write(c.encode("utf-8"))
            else:
                for c in chunks:
                    f.write(c.encode("utf-8"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
