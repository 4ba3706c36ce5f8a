"""Protobuf wire format, written by hand (python3 stdlib only), for the
mutation campaign: encodes swapplan binary traces (proto/trace.proto) from
the JSON form so that schema-level mutations (an enum set to -1, an end
record that miscounts) can be made exactly, and decodes any message
generically so that its varints can be pushed to extremes.

A message is a list of fields (number, wire_type, value): varint values are
Python ints (negative int64 become ten-byte two's complement), fixed64 /
fixed32 values are raw 8 / 4 bytes, length-delimited values raw bytes.
"""

import struct

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

TRACE_MAGIC = b"SWPLTRC1"

DTYPES = ["unknown", "float32", "float16", "bfloat16", "float64", "int64", "int32", "int16",
          "int8", "uint8", "bool", "float8_e4m3", "float8_e5m2", "complex64"]
DTYPE_ALIASES = {"float": 1, "fp32": 1, "half": 2, "fp16": 2, "bf16": 3, "double": 4,
                 "long": 5, "int": 6, "short": 7}
KINDS = ["OTHER", "PARAMETER", "GRADIENT", "OPTIMIZER_STATE", "ACTIVATION", "INPUT",
         "TEMPORARY"]
PHASES = ["FORWARD", "BACKWARD", "OPTIMIZER", "OTHER"]
EVENTS = ["ALLOC", "FREE", "SWAP_OUT", "SWAP_IN"]


def varint(v):
    """Encodes an int as a base-128 varint (negative: 64-bit two's complement)."""
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf, pos):
    """(value, new position); raises ValueError on a cut or overlong varint."""
    result, shift = 0, 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def encode(fields):
    """Serializes a list of (number, wire_type, value) fields."""
    out = bytearray()
    for num, wt, val in fields:
        out += varint((num << 3) | wt)
        if wt == VARINT:
            out += varint(val)
        elif wt == LEN:
            out += varint(len(val)) + val
        else:
            out += val
    return bytes(out)


def decode(buf):
    """Parses a message into fields; raises ValueError when it is not one."""
    fields, pos = [], 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ValueError("field 0")
        if wt == VARINT:
            val, pos = read_varint(buf, pos)
        elif wt == FIXED64:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wt == FIXED32:
            val, pos = buf[pos:pos + 4], pos + 4
        elif wt == LEN:
            n, pos = read_varint(buf, pos)
            val, pos = buf[pos:pos + n], pos + n
        else:
            raise ValueError("wire type %d" % wt)
        if pos > len(buf):
            raise ValueError("cut")
        fields.append((num, wt, val))
    return fields


def packed(values):
    return b"".join(varint(v) for v in values)


def double(v):
    return struct.pack("<d", v)


# --- swapplan trace records ----------------------------------------------------

def _enum(names, value, aliases=None):
    if isinstance(value, int):
        return value
    if value in names:
        return names.index(value)
    if aliases and value in aliases:
        return aliases[value]
    return 0


def tensor_fields(t):
    f = [(1, VARINT, t["id"]), (2, VARINT, t["size_bytes"])]
    if "dtype" in t:
        f.append((3, VARINT, _enum(DTYPES, t["dtype"], DTYPE_ALIASES)))
    if t.get("shape"):
        f.append((4, LEN, packed(t["shape"])))
    if "kind" in t:
        f.append((5, VARINT, _enum(KINDS, t["kind"])))
    if "storage_id" in t:
        f.append((6, VARINT, t["storage_id"]))
    if "device_address" in t:
        f.append((7, VARINT, t["device_address"]))
    if "persistent" in t:
        f.append((8, VARINT, 1 if t["persistent"] else 0))
    if t.get("name"):
        f.append((9, LEN, t["name"].encode()))
    return f


def op_fields(op, name_id):
    f = [(1, VARINT, name_id), (2, VARINT, _enum(PHASES, op["phase"]))]
    if op.get("inputs"):
        f.append((3, LEN, packed(op["inputs"])))
    if op.get("outputs"):
        f.append((4, LEN, packed(op["outputs"])))
    for num, key in ((5, "duration_ns"), (6, "allocator_bytes_in_use"), (7, "stack_id"),
                     (8, "micro_batch"), (9, "layer")):
        if key in op:
            f.append((num, VARINT, op[key]))
    return f


def metadata_fields(m):
    f = []
    for num, key in ((1, "device_name"), (5, "framework"), (6, "recorder"),
                     (7, "recorder_version"), (8, "model_name")):
        if m.get(key):
            f.append((num, LEN, m[key].encode()))
    if "device_memory_bytes" in m:
        f.append((2, VARINT, m["device_memory_bytes"]))
    for num, key in ((3, "h2d_bandwidth_bytes_per_s"), (4, "d2h_bandwidth_bytes_per_s")):
        if key in m:
            f.append((num, FIXED64, double(float(m[key]))))
    if "model_layers" in m:
        f.append((9, VARINT, m["model_layers"]))
    for k, v in sorted(m.get("attributes", {}).items()):
        f.append((10, LEN, encode([(1, LEN, k.encode()), (2, LEN, str(v).encode())])))
    return f


def trace_records(trace):
    """The binary form of a JSON trace (a dict) as a list of (record field
    number, record payload fields): header, tensors, then per iteration
    begin, ops, memory events, saved-tensor events, end; finally the end
    record."""
    names = list(trace.get("op_names", []))
    index = {n: i for i, n in enumerate(names)}
    for it in trace["iterations"]:
        for op in it.get("ops", []):
            if isinstance(op["name"], str) and op["name"] not in index:
                index[op["name"]] = len(names)
                names.append(op["name"])
    header = [(1, VARINT, trace.get("format_version", 1)),
              (2, LEN, encode(metadata_fields(trace.get("metadata", {}))))]
    header += [(3, LEN, n.encode()) for n in names]
    recs = [(1, header)]
    tensors = trace.get("tensors", [])
    if tensors:
        recs.append((3, [(1, LEN, encode(tensor_fields(t))) for t in tensors]))
    n_ops = n_events = 0
    for i, it in enumerate(trace["iterations"]):
        recs.append((4, [(1, VARINT, i)] if i else []))
        ops = it.get("ops", [])
        if ops:
            recs.append((5, [(1, LEN, encode(op_fields(
                op, index[op["name"]] if isinstance(op["name"], str) else op["name"])))
                for op in ops]))
        events = it.get("memory_events", [])
        if events:
            recs.append((6, [(1, LEN, encode([(1, VARINT, e["op"]),
                                              (2, VARINT, _enum(EVENTS, e["kind"])),
                                              (3, VARINT, e["tensor"]),
                                              (4, VARINT, 1 if e.get("passive") else 0)]))
                             for e in events]))
        if "saved_tensor_events" in it:  # one chunk, even empty: recorded
            recs.append((9, [(1, LEN, encode(
                [(1, VARINT, e["position"]),
                 (2, VARINT, 1 if e["kind"] == "UNPACK" else 0)] +
                ([(3, VARINT, e["tensor"])] if "tensor" in e else [])))
                for e in it["saved_tensor_events"]]))
        recs.append((7, [(1, VARINT, it.get("wall_time_ns", 0))]))
        n_ops += len(ops)
        n_events += len(events)
    recs.append((8, [(1, VARINT, len(tensors)), (2, VARINT, len(trace["iterations"])),
                     (3, VARINT, n_ops), (4, VARINT, n_events)]))
    return recs


def encode_trace(records, magic=TRACE_MAGIC):
    """Magic + length-delimited TraceRecord messages."""
    out = bytearray(magic)
    for num, fields in records:
        payload = encode([(num, LEN, encode(fields))])
        out += varint(len(payload)) + payload
    return bytes(out)
