#!/usr/bin/env python3
"""Regenerates the seed corpora fuzz/corpus/<target>/ from tests/data (and a
few tiny synthesized traces and plans made with the swapplan binary given).

  fuzz/make_corpus.py build/swapplan

Seeds are kept small (libFuzzer's -max_len in scripts/fuzz.sh is 64 KiB).
Python 3 standard library only.
"""

import glob
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from campaign_lib import wire  # noqa: E402

import json  # noqa: E402

MAX_SEED = 64 << 10


def put(target, data, name=None):
    if len(data) > MAX_SEED:
        return
    d = os.path.join(ROOT, "fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fuzz/make_corpus.py SWAPPLAN_BINARY")
    binary = os.path.abspath(sys.argv[1])
    for t in ("trace_json", "trace_binary", "gzip", "policy_json", "policy_binary",
              "regress_io", "units"):
        shutil.rmtree(os.path.join(ROOT, "fuzz", "corpus", t), ignore_errors=True)
    work = tempfile.mkdtemp()
    try:
        traces = sorted(glob.glob(os.path.join(ROOT, "tests/data/traces/*.json")) +
                        glob.glob(os.path.join(ROOT, "tests/data/malformed/*.json")) +
                        glob.glob(os.path.join(ROOT, "tests/data/robustness/*.json")) +
                        [os.path.join(ROOT, "traces/toy.json")])
        synth = os.path.join(work, "synth.json")
        subprocess.run([binary, "synth", "--layers", "1", "--hidden", "32", "--heads", "2",
                        "--kv-heads", "2", "--ffn", "64", "--vocab", "128", "--seq", "4",
                        "--no-names", "-q", "-o", synth], check=True)
        traces.append(synth)
        for path in traces:
            data = read(path)
            put("trace_json", data, os.path.basename(path))
            try:
                obj = json.loads(data)
                binary_form = wire.encode_trace(wire.trace_records(obj))
            except (ValueError, KeyError, TypeError):
                continue
            base = os.path.splitext(os.path.basename(path))[0]
            put("trace_binary", binary_form, base + ".trace")
            put("gzip", gzip.compress(data, mtime=0), base + ".json.gz")
            if "traces/" in path or path == synth:
                put("trace_binary", gzip.compress(binary_form, mtime=0), base + ".trace.gz")
                half = len(binary_form) // 2
                put("gzip", gzip.compress(binary_form[:half], mtime=0) +
                    gzip.compress(binary_form[half:], mtime=0), base + ".two-members.gz")
        for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/policies/**/*.json"),
                                     recursive=True)):
            put("policy_json", read(path), os.path.basename(os.path.dirname(path)) + "_" +
                os.path.basename(path))
        for name in ("two_layers.json", "chameleon_toy.json"):
            trace = os.path.join(ROOT, "tests/data/traces", name)
            for ext, target in ((".json", "policy_json"), (".policy", "policy_binary")):
                out = os.path.join(work, "plan" + ext)
                r = subprocess.run([binary, "plan", trace, "--h2d-bandwidth", "1GB/s",
                                    "--d2h-bandwidth", "1GB/s", "--min-tensor-bytes", "0",
                                    "-o", out], capture_output=True)
                if r.returncode == 0:
                    put(target, read(out), "plan_" + name.replace(".json", ext))
        for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/quality/*.json")) +
                           [os.path.join(ROOT, "quality.json")]):
            put("regress_io", read(path), os.path.basename(path))
        for i, text in enumerate(["64GiB", "512MiB", "1.5GB", "100", " 2 KiB ", "25GB/s",
                                  "1GiB/s", "10us", "1.5ms", "2s", "50%", "0.25", "1e30TB",
                                  "-5MB", "0", "9223372036854775807"]):
            put("units", text.encode(), "unit%02d" % i)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
