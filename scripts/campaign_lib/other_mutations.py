"""Mutations of policies, quality baselines, gzip streams and command-line
flag values for the mutation campaign. As in trace_mutations, each returns
(name, bytes or value, must_fail); must_fail marks inputs that break a
documented rule (so exit status 0 is a bug).
"""

import copy
import gzip
import json
import zlib

from . import trace_mutations as tm

# --- policies -----------------------------------------------------------------


def _policy_objects(p):
    out = [("policy", p)]
    if isinstance(p.get("fingerprint"), dict):
        out.append(("fingerprint", p["fingerprint"]))
    for x in p.get("items", []):
        out.append(("item", x))
        if isinstance(x.get("runtime_key"), dict):
            out.append(("runtime_key", x["runtime_key"]))
    for x in p.get("parameters", []):
        out.append(("parameter", x))
    if isinstance(p.get("device"), dict):
        out.append(("device", p["device"]))
    return out


# Bounds of a policy's planner estimates (policy/policy.h, ValidateHeader):
# expected_overhead_ns and simulated_iteration_time_ns in [0, 1e17],
# expected_peak_bytes >= 0.
MAX_POLICY_TIME_NS = 10 ** 17
ESTIMATE_FIELDS = ("expected_peak_bytes", "expected_overhead_ns", "simulated_iteration_time_ns")


def estimate_in_range(key, v):
    if key == "expected_peak_bytes":
        return 0 <= v <= tm.I64_MAX
    return 0 <= v <= MAX_POLICY_TIME_NS


class PolicyMutator:
    """Mutations of a JSON policy that `check` and `simulate` accept on its
    trace (made by `plan` at the start of the campaign). `trace` (the JSON
    trace the policy was made for) tells which iterations share the planned
    iteration's op sequence: a policy naming one of those still matches its
    fingerprint (the hash and op count), so it is rightly accepted."""

    OP_FIELDS = ("swap_out_op", "release_op", "swap_in_op", "first_use_op")

    def __init__(self, policy, trace=None):
        self.base = policy
        seqs = [tuple((op.get("name"), op.get("phase")) for op in it.get("ops", []))
                for it in (trace or {}).get("iterations", [])]
        planned = policy.get("fingerprint", {}).get("iteration", 0)
        self.matching_iterations = {i for i, s in enumerate(seqs)
                                    if planned < len(seqs) and s == seqs[planned]}

    def mutations(self):
        return [self.unknown_field, self.format_version, self.fingerprint, self.type_swap,
                self.number_overflow, self.truncate, self.negative_bandwidth, self.budget,
                self.op_out_of_range, self.byte_flip, self.extreme_int, self.delete_field,
                self.estimate]

    def iteration_must_fail(self, v):
        """Whether fingerprint.iteration = v must be refused: any iteration
        but those with the planned op sequence (refused as a fingerprint
        mismatch, or past 2^31 - 1 at read)."""
        return v not in self.matching_iterations

    def unknown_field(self, rng):
        p = copy.deepcopy(self.base)
        kind, obj = rng.choice(_policy_objects(p))
        obj["unknown_" + rng.choice(["x", "hash", "Name"])] = 1
        return "policy-unknown-field:%s" % kind, tm.dumps(p), True

    def format_version(self, rng):
        p = copy.deepcopy(self.base)
        # Never the policy's own version (a v2 policy stays valid as 2); 1 on
        # a v2 policy is refused (it has v2 sections).
        p["format_version"] = rng.choice([v for v in [0, 1, 2, 3, (1 << 32) + 1, -1, 1 << 40]
                                          if v != self.base.get("format_version")])
        return "policy-format-version:%d" % p["format_version"], tm.dumps(p), True

    def fingerprint(self, rng):
        p = copy.deepcopy(self.base)
        fp = p["fingerprint"]
        key = rng.choice(["iteration_ops", "iteration", "op_sequence_hash"])
        if key == "op_sequence_hash":
            fp[key] = "0x0123456789abcdef"
        else:
            fp[key] = rng.choice([fp[key] + 1, (1 << 31) - 1, (1 << 32) + fp[key], -1])
        must = key != "iteration" or self.iteration_must_fail(fp[key])
        return "policy-fingerprint:%s" % key, tm.dumps(p), must

    def estimate(self, rng):
        """A planner estimate at, inside or past its bounds (issue 19: any
        int64 was accepted and carried into reports and replay's sums)."""
        p = copy.deepcopy(self.base)
        key = rng.choice(ESTIMATE_FIELDS)
        v = p[key] = rng.choice([-1, 0, MAX_POLICY_TIME_NS, MAX_POLICY_TIME_NS + 1, 1 << 62,
                                 tm.I64_MAX, tm.I64_MIN, tm.I32_MAX])
        return "policy-estimate:%s=%d" % (key, v), tm.dumps(p), not estimate_in_range(key, v)

    def type_swap(self, rng):
        p = copy.deepcopy(self.base)
        kind, obj = rng.choice([(k, o) for k, o in _policy_objects(p) if o])
        key = rng.choice(sorted(obj))
        old = obj[key]
        new = rng.choice([c for c in ["text", 1.5, True, None, [1], {"a": 1}]
                          if type(c) is not type(old)])
        obj[key] = new
        lenient = key.endswith("bytes_per_s") and isinstance(new, float)
        return "policy-type-swap:%s.%s" % (kind, key), tm.dumps(p), not lenient

    def number_overflow(self, rng):
        text = tm.dumps(self.base).decode()
        spots = [i for i in range(len(text) - 2) if text[i] == ":" and text[i + 2].isdigit()]
        i = rng.choice(spots) + 2
        j = i
        while text[j].isdigit() or text[j] in ".eE+-":
            j += 1
        return "policy-number-overflow", (text[:i] + "1e400" + text[j:]).encode(), True

    def truncate(self, rng):
        data = tm.dumps(self.base)
        return "policy-truncate", data[:rng.randrange(0, data.rstrip().rfind(b"}"))], True

    def negative_bandwidth(self, rng):
        p = copy.deepcopy(self.base)
        p[rng.choice(["h2d_bandwidth_bytes_per_s", "d2h_bandwidth_bytes_per_s"])] = \
            rng.choice([-1.0, -1e9])
        return "policy-negative-bandwidth", tm.dumps(p), True

    def budget(self, rng):
        p = copy.deepcopy(self.base)
        p["device_budget_bytes"] = rng.choice([tm.I64_MIN, -1])
        return "policy-budget:%d" % p["device_budget_bytes"], tm.dumps(p), True

    def op_out_of_range(self, rng):
        p = copy.deepcopy(self.base)
        if not p.get("items"):
            return self.budget(rng)
        item = rng.choice(p["items"])
        n = p["fingerprint"]["iteration_ops"]
        item[rng.choice(self.OP_FIELDS)] = rng.choice([n, n + 5, (1 << 31) - 1, -1])
        return "policy-op-out-of-range", tm.dumps(p), True

    def byte_flip(self, rng):
        data = bytearray(tm.dumps(self.base))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        return "policy-byte-flip", bytes(data), False

    def extreme_int(self, rng):
        p = copy.deepcopy(self.base)
        ints = [(k, o, key) for k, o in _policy_objects(p) for key in sorted(o)
                if isinstance(o[key], int) and not isinstance(o[key], bool)]
        kind, obj, key = rng.choice(ints)
        old = obj[key]
        v = obj[key] = rng.choice([x for x in tm.EXTREMES if x != old])
        # Negative values and values past int64 break every integer field; a
        # changed fingerprint no longer matches the trace; an op index must
        # lie inside the iteration.
        must = v < 0 or v > tm.I64_MAX or kind == "fingerprint" or \
            (key in self.OP_FIELDS and v >= p["fingerprint"]["iteration_ops"]) or \
            (kind == "policy" and key in ESTIMATE_FIELDS and not estimate_in_range(key, v))
        if kind == "fingerprint" and key == "iteration":
            must = self.iteration_must_fail(v)
        return "policy-extreme-int:%s.%s" % (kind, key), tm.dumps(p), must

    def delete_field(self, rng):
        p = copy.deepcopy(self.base)
        key = rng.choice(sorted(p))
        del p[key]
        return "policy-delete:%s" % key, tm.dumps(p), key in ("format", "fingerprint")


def binary_policy_mutations(data, rng):
    """Generic mutations of a binary policy (a Policy message)."""
    choice = rng.randrange(3)
    if choice == 0:
        return "policy-bin-truncate", data[:rng.randrange(len(data))], False
    if choice == 1:
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return "policy-bin-byte-flip", bytes(b), False
    return "policy-bin-garbage-prefix", bytes([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]) + data, True


# --- quality baselines ----------------------------------------------------------


class BaselineMutator:
    """Mutations of a quality baseline (swapplan regress --baseline)."""

    def __init__(self, baseline):
        self.base = baseline

    def _objects(self, b):
        out = [("baseline", b)]
        for e in b.get("entries", []):
            out.append(("entry", e))
            if isinstance(e.get("trace_identity"), dict):
                out.append(("trace_identity", e["trace_identity"]))
            for r in e.get("results", {}).values():
                out.append(("result", r))
        return out

    def mutations(self):
        return [self.unknown_field, self.type_swap, self.identity, self.format_version,
                self.unknown_planner, self.number_overflow, self.truncate, self.extreme_int,
                self.missing_trace, self.oversubscription, self.budget]

    def budget(self, rng):
        """A recorded budget_bytes the entry's settings do not give (issue
        19: it was read and never compared): 0 is refused at read, any other
        change fails every row of the entry (budget-changed)."""
        b = copy.deepcopy(self.base)
        e = rng.choice(b["entries"])
        old = e.get("budget_bytes", 0)
        e["budget_bytes"] = rng.choice([v for v in [0, 1, old - 1, old + 1, 1 << 32, 1 << 62,
                                                    tm.I64_MAX] if v != old and v >= 0])
        return "baseline-budget:%d" % e["budget_bytes"], tm.dumps(b), True

    def unknown_field(self, rng):
        b = copy.deepcopy(self.base)
        kind, obj = rng.choice(self._objects(b))
        obj["unknown_" + rng.choice(["x", "budget", "Trace"])] = 1
        return "baseline-unknown-field:%s" % kind, tm.dumps(b), True

    def type_swap(self, rng):
        b = copy.deepcopy(self.base)
        kind, obj = rng.choice([(k, o) for k, o in self._objects(b) if o])
        key = rng.choice(sorted(obj))
        old = obj[key]
        obj[key] = rng.choice([c for c in ["text", 1.5, True, None, [1], {"a": 1}]
                               if type(c) is not type(old)])
        lenient = (key == "oversubscription" and isinstance(obj[key], float)) or \
            key in ("device_memory", "reserve")
        return "baseline-type-swap:%s.%s" % (kind, key), tm.dumps(b), not lenient

    def identity(self, rng):
        b = copy.deepcopy(self.base)
        e = rng.choice(b["entries"])
        key = rng.choice(sorted(e["trace_identity"]))
        v = e["trace_identity"][key]
        e["trace_identity"][key] = "0x0000000000000001" if isinstance(v, str) else v + 1
        return "baseline-identity:%s" % key, tm.dumps(b), True

    def format_version(self, rng):
        b = copy.deepcopy(self.base)
        b["format_version"] = rng.choice([0, 2, (1 << 32) + 1])
        return "baseline-format-version", tm.dumps(b), True

    def unknown_planner(self, rng):
        b = copy.deepcopy(self.base)
        e = rng.choice(b["entries"])
        e["planners"] = list(e["planners"]) + ["no-such-planner"]
        return "baseline-unknown-planner", tm.dumps(b), True

    def number_overflow(self, rng):
        text = tm.dumps(self.base).decode()
        spots = [i for i in range(len(text) - 2) if text[i] == ":" and text[i + 2].isdigit()]
        i = rng.choice(spots) + 2
        j = i
        while text[j].isdigit() or text[j] in ".eE+-":
            j += 1
        return "baseline-number-overflow", (text[:i] + "1e400" + text[j:]).encode(), True

    def truncate(self, rng):
        data = tm.dumps(self.base)
        return "baseline-truncate", data[:rng.randrange(0, data.rstrip().rfind(b"}"))], True

    def extreme_int(self, rng):
        b = copy.deepcopy(self.base)
        ints = [(k, o, key) for k, o in self._objects(b) for key in sorted(o)
                if isinstance(o[key], int) and not isinstance(o[key], bool)]
        kind, obj, key = rng.choice(ints)
        old = obj[key]
        v = obj[key] = rng.choice([x for x in tm.EXTREMES if x != old])
        # A changed identity or budget is a mismatch, a negative or
        # out-of-range value a schema error, a lower recorded time a
        # regression; a higher recorded time only an improvement.
        must = kind != "result" or v < 0 or v > tm.I64_MAX or v < old
        return "baseline-extreme-int:%s.%s" % (kind, key), tm.dumps(b), must

    def missing_trace(self, rng):
        b = copy.deepcopy(self.base)
        rng.choice(b["entries"])["trace"] = "/nonexistent/trace.json"
        return "baseline-missing-trace", tm.dumps(b), True

    def oversubscription(self, rng):
        b = copy.deepcopy(self.base)
        e = rng.choice(b["entries"])
        e["oversubscription"] = rng.choice([0, 0.5, -1, 1e308])
        e.pop("device_memory", None)
        e.pop("reserve", None)
        return "baseline-oversubscription", tm.dumps(b), e["oversubscription"] < 1


# --- gzip -----------------------------------------------------------------------


def gzip_member(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def bomb(member_text, members):
    """`members` concatenated gzip members each inflating to member_text."""
    return gzip_member(member_text) * members


def gzip_mutations(data, rng):
    """(name, bytes, must_fail) for a valid trace `data`, gzip-compressed."""
    gz = gzip_member(data)
    choice = rng.randrange(5)
    if choice == 0:
        return "gzip-valid", gz, False
    if choice == 1:
        half = len(data) // 2
        return "gzip-two-members", gzip_member(data[:half]) + gzip_member(data[half:]), False
    if choice == 2:
        return "gzip-cut", gz[:rng.randrange(10, len(gz) - 1)], True
    if choice == 3:
        b = bytearray(gz)
        i = rng.randrange(10, len(b))  # past the fixed 10-byte header
        b[i] ^= 1 << rng.randrange(8)
        return "gzip-byte-flip", bytes(b), True
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return "gzip-trailing-garbage", z.compress(data) + z.flush() + b"\x1f\x8b\x08garbage", True


# --- command-line flag values ---------------------------------------------------

# Flag values as the flags take them now (cli/flags.h, docs/cli.md): a size
# needs its unit (64GiB, 600B), a duration ns/us/ms/s/min/h, a bandwidth a
# rate unit (25GB/s); a bare number is refused for all three. Planner
# options (--min-tensor-bytes, --iteration-time-ns) are parsed by the
# planner's own option table, where a bare number of bytes or ns is fine.
BAD_SIZES = ["", " ", "-1B", "-5MB", "abc", "1e400B", "nanB", "infB", "1e30TB",
             "9223372036854775808B", "9223372036854775807B", "18446744073709551616B",
             "1..5MB", "GiB", "1GiBs", "9223372036854775807TB", "1 2", "64", "0", "600",
             "9223372036854775807", "25GB/s", "10us", "1GiB\n2GiB"]
OK_SIZES = ["1B", "1KiB", "512MiB", "1TiB", "1000TiB", "8388607TiB", "1.5GiB"]
BAD_BANDWIDTHS = ["", "0B/s", "0GB/s", "-1GB/s", "nan", "nanGB/s", "inf", "infGB/s",
                  "1e400GB/s", "abc", "1GB/m", "25", "25GB", "1e9", "GB/s"]
OK_BANDWIDTHS = ["1B/s", "1e300GB/s", "1e-300B/s", "25GB/s", "900MB/s", "1.5GiB/s"]
BAD_DURATIONS = ["", "-1us", "nan", "nanus", "abc", "1e400s", "-0.5ms", "10 parsecs", "5",
                 "0", "1e30s", "9223372036854775808ns", "9223372036854775807ns", "1GiB", "us"]
OK_DURATIONS = ["0ns", "0s", "1ns", "10us", "2.5ms", "1000000h", "9223372036854775ns"]
BAD_COUNTS = ["", "-1", "abc", "1e400", "99999999999999999999", "2147483648", "1.5", "0x10",
              "9223372036854775808"]
BAD_OVERSUBSCRIPTIONS = ["", "0", "0x", "0.5", "0.5x", "-1", "nan", "inf", "1e400", "abc", "2y"]
OK_OVERSUBSCRIPTIONS = ["1", "1x", "2x", "1.5", "1e308", "1000x"]
BAD_SCALES = ["", "0", "0x", "-1", "-0.5x", "nan", "inf", "1e400", "abc", "2y"]
OK_SCALES = ["1x", "0.5x", "2", "1e-9", "1e300"]
BAD_FRACTIONS = ["", "-1", "-5%", "nan", "inf", "1e400", "abc", "5%%"]
BAD_PLANNER_SIZES = ["", "-1", "abc", "1e400", "nanB", "1..5MB", "-5MiB"]
OK_PLANNER_SIZES = ["0", "1", "1MiB", "1TiB", "0B"]
BAD_PLANNER_DURATIONS = ["", "-1", "abc", "1e400s", "nan", "-5us"]
OK_PLANNER_DURATIONS = ["0", "1000", "10us", "1s"]

# (command template, flag, kind): {t} is a valid trace, {p} its policy, {o}
# an output path.
PLAN = "plan {t} --device-memory 1GiB --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s -o {o}"
COMPARE = "compare {t} --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s --planners noswap,lru"
REPLAY = "replay {t} --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s --rows none"
FLAG_SITES = [
    ("plan {t} --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s -o {o}", "--device-memory", "size"),
    (PLAN, "--reserve", "size"),
    ("plan {t} --device-memory 1GiB --d2h-bandwidth 1GB/s -o {o}", "--h2d-bandwidth",
     "bandwidth"),
    ("plan {t} --device-memory 1GiB --h2d-bandwidth 1GB/s -o {o}", "--d2h-bandwidth",
     "bandwidth"),
    (PLAN, "--copy-latency", "duration"),
    (PLAN, "--compute-scale", "scale"),
    (PLAN, "--min-tensor-bytes", "planner-size"),
    (PLAN, "--iteration", "count"),
    (COMPARE, "--oversubscription", "oversubscription"),
    ("compare {t} --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s --planners noswap,lru "
     "--device-memory 1GiB", "--reserve", "size"),
    (COMPARE, "--device-memory", "size"),
    ("compare {t} --oversubscription 2x --d2h-bandwidth 1GB/s --planners noswap,lru",
     "--h2d-bandwidth", "bandwidth"),
    (COMPARE + " --oversubscription 2x", "--copy-latency", "duration"),
    (COMPARE + " --oversubscription 2x", "--compute-scale", "scale"),
    ("simulate {t} {p}", "--device-memory", "size"),
    ("simulate {t} {p}", "--reserve", "size"),
    ("simulate {t} {p}", "--copy-latency", "duration"),
    ("simulate {t} {p}", "--h2d-bandwidth", "bandwidth"),
    ("simulate {t} {p}", "--host-dispatch", "duration"),
    ("simulate {t} {p}", "--event-query", "duration"),
    ("simulate {t} {p}", "--launch-queue-depth", "count"),
    ("simulate {t} {p}", "--top-stalls", "count"),
    ("check {t} {p}", "--iteration-time-ns", "planner-duration"),
    ("inspect {t}", "--top-ops", "count"),
    ("curve {t}", "--iteration", "count"),
    (REPLAY, "--device-memory", "size"),
    (REPLAY, "--iterations", "count"),
    (REPLAY, "--max-length-change", "fraction"),
]

SYNTH_FLAGS = ["--hidden", "--layers", "--seq", "--micro-batch", "--micro-batches", "--heads",
               "--vocab", "--ffn", "--experts", "--tp", "--dp", "--pp", "--iterations"]
SYNTH_EXTREMES = ["2147483640", "2147483647", "9223372036854775807", "1099511627776"]


# Bytes of the valid sizes, for the reserve rule below.
OK_SIZE_BYTES = {"1B": 1, "1KiB": 1 << 10, "512MiB": 512 << 20, "1TiB": 1 << 40,
                 "1000TiB": 1000 << 40, "8388607TiB": 8388607 << 40, "1.5GiB": 3 << 29}


def reserve_exhausts(flag, value, device_bytes):
    """Whether a valid size given to --reserve takes all of the site's
    device memory `device_bytes` (1 GiB where the command gives
    --device-memory 1GiB; simulate's is the policy's capacity, 80 GiB for a
    synthesized trace), which is refused."""
    return flag == "--reserve" and value in OK_SIZE_BYTES and OK_SIZE_BYTES[value] >= device_bytes


def site_value(flag, kind, rng):
    """(value, must_fail) for `flag` of `kind` at its site: flag_value plus
    the site's own rules (no device memory of 0, an iteration index past
    the trace's, at least one op dispatched ahead; the reserve rule needs
    the site's device memory: reserve_exhausts)."""
    value, must = flag_value(kind, rng)
    if flag == "--iteration" and value == "2147483647":
        must = True  # past the trace's iterations
    if flag == "--launch-queue-depth" and value == "0":
        must = True  # the host must dispatch at least one op ahead
    return value, must


def flag_value(kind, rng):
    """(value, must_fail) for a flag of `kind`."""
    table = {
        "size": (BAD_SIZES, OK_SIZES, 0.75),
        "bandwidth": (BAD_BANDWIDTHS, OK_BANDWIDTHS, 0.75),
        "duration": (BAD_DURATIONS, OK_DURATIONS, 0.75),
        "count": (BAD_COUNTS, ["0", "1", "2147483647"], 0.8),
        "oversubscription": (BAD_OVERSUBSCRIPTIONS, OK_OVERSUBSCRIPTIONS, 0.75),
        "scale": (BAD_SCALES, OK_SCALES, 0.75),
        "fraction": (BAD_FRACTIONS, ["0", "0.5", "5%", "100%"], 0.8),
        "planner-size": (BAD_PLANNER_SIZES, OK_PLANNER_SIZES, 0.7),
        "planner-duration": (BAD_PLANNER_DURATIONS, OK_PLANNER_DURATIONS, 0.7),
    }
    bad, good, share = table[kind]
    if rng.random() < share:
        return rng.choice(bad), True
    return rng.choice(good), False


def synth_flag(rng):
    """(flag, value, must_fail) for `synth`: garbage or sizes past int64."""
    flag = rng.choice(SYNTH_FLAGS)
    r = rng.random()
    if r < 0.5:
        return flag, rng.choice(["", "-1", "abc", "1e400", "nan", "99999999999999999999"]), True
    if r < 0.7 and flag in ("--hidden", "--seq", "--vocab", "--ffn"):
        # Past the 2^56 elements a synthesized tensor may have.
        return flag, "9223372036854775807", True
    if flag in ("--iterations", "--layers", "--micro-batches", "--experts"):
        # 0 of anything but experts, negative counts, and 2^31 - 1 layers,
        # iterations or micro-batches (more ops than a trace indexes) or
        # experts (more parameters than an op takes) are all refused.
        value = rng.choice(["0", "-5", "2147483647"])
        return flag, value, not (flag == "--experts" and value == "0")
    return flag, rng.choice(SYNTH_EXTREMES), False
