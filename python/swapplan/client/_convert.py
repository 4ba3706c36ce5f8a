"""Responses as plain Python values, and request fields from Python values.

to_dict(message) gives every field of a response by its proto name (the
names of the CLI's `--json` reports, proto/planner_service.proto), with its
default when unset, integers as int (not the strings of protobuf's JSON
mapping for 64-bit integers), nested messages as dicts, repeated fields as
lists and maps as dicts. Linear in the size of the message.
"""

from google.protobuf.descriptor import FieldDescriptor

from .._units import parse_bandwidth, parse_bytes, parse_duration_ns
from ._proto import pb, policy_pb


# Names the policy schema (proto/policy.proto) keeps as bytes: UTF-8 text,
# given as str like every other name.
_TEXT_BYTES = frozenset([("swapplan.proto.DeviceModel", "name"),
                         ("swapplan.proto.MemoryTier", "name")])


def _value(field, v):
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_dict(v)
    if (field.type == FieldDescriptor.TYPE_BYTES
            and (field.containing_type.full_name, field.name) in _TEXT_BYTES):
        return v.decode("utf-8", errors="replace")
    return v


def _is_repeated(field):
    # FieldDescriptor.is_repeated (protobuf 5.x on); protobuf 7 removed
    # .label, which 3.21 (Debian) has alone.
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        repeated = field.label == FieldDescriptor.LABEL_REPEATED
    return repeated


def to_dict(message):
    """Every field of `message` (see module docstring). A oneof member that
    is not the one set is left out."""
    out = {}
    for field in message.DESCRIPTOR.fields:
        if field.containing_oneof is not None and not message.HasField(field.name):
            continue
        v = getattr(message, field.name)
        if _is_repeated(field):
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                value_field = field.message_type.fields_by_name["value"]
                out[field.name] = {k: _value(value_field, x) for k, x in v.items()}
            else:
                out[field.name] = [_value(field, x) for x in v]
        else:
            out[field.name] = _value(field, v)
    return out


_TIER_KEYS = frozenset(["name", "capacity", "bandwidth", "store_bandwidth", "load_bandwidth",
                        "latency", "shared_by_ranks"])


def memory_tier(tier, index):
    """A swapplan.proto.MemoryTier from a dict in the CLI's units, as the
    --remote-* flags give one: `capacity` (bytes, needed), `bandwidth` (both
    directions) or `store_bandwidth` and `load_bandwidth`, `latency` (default
    0), `shared_by_ranks` (default 1), `name` (default "remote"). ValueError
    naming tiers[index] for a missing or unreadable figure or an unknown key."""
    where = "tiers[%d]" % index
    if not isinstance(tier, dict):
        raise ValueError("%s: a dict of tier figures, got %r" % (where, tier))
    unknown = sorted(set(tier) - _TIER_KEYS)
    if unknown:
        raise ValueError("%s: unknown key %s (known: %s)"
                         % (where, unknown[0], ", ".join(sorted(_TIER_KEYS))))
    if tier.get("capacity") is None:
        raise ValueError("%s: give its capacity" % where)
    both = tier.get("bandwidth")
    store = tier.get("store_bandwidth", both)
    load = tier.get("load_bandwidth", both)
    if store is None or load is None:
        raise ValueError("%s: give bandwidth (or both store_bandwidth and load_bandwidth)"
                         % where)
    out = policy_pb.MemoryTier(
        name=str(tier.get("name", "remote")).encode("utf-8"),
        capacity_bytes=parse_bytes(tier["capacity"], where + ".capacity"),
        store_bandwidth_bytes_per_s=parse_bandwidth(store, where + ".store_bandwidth"),
        load_bandwidth_bytes_per_s=parse_bandwidth(load, where + ".load_bandwidth"),
        latency_ns=parse_duration_ns(tier.get("latency", 0), where + ".latency"),
        shared_by_ranks=int(tier.get("shared_by_ranks", 1)))
    return out


def device_spec(device=None, device_memory=None, reserve=None, h2d_bandwidth=None,
                d2h_bandwidth=None, copy_latency=None, half_duplex=False,
                compute_time_scale=None, tiers=None):
    """A swapplan.v1.DeviceSpec from the CLI's device flags, in the CLI's
    units ("60GiB", "25GB/s", "10us" or plain bytes / bytes per second /
    nanoseconds); None leaves a field unset (the trace's, then the preset's
    figure). `device` names a preset of `swapplan devices`. `tiers`: memory
    tiers beyond the host, a list of dicts (memory_tier; tier i >= 1 of a
    policy item is tiers[i - 1]). ValueError for a value that cannot be
    read."""
    spec = pb.DeviceSpec()
    if device:
        spec.preset = str(device)
    if device_memory is not None:
        spec.capacity_bytes = parse_bytes(device_memory, "device_memory")
    if reserve is not None:
        spec.reserve_bytes = parse_bytes(reserve, "reserve")
    if h2d_bandwidth is not None:
        spec.h2d_bandwidth_bytes_per_s = parse_bandwidth(h2d_bandwidth, "h2d_bandwidth")
    if d2h_bandwidth is not None:
        spec.d2h_bandwidth_bytes_per_s = parse_bandwidth(d2h_bandwidth, "d2h_bandwidth")
    if copy_latency is not None:
        spec.copy_latency_ns = parse_duration_ns(copy_latency, "copy_latency")
    spec.half_duplex = bool(half_duplex)
    if compute_time_scale is not None:
        text = str(compute_time_scale)
        spec.compute_time_scale = float(text[:-1] if text.endswith("x") else text)
    for i, tier in enumerate(tiers or ()):
        spec.tiers.append(memory_tier(tier, i))
    return spec


def option_text(value):
    """A planner option value as the server reads it: booleans as
    true/false, everything else as str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
