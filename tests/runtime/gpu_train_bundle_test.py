#!/usr/bin/env python3
"""The GPU training check's bundle, the way the GPU machine uses it
(scripts/gpu-train-check.sh bundle / run): the archive is made (offline:
--no-wheels), the bundle folder removed so that only the archive is left (what
a call carries), and `run` unpacks it and runs the driver through the bundled
swapplan wrapper and runtime library — here with --dry-run and one swapplan
row, since this machine has no GPU.

    gpu_train_bundle_test.py SOURCE_ROOT BUILD_DIR

Checks: the archive exists; the run used the unpacked bundle's CLI and
runtime; hybrid at r = 1.5 ran its policy with losses identical to the
reference. Exit 0, 1 listing what failed, 77 without PyTorch.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
BUILD = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build")


def main():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("needs PyTorch: %s" % e)
        return 1 if os.environ.get("SWAPPLAN_REQUIRE_TORCH") == "1" else 77
    script = os.path.join(ROOT, "scripts", "gpu-train-check.sh")
    problems = []
    with tempfile.TemporaryDirectory(prefix="swapplan-gpu-train-bundle-") as d:
        bundle = os.path.join(d, "gpu-train")
        env = {k: v for k, v in os.environ.items()
               if k not in ("SWAPPLAN_BINARY", "SWAPPLAN_RUNTIME_LIB", "PYTHONPATH")}
        env.update(SWAPPLAN_GPU_TRAIN_BUNDLE=bundle, SWAPPLAN_GPU_TRAIN_TMP=d,
                   PYTHON=sys.executable)
        p = subprocess.run(["bash", script, "bundle", "--no-wheels", BUILD], env=env,
                           capture_output=True, text=True, timeout=120)
        print(p.stdout[-2000:], p.stderr[-2000:])
        if p.returncode != 0 or not os.path.exists(bundle + ".tar.gz"):
            print("FAILED: bundle exited %d" % p.returncode)
            return 1
        shutil.rmtree(bundle)
        out = os.path.join(d, "out")
        p = subprocess.run(["bash", script, "run", out, "--dry-run", "--rows", "hybrid@r1.5"],
                           env=env, cwd="/", capture_output=True, text=True, timeout=240)
        print(p.stdout[-4000:], p.stderr[-2000:])
        if p.returncode != 0:
            print("FAILED: run exited %d" % p.returncode)
            return 1
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
    unpacked = os.path.join(d, "gpu-train-bundle")
    if results["meta"]["swapplan"] != os.path.join(unpacked, "swapplan"):
        problems.append("the run used %s, not the unpacked bundle's CLI"
                        % results["meta"]["swapplan"])
    rows = {r["name"]: r for r in results["rows"]}
    if sorted(rows) != ["hybrid@r1.5", "reference"]:
        problems.append("rows %s" % sorted(rows))
    h = rows.get("hybrid@r1.5", {})
    if not (h.get("status") == "ok" and h.get("losses_identical") is True and
            (h.get("runtime_policy_swaps") or 0) + (h.get("runtime_policy_drops") or 0) > 0):
        problems.append("hybrid@r1.5: %s" % {k: h.get(k) for k in (
            "status", "error", "losses_identical", "runtime_policy_swaps", "log_tail")})
    for what in problems:
        print("FAILED:", what)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
