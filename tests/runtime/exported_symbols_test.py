#!/usr/bin/env python3
"""libswapplan_runtime.so exports its C API and nothing else, and carries no
protobuf (swapplan_runtime.h, "Linking").

  exported_symbols_test.py LIBRARY HEADER ABSL_INLINE_NAMESPACE

Fails (exit 1, listing each problem) when `nm -D --defined-only` shows a
symbol outside the C API, when a function the header declares is not
exported, when the library imports protobuf or nlohmann symbols or an abseil
symbol outside the inline namespace of the abseil it was built with
(ABSL_INLINE_NAMESPACE, from absl/base/options.h: Debian's own, debian3 on
Debian 12 and debian7 on Debian 13; empty, itself a problem, when that
abseil has none), or when it needs libprotobuf at load time.
"""
import re
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    lib, header, absl_ns = sys.argv[1], sys.argv[2], sys.argv[3]
    problems = []
    if not absl_ns:
        problems.append("abseil has no inline namespace (ABSL_OPTION_INLINE_NAMESPACE_NAME): "
                        "its symbols can bind to another abseil in the process")
    # Itanium mangling of absl::<absl_ns>: 4absl, then the length and the name.
    absl_prefix = f"4absl{len(absl_ns)}{absl_ns}"
    declared = set(re.findall(r"SWAPPLAN_RT_API[^;]*?\b(swapplan_rt_\w+)\s*\(",
                              open(header, encoding="utf-8").read(), re.S))
    if not declared:
        problems.append(f"{header}: no SWAPPLAN_RT_API declarations found")
    exported = set()
    for line in run("nm", "-D", "--defined-only", lib).splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2].split("@")[0]  # name@@SWAPPLAN_RT_1
        if kind == "A" and name == "SWAPPLAN_RT_1":  # the version node
            continue
        if not name.startswith("swapplan_rt_"):
            problems.append(f"exported symbol outside the C API: {name} ({kind})")
        else:
            exported.add(name)
    for name in sorted(declared - exported):
        problems.append(f"declared in the header but not exported: {name}")
    for name in sorted(exported - declared):
        problems.append(f"exported but not declared in the header: {name}")
    for line in run("nm", "-D", "--undefined-only", lib).splitlines():
        name = line.split()[-1]
        if "google8protobuf" in name or "protobuf" in name:
            problems.append(f"imports a protobuf symbol: {name}")
        if "nlohmann" in name:
            problems.append(f"imports a nlohmann symbol: {name}")
        if "4absl" in name and absl_prefix not in name:
            problems.append(f"imports an abseil symbol outside absl::{absl_ns}: {name}")
    for line in run("readelf", "-d", lib).splitlines():
        if "NEEDED" in line and "protobuf" in line:
            problems.append(f"needs protobuf at load time: {line.strip()}")
    for p in problems:
        print(p)
    print(f"exported_symbols: {len(exported)} C API functions exported, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
