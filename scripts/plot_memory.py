#!/usr/bin/env python3
"""Draws the README's picture: device memory per op without swapping, with a
Chameleon policy (as the evaluation simulator runs it), and the budget.

    scripts/plot_memory.py [--trace T] [--budget BYTES] [-o docs/img/memory.svg]

Runs ./build/swapplan (plan, simulate --timeline, curve) and writes a
self-contained SVG (no plotting library needed). The figures in the picture
are the simulator's, nothing is drawn by hand.
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def swapplan(*args):
    binary = os.environ.get("SWAPPLAN_BINARY", os.path.join(ROOT, "build", "swapplan"))
    out = subprocess.run([binary, *args], capture_output=True, text=True, cwd=ROOT, check=False)
    if out.returncode not in (0, 3):
        sys.exit("swapplan %s failed: %s" % (" ".join(args), out.stderr))
    return out.stdout


def polyline(values, x_of, y_of, color, width=1.6, dash=""):
    pts = " ".join("%.1f,%.1f" % (x_of(i), y_of(v)) for i, v in enumerate(values))
    extra = ' stroke-dasharray="%s"' % dash if dash else ""
    return ('<polyline fill="none" stroke="%s" stroke-width="%s"%s points="%s"/>'
            % (color, width, extra, pts))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", default="traces/llama2-7b-dp8-seq4096.trace.gz")
    p.add_argument("--budget", default="36846951424B",
                   help="device memory for plan (default: the demo's oversubscription-2 budget)")
    p.add_argument("-o", "--output", default="docs/img/memory.svg")
    a = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        policy = os.path.join(tmp, "policy.json")
        timeline = os.path.join(tmp, "timeline.json")
        swapplan("plan", a.trace, "--device-memory", a.budget, "-o", policy)
        sim = json.loads(swapplan("simulate", a.trace, policy, "--timeline", timeline, "--json"))
        with open(timeline) as f:
            events = json.load(f)["traceEvents"]
    with_policy = [e["args"]["bytes"] for e in sorted(
        (e for e in events if e.get("ph") == "C"), key=lambda e: e["ts"])]
    rows = list(csv.DictReader(io.StringIO(swapplan("curve", a.trace))))
    it = str(sim["iteration"])
    unswapped = [int(r["unswapped_bytes"]) for r in rows if r["iteration"] == it]
    budget = sim["budget_bytes"]

    gib = float(1 << 30)
    w, h, left, right, top, bottom = 760, 340, 56, 16, 16, 92
    n = max(len(unswapped), len(with_policy))
    top_value = max(max(unswapped), max(with_policy), budget) * 1.02
    low_value = min(min(unswapped), min(with_policy)) * 0.9

    def x_of(i):
        return left + (w - left - right) * i / max(1, n - 1)

    def y_of(v):
        return top + (h - top - bottom) * (1 - (v - low_value) / (top_value - low_value))

    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'font-family="sans-serif" font-size="12">' % (w, h),
             '<rect width="100%" height="100%" fill="white"/>']
    step = 5 if (top_value - low_value) / gib > 12 else 2
    g = int(low_value / gib / step + 1) * step
    while g * gib < top_value:
        y = y_of(g * gib)
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                     % (left, w - right, y, y))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%d GiB</text>' % (left - 4, y + 4, g))
        g += step
    parts.append(polyline(unswapped, x_of, y_of, "#c0392b"))
    parts.append(polyline(with_policy, x_of, y_of, "#2471a3"))
    parts.append(polyline([budget] * 2, lambda i: left if i == 0 else w - right, y_of, "#555",
                          1.2, "6,4"))
    parts.append('<text x="%d" y="%d" text-anchor="middle">op (forward, backward, optimizer) of '
                 'one iteration</text>' % ((left + w - right) // 2, h - bottom + 18))
    legend = [("#c0392b", "no swapping: peak %.2f GiB" % (max(unswapped) / gib)),
              ("#2471a3", "chameleon policy, simulated: peak %.2f GiB, +%.1f%% time"
               % (sim["peak_with_policy_bytes"] / gib, 100 * sim["overhead_vs_ideal_fraction"])),
              ("#555", "budget %.2f GiB" % (budget / gib))]
    for k, (color, text) in enumerate(legend):
        y = h - bottom + 44 + 16 * k  # stacked below the axis label
        x = left + 8
        parts.append('<rect x="%d" y="%d" width="14" height="3" fill="%s"/>' % (x, y - 4, color))
        parts.append('<text x="%d" y="%d">%s</text>' % (x + 18, y, text))
    parts.append("</svg>")
    os.makedirs(os.path.dirname(os.path.join(ROOT, a.output)), exist_ok=True)
    with open(os.path.join(ROOT, a.output), "w") as f:
        f.write("\n".join(parts) + "\n")
    print("wrote %s (%d ops)" % (a.output, n))


if __name__ == "__main__":
    main()
