"""Sizes, bandwidths and durations with units, as the swapplan CLI spells
them (include/swapplan/util/units.h): "6GiB", "512MiB", "1.5GB", "100B";
"25GB/s"; "10us", "5ms", "2s". Plain numbers are taken as bytes, bytes per
second and nanoseconds."""

import re

_BYTES = {"": 1, "B": 1, "kB": 1000, "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3,
          "TB": 1000 ** 4, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4}
_NS = {"": 1, "ns": 1, "us": 1000, "ms": 1000 ** 2, "s": 1000 ** 3}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def _parse(value, table, what):
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("%s must not be negative, got %r" % (what, value))
        return value
    m = _NUMBER.match(str(value))
    if not m or m.group(2) not in table:
        raise ValueError("%s: cannot read %r (units: %s)" % (what, value,
                                                              ", ".join(k for k in table if k)))
    return float(m.group(1)) * table[m.group(2)]


def parse_bytes(value, what="size"):
    """Bytes, rounded to the nearest integer as the CLI does ("1.45GiB" =
    1556925645)."""
    return int(round(_parse(value, _BYTES, what)))


def parse_bandwidth(value, what="bandwidth"):
    text = str(value)
    if text.endswith("/s"):
        text = text[:-2]
    v = float(_parse(text if isinstance(value, str) else value, _BYTES, what))
    if v <= 0:
        raise ValueError("%s must be positive, got %r" % (what, value))
    return v


def parse_duration_ns(value, what="duration"):
    """Nanoseconds, rounded to the nearest integer as the CLI does."""
    return int(round(_parse(value, _NS, what)))
