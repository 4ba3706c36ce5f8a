"""Responses as plain Python values, and request fields from Python values.

to_dict(message) gives every field of a response by its proto name (the
names of the CLI's `--json` reports, proto/planner_service.proto), with its
default when unset, integers as int (not the strings of protobuf's JSON
mapping for 64-bit integers), nested messages as dicts, repeated fields as
lists and maps as dicts. Linear in the size of the message.
"""

from google.protobuf.descriptor import FieldDescriptor

from .._units import parse_bandwidth, parse_bytes, parse_duration_ns
from ._proto import pb


def _value(field, v):
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_dict(v)
    return v


def to_dict(message):
    """Every field of `message` (see module docstring). A oneof member that
    is not the one set is left out."""
    out = {}
    for field in message.DESCRIPTOR.fields:
        if field.containing_oneof is not None and not message.HasField(field.name):
            continue
        v = getattr(message, field.name)
        if field.label == FieldDescriptor.LABEL_REPEATED:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                value_field = field.message_type.fields_by_name["value"]
                out[field.name] = {k: _value(value_field, x) for k, x in v.items()}
            else:
                out[field.name] = [_value(field, x) for x in v]
        else:
            out[field.name] = _value(field, v)
    return out


def device_spec(device=None, device_memory=None, reserve=None, h2d_bandwidth=None,
                d2h_bandwidth=None, copy_latency=None, half_duplex=False,
                compute_time_scale=None):
    """A swapplan.v1.DeviceSpec from the CLI's device flags, in the CLI's
    units ("60GiB", "25GB/s", "10us" or plain bytes / bytes per second /
    nanoseconds); None leaves a field unset (the trace's, then the preset's
    figure). `device` names a preset of `swapplan devices`. ValueError for a
    value that cannot be read."""
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
    return spec


def option_text(value):
    """A planner option value as the server reads it: booleans as
    true/false, everything else as str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
