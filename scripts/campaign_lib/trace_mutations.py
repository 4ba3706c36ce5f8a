"""Structured mutations of swapplan traces (JSON and binary form) for the
mutation campaign. Each mutation returns (name, bytes, must_fail): must_fail
is True only when the mutation breaks a rule the trace format documents
(include/swapplan/trace/io.h, builder.h), so that exit status 0 is a bug.
"""

import copy
import json

from . import wire

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
U64_MAX = (1 << 64) - 1
EXTREMES = [-1, 0, 1, I32_MAX, I32_MAX + 1, 1 << 32, (1 << 53) + 1, 1 << 62, I64_MAX,
            I64_MAX + 1, U64_MAX, U64_MAX + 1, I32_MIN, I64_MIN]
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
            "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3": 1, "float8_e5m2": 1,
            "complex64": 8, "float": 4, "fp32": 4, "half": 2, "fp16": 2, "bf16": 2,
            "double": 8, "long": 8, "int": 4, "short": 2}

# Objects and the fields each must have (deleting one must fail).
REQUIRED = {"tensor": {"id", "size_bytes"}, "op": {"name", "phase"},
            "event": {"op", "kind", "tensor"}, "iteration": {"ops"}, "root": {"iterations"}}


def dumps(obj):
    return (json.dumps(obj, indent=1) + "\n").encode()


def _ids(t):
    return {x["id"] for x in t.get("tensors", [])}


def _used_ids(t):
    used = set()
    for it in t["iterations"]:
        for op in it.get("ops", []):
            used.update(op.get("inputs", []))
            used.update(op.get("outputs", []))
        for e in it.get("memory_events", []):
            used.add(e["tensor"])
    return used


def _objects(t):
    """(kind, object, parent description) for every object of the trace."""
    out = [("root", t)]
    if "metadata" in t:
        out.append(("metadata", t["metadata"]))
    out += [("tensor", x) for x in t.get("tensors", [])]
    for it in t["iterations"]:
        out.append(("iteration", it))
        out += [("op", o) for o in it.get("ops", [])]
        out += [("event", e) for e in it.get("memory_events", [])]
    return out


def _valid_int_fields(t):
    """(kind, object, key) of every integer field."""
    keys = {"tensor": ["id", "size_bytes", "storage_id", "device_address"],
            "op": ["duration_ns", "allocator_bytes_in_use", "stack_id", "micro_batch", "layer"],
            "event": ["op", "tensor"], "iteration": ["wall_time_ns"],
            "metadata": ["device_memory_bytes", "model_layers"], "root": ["format_version"]}
    out = []
    for kind, obj in _objects(t):
        for k in keys.get(kind, []):
            if k in obj and isinstance(obj[k], int) and not isinstance(obj[k], bool):
                out.append((kind, obj, k))
    return out


def _int_must_fail(t, kind, obj, key, v):
    """Whether setting obj[key] = v breaks a documented rule of `t`."""
    if key in ("micro_batch", "layer", "model_layers"):
        return v < 0 or v > I32_MAX
    if key == "format_version":
        return v != 1
    if key == "device_address":
        return v < 0 or v > U64_MAX
    if key == "id":
        if v < 0 or v > U64_MAX or v in _ids(t) - {obj["id"]}:
            return True
        return v != obj["id"] and obj["id"] in _used_ids(t)
    if kind == "event" and key == "tensor":
        return v < 0 or v > U64_MAX or v not in _ids(t) or None
    if kind == "event" and key == "op":
        if v < 0 or v > (1 << 32) - 1:
            return True
        for it in t["iterations"]:
            if any(e is obj for e in it.get("memory_events", [])):
                return v >= len(it["ops"]) or None
        return None
    if v < 0 or v > I64_MAX:
        return True
    if key == "size_bytes":
        if v == 0:
            return True
        rest = sum(x["size_bytes"] for x in t["tensors"] if x is not obj)
        if rest + v > I64_MAX:
            return True
        return None if _shape_bytes(obj) is not None else False  # shape rule: see below
    if key == "duration_ns":
        rest = sum(o.get("duration_ns", 0) for it in t["iterations"] for o in it["ops"]
                   if o is not obj and o.get("duration_ns", 0) > 0)
        return rest + v > I64_MAX
    if key == "wall_time_ns":
        rest = sum(it.get("wall_time_ns", 0) for it in t["iterations"] if it is not obj)
        return rest + v > I64_MAX
    return False


def _shape_bytes(tensor):
    shape, dtype = tensor.get("shape"), tensor.get("dtype")
    if not shape or dtype not in ITEMSIZE:
        return None
    n = ITEMSIZE[dtype]
    for d in shape:
        n *= d
    return n


class TraceJsonMutator:
    """Mutations of one JSON trace (a parsed dict)."""

    def __init__(self, trace):
        self.base = trace

    def mutations(self):
        return [self.extreme_int, self.delete_field, self.type_swap, self.unknown_field,
                self.bad_enum, self.zero_iterations, self.empty_iteration, self.sentinel,
                self.number_overflow, self.truncate, self.byte_flip, self.negative_bandwidth,
                self.shape_vs_size, self.too_many_uses, self.duplicate_event,
                self.deep_nesting, self.optimizer_in_the_middle, self.duplicate_op_name,
                self.unknown_reference]

    def extreme_int(self, rng):
        t = copy.deepcopy(self.base)
        fields = _valid_int_fields(t)
        kind, obj, key = rng.choice(fields)
        v = rng.choice(EXTREMES)
        must = _int_must_fail(t, kind, obj, key, v)
        obj[key] = v
        if key == "size_bytes" and must is None:
            need = _shape_bytes(obj)
            must = need is not None and need > v
        # None: the rule outcome depends on lifetimes; not declared.
        return "extreme-int:%s.%s=%d" % (kind, key, v), dumps(t), bool(must)

    def delete_field(self, rng):
        t = copy.deepcopy(self.base)
        kind, obj = rng.choice([(k, o) for k, o in _objects(t) if o])
        key = rng.choice(sorted(obj))
        del obj[key]
        must = key in REQUIRED.get(kind, set())
        return "delete:%s.%s" % (kind, key), dumps(t), must

    def type_swap(self, rng):
        t = copy.deepcopy(self.base)
        kind, obj = rng.choice([(k, o) for k, o in _objects(t) if o and k != "root"])
        key = rng.choice(sorted(obj))
        old = obj[key]
        choices = ["text", 1.5, True, None, [], {}, 7]
        new = rng.choice([c for c in choices if type(c) is not type(old)])
        obj[key] = new
        # An op may name itself by index; bandwidths take any number.
        lenient = (kind == "op" and key == "name" and isinstance(new, int) and
                   not isinstance(new, bool)) or \
            (key.endswith("bytes_per_s") and isinstance(new, (int, float)) and
             not isinstance(new, bool)) or \
            (kind == "metadata" and key == "attributes" and new == {})
        return "type-swap:%s.%s->%s" % (kind, key, type(new).__name__), dumps(t), not lenient

    def unknown_field(self, rng):
        t = copy.deepcopy(self.base)
        kind, obj = rng.choice(_objects(t))
        obj["unknown_" + rng.choice(["x", "size", "Phase", "ops_"])] = 1
        return "unknown-field:%s" % kind, dumps(t), True

    def bad_enum(self, rng):
        t = copy.deepcopy(self.base)
        cands = [(o, "phase") for k, o in _objects(t) if k == "op"] + \
                [(o, "kind") for k, o in _objects(t) if k in ("event", "tensor") and "kind" in o] + \
                [(o, "dtype") for k, o in _objects(t) if k == "tensor" and "dtype" in o]
        obj, key = rng.choice(cands)
        obj[key] = rng.choice(["", "FORWARDS", "FWD", "ALLOC ", "float33", "-1", "\u00e9"])
        return "bad-enum:%s" % key, dumps(t), True

    def zero_iterations(self, rng):
        t = copy.deepcopy(self.base)
        t["iterations"] = []
        return "zero-iterations", dumps(t), True

    def empty_iteration(self, rng):
        t = copy.deepcopy(self.base)
        t["iterations"].append({"wall_time_ns": 1, "ops": []})
        return "empty-iteration", dumps(t), True

    def sentinel(self, rng):
        t = copy.deepcopy(self.base)
        ops = [o for k, o in _objects(t) if k == "op"]
        op = rng.choice(ops)
        key = rng.choice(["duration_ns", "allocator_bytes_in_use", "stack_id", "micro_batch",
                          "layer"])
        op[key] = I32_MIN if key in ("micro_batch", "layer") else I64_MIN
        return "absent-sentinel:op.%s" % key, dumps(t), True

    def number_overflow(self, rng):
        text = dumps(self.base).decode()
        spots = [i for i in range(len(text) - 1) if text[i] == ":" and text[i + 2].isdigit()]
        i = rng.choice(spots) + 2
        j = i
        while text[j].isdigit() or text[j] in ".eE+-":
            j += 1
        v = rng.choice(["1e400", "-1e400", "1e309", "123456789e999"])
        return "number-overflow", (text[:i] + v + text[j:]).encode(), True

    def truncate(self, rng):
        data = dumps(self.base)
        end = data.rstrip().rfind(b"}")
        cut = rng.randrange(0, end)
        return "truncate", data[:cut], True

    def byte_flip(self, rng):
        data = bytearray(dumps(self.base))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        return "byte-flip", bytes(data), False

    def negative_bandwidth(self, rng):
        t = copy.deepcopy(self.base)
        md = t.setdefault("metadata", {})
        md[rng.choice(["h2d_bandwidth_bytes_per_s", "d2h_bandwidth_bytes_per_s"])] = \
            rng.choice([-1, -1e9, -1e-300])
        return "negative-bandwidth", dumps(t), True

    def shape_vs_size(self, rng):
        t = copy.deepcopy(self.base)
        x = rng.choice(t["tensors"])
        x["dtype"] = "float32"
        big = rng.choice([x["size_bytes"] // 4 + 1, 1 << 40, 1 << 62])
        x["shape"] = [big, 1]
        return "shape-vs-size", dumps(t), True

    def too_many_uses(self, rng):
        t = copy.deepcopy(self.base)
        op = rng.choice([o for k, o in _objects(t) if k == "op"])
        ids = sorted(_ids(t))
        op["inputs"] = [ids[0]] * 65536
        return "too-many-uses", dumps(t), True

    def duplicate_event(self, rng):
        t = copy.deepcopy(self.base)
        its = [it for it in t["iterations"] if it.get("memory_events")]
        if not its:
            return self.zero_iterations(rng)
        it = rng.choice(its)
        e = rng.choice(it["memory_events"])
        it["memory_events"].append(dict(e))
        # Every event kind changes the tensor's state: repeating one at the
        # same op is a double alloc/free/swap-out or a swap-in without swap-out.
        return "duplicate-event:%s" % e["kind"], dumps(t), True

    def deep_nesting(self, rng):
        t = copy.deepcopy(self.base)
        depth = rng.choice([1000, 100000])
        text = dumps(t).decode()
        i = text.index("{") + 1
        nested = '"deep": ' + "[" * depth + "]" * depth + ","
        return "deep-nesting:%d" % depth, (text[:i] + nested + text[i:]).encode(), True

    def optimizer_in_the_middle(self, rng):
        t = copy.deepcopy(self.base)
        it = rng.choice(t["iterations"])
        ops = it["ops"]
        later_fb = [i for i in range(len(ops)) if ops[i]["phase"] in ("FORWARD", "BACKWARD")]
        if len(later_fb) < 2:
            return self.zero_iterations(rng)
        i = later_fb[0]
        ops[i]["phase"] = "OPTIMIZER"
        return "phase-order", dumps(t), True

    def duplicate_op_name(self, rng):
        t = copy.deepcopy(self.base)
        names = t.get("op_names") or [o["name"] for k, o in _objects(t) if k == "op"]
        t["op_names"] = list(dict.fromkeys(n for n in names if isinstance(n, str)))
        t["op_names"].append(t["op_names"][0])
        return "duplicate-op-name", dumps(t), True

    def unknown_reference(self, rng):
        t = copy.deepcopy(self.base)
        op = rng.choice([o for k, o in _objects(t) if k == "op"])
        missing = max(_ids(t)) + rng.choice([1, 1000, 1 << 40])
        op.setdefault("inputs", []).append(missing)
        return "unknown-tensor", dumps(t), True


class TraceBinaryMutator:
    """Mutations of one trace in the binary form, made on its records."""

    def __init__(self, trace):
        self.base = trace
        self.records = wire.trace_records(trace)

    def mutations(self):
        return [self.enum_value, self.end_count, self.drop_record, self.duplicate_record,
                self.sentinel, self.zero_iterations, self.iteration_index, self.bad_magic,
                self.format_version, self.truncate_boundary, self.truncate_inside,
                self.byte_flip, self.varint_extreme, self.name_id, self.huge_record]

    def _recs(self):
        return copy.deepcopy(self.records)

    @staticmethod
    def _items(recs, num):
        """(record index, item index) of the items of the records numbered `num`."""
        return [(r, i) for r, (n, fields) in enumerate(recs) if n == num
                for i in range(len(fields))]

    def _edit_item(self, rng, recs, num, edit):
        r, i = rng.choice(self._items(recs, num))
        n, wt, payload = recs[r][1][i]
        fields = wire.decode(payload)
        edit(fields)
        recs[r][1][i] = (n, wt, wire.encode(fields))

    def enum_value(self, rng):
        recs = self._recs()
        which = rng.choice([w for w in [(5, 2, "phase", 4), (3, 3, "dtype", 14),
                                        (3, 5, "kind", 7), (6, 2, "event", 4)]
                            if self._items(recs, w[0])])
        num, field, name, count = which
        v = rng.choice([-1, count, 99, I32_MIN, I32_MAX])

        def edit(fields):
            fields[:] = [f for f in fields if f[0] != field] + [(field, wire.VARINT, v)]
        self._edit_item(rng, recs, num, edit)
        return "bin-enum:%s=%d" % (name, v), wire.encode_trace(recs), True

    def end_count(self, rng):
        recs = self._recs()
        end = recs[-1][1]
        k = rng.randrange(len(end))
        num, wt, v = end[k]
        end[k] = (num, wt, v + (rng.choice([1, -1, 1 << 32]) if v > 0 else 1))
        return "bin-end-count:%d" % num, wire.encode_trace(recs), True

    def drop_record(self, rng):
        recs = self._recs()
        i = rng.randrange(len(recs))
        num = recs[i][0]
        del recs[i]
        # Every record is needed: the header, tensors (used by ops), the
        # iteration framing, ops (counted), events (counted), the end.
        return "bin-drop-record:%d" % num, wire.encode_trace(recs), True

    def duplicate_record(self, rng):
        recs = self._recs()
        i = rng.choice([k for k, r in enumerate(recs) if r[0] in (1, 3, 5, 6, 7, 8)])
        recs.insert(i, copy.deepcopy(recs[i]))
        return "bin-duplicate-record:%d" % recs[i][0], wire.encode_trace(recs), True

    def sentinel(self, rng):
        recs = self._recs()
        field, name, v = rng.choice([(5, "duration_ns", I64_MIN), (6, "allocator", I64_MIN),
                                     (7, "stack_id", -1), (8, "micro_batch", I32_MIN),
                                     (9, "layer", -1)])

        def edit(fields):
            fields[:] = [f for f in fields if f[0] != field] + [(field, wire.VARINT, v)]
        self._edit_item(rng, recs, 5, edit)
        return "bin-negative:%s" % name, wire.encode_trace(recs), True

    def zero_iterations(self, rng):
        recs = [r for r in self._recs() if r[0] in (1, 3)]
        recs.append((8, [(1, wire.VARINT, sum(len(f) for n, f in recs if n == 3))]))
        return "bin-zero-iterations", wire.encode_trace(recs), True

    def iteration_index(self, rng):
        recs = self._recs()
        i = rng.choice([k for k, r in enumerate(recs) if r[0] == 4])
        recs[i] = (4, [(1, wire.VARINT, rng.choice([5, 1 << 31, (1 << 32) - 1]))])
        return "bin-iteration-index", wire.encode_trace(recs), True

    def bad_magic(self, rng):
        return "bin-magic", wire.encode_trace(self._recs(), magic=b"SWPLTRC2"), True

    def format_version(self, rng):
        recs = self._recs()
        header = recs[0][1]
        header[0] = (1, wire.VARINT, rng.choice([0, 2, (1 << 32) - 1]))
        return "bin-format-version", wire.encode_trace(recs), True

    def _boundaries(self, data):
        pos, out = len(wire.TRACE_MAGIC), []
        while pos < len(data):
            out.append(pos)
            n, p = wire.read_varint(data, pos)
            pos = p + n
        return out

    def truncate_boundary(self, rng):
        data = wire.encode_trace(self._recs())
        cut = rng.choice(self._boundaries(data))
        return "bin-truncate-boundary", data[:cut], True

    def truncate_inside(self, rng):
        data = wire.encode_trace(self._recs())
        starts = self._boundaries(data) + [len(data)]
        k = rng.randrange(len(starts) - 1)
        lo, hi = starts[k] + 1, starts[k + 1]
        if hi - lo < 1:
            return self.truncate_boundary(rng)
        return "bin-truncate-inside", data[:rng.randrange(lo, hi)], True

    def byte_flip(self, rng):
        data = bytearray(wire.encode_trace(self._recs()))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(wire.TRACE_MAGIC), len(data))
            data[i] ^= 1 << rng.randrange(8)
        return "bin-byte-flip", bytes(data), False

    def varint_extreme(self, rng):
        """Any varint inside a record's items pushed to an extreme (generic)."""
        recs = self._recs()
        r = rng.choice([k for k, rec in enumerate(recs) if rec[1]])
        i = rng.randrange(len(recs[r][1]))
        n, wt, val = recs[r][1][i]
        v = rng.choice([0, I64_MAX, -1, I64_MIN, U64_MAX, 1 << 31, 1 << 32])
        if wt == wire.LEN:
            try:
                fields = wire.decode(val)
            except ValueError:
                fields = []
            ints = [k for k, f in enumerate(fields) if f[1] == wire.VARINT]
            if ints:
                k = rng.choice(ints)
                fields[k] = (fields[k][0], wire.VARINT, v & U64_MAX)
                recs[r][1][i] = (n, wt, wire.encode(fields))
        else:
            recs[r][1][i] = (n, wt, v & U64_MAX) if wt == wire.VARINT else (n, wt, val)
        return "bin-varint-extreme", wire.encode_trace(recs), False

    def name_id(self, rng):
        recs = self._recs()
        v = rng.choice([1000, I32_MAX, (1 << 32) - 1])

        def edit(fields):
            fields[:] = [(1, wire.VARINT, v)] + [f for f in fields if f[0] != 1]
        self._edit_item(rng, recs, 5, edit)
        return "bin-op-name-id", wire.encode_trace(recs), True

    def huge_record(self, rng):
        """A record length far beyond the data (no allocation may follow it)."""
        data = wire.encode_trace(self._recs())
        cut = rng.choice(self._boundaries(data))
        n = rng.choice([(1 << 30) - 1, 1 << 30, (1 << 32) - 1])
        return "bin-huge-record-length", data[:cut] + wire.varint(n) + b"\x0a", True
