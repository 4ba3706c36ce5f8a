#!/usr/bin/env python3
"""Mutation campaign (issue 19): thousands of malformed or edge-case inputs —
traces in JSON and binary form, gzip streams and bombs, policies, quality
baselines, flag values — derived from tests/data by structured mutation, run
through the swapplan commands of a given binary (ideally the sanitizer
build), each run classified:

  ok              exit 0 on an input that breaks no documented rule
  clean-error     exit 2 (or 3 infeasible / 4 regression), one line, naming
                  the input (the file, or the flag)
  unnamed-error   exit 2, one line, but the input is not named
  multi-line      exit 2 with more than one line on stderr
  internal        exit 1 ("internal error") on malformed input
  sanitizer       AddressSanitizer / UBSan / LeakSanitizer report
  signal          killed by a signal (SIGSEGV, SIGFPE, SIGABRT, ...)
  memory          over the per-run memory limit
  timeout         over the per-run limit of 10 s of CPU time (SIGXCPU), or no
                  exit within 12 times that of wall time (a hang)
  must-fail-accepted   exit 0 although the mutation broke a documented rule
  other           anything else

  scripts/mutation_campaign.py build-sanitize/swapplan --count 12000 --seed 1 --jobs 2

Writes DIR/summary.json, DIR/table.md and one example input per (class,
mutation) under DIR/examples/ (DIR: --out, default build-campaign). Python 3
standard library only. Exit status 1 when any run is in a bad class
(everything but ok / clean-error), else 0.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import random
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from campaign_lib import other_mutations as om  # noqa: E402
from campaign_lib import trace_mutations as tm  # noqa: E402
from campaign_lib import wire  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOOD = ("ok", "clean-error")
CLASSES = ["ok", "clean-error", "unnamed-error", "multi-line", "internal", "sanitizer", "signal",
           "memory", "timeout", "must-fail-accepted", "other"]

# Commands a mutated trace goes through ({t}: the trace, {o}: an output).
TRACE_COMMANDS = [
    "inspect {t}",
    "inspect --json {t}",
    "curve {t}",
    "plan {t} --device-memory 1GiB --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s -o {o}",
    "compare {t} --oversubscription 2x --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s "
    "--planners noswap,recompute,lru,chameleon",
    "replay {t} --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s --iterations 4 --rows none",
]


class Case:
    __slots__ = ("index", "family", "mutation", "must_fail", "files", "args", "names")

    def __init__(self, index, family, mutation, must_fail, files, args, names):
        self.index, self.family, self.mutation = index, family, mutation
        self.must_fail, self.files, self.args, self.names = must_fail, files, args, names


# --- bases ---------------------------------------------------------------------

def run(binary, args, cwd=None, timeout=60):
    return subprocess.run([binary] + args, cwd=cwd, capture_output=True, timeout=timeout)


def make_bases(binary, work):
    """Valid traces (JSON dicts), with a policy each (JSON dict and binary
    bytes), and a quality baseline, all checked to be accepted."""
    traces = {}
    for rel in ("tests/data/traces/toy_valid.json", "tests/data/traces/chameleon_toy.json",
                "tests/data/traces/two_layers.json", "traces/toy.json"):
        with open(os.path.join(ROOT, rel)) as f:
            traces[os.path.basename(rel)] = json.load(f)
    # Synthesized traces: memory events, shapes, dtypes, durations, hints.
    for name, flags in (("synth_dense.json", "--layers 2 --hidden 64 --heads 2 --kv-heads 2 "
                         "--ffn 128 --vocab 256 --seq 16 --micro-batches 2 --iterations 2"),
                        ("synth_moe.json", "--model mixtral-8x7b --layers 1 --hidden 64 "
                         "--heads 2 --kv-heads 2 --ffn 64 --vocab 128 --seq 8 --experts 4")):
        path = os.path.join(work, name)
        r = run(binary, ["synth"] + flags.split() + ["-q", "-o", path])
        if r.returncode != 0:
            sys.exit("campaign: cannot synthesize a base trace: " + r.stderr.decode())
        with open(path) as f:
            traces[name] = json.load(f)
    policies = {}
    for name, t in traces.items():
        tpath = os.path.join(work, "base_" + name)
        with open(tpath, "wb") as f:
            f.write(tm.dumps(t))
        for args in (["inspect", tpath], ["curve", tpath]):
            r = run(binary, args)
            if r.returncode != 0:
                sys.exit("campaign: base %s is refused by %s: %s" % (name, args[0], r.stderr))
        jpath, bpath = os.path.join(work, name + ".policy.json"), os.path.join(work, name + ".policy")
        plan = ["plan", tpath, "--h2d-bandwidth", "1GB/s", "--d2h-bandwidth", "1GB/s",
                "--min-tensor-bytes", "0"]
        ok = True
        for out in (jpath, bpath):
            r = run(binary, plan + ["-o", out])
            ok = ok and r.returncode == 0
        if ok:
            ok = all(run(binary, [c, tpath, jpath]).returncode == 0 for c in ("check", "simulate"))
        if ok:
            with open(jpath) as f:
                pj = json.load(f)
            with open(bpath, "rb") as f:
                policies[name] = (pj, f.read())
    if not policies:
        sys.exit("campaign: no base trace yields a policy that check and simulate accept")
    with open(os.path.join(ROOT, "tests/data/quality/toy.json")) as f:
        baseline = json.load(f)
    for e in baseline["entries"]:
        e["trace"] = os.path.normpath(os.path.join(ROOT, "tests/data/quality", e["trace"]))
    bpath = os.path.join(work, "base_quality.json")
    with open(bpath, "wb") as f:
        f.write(tm.dumps(baseline))
    r = run(binary, ["regress", "--baseline", bpath])
    if r.returncode != 0:
        sys.exit("campaign: the base baseline is refused: " + r.stderr.decode())
    return traces, policies, baseline


# --- case generation -----------------------------------------------------------

FAMILIES = ("trace-json", "trace-binary", "policy", "baseline", "flag", "synth", "gzip")


def generate(count, seed, traces, policies, baseline, only=None):
    """The campaign's cases, made one at a time as they are asked for (a
    generator: 10,000 cases held at once took 500 MB, which every fork of
    the harness then had to copy the page tables of). The sequence for a
    seed does not depend on how fast it is consumed. `only`: the families
    to yield (None: all); the others are drawn and skipped, so a family's
    cases are the same ones as in a full run of the same seed."""
    rng = random.Random(seed)
    names = sorted(traces)
    json_mut = {n: tm.TraceJsonMutator(traces[n]) for n in names}
    bin_mut = {n: tm.TraceBinaryMutator(traces[n]) for n in names}
    pol_names = sorted(policies)
    pol_mut = {n: om.PolicyMutator(policies[n][0], traces[n]) for n in pol_names}
    base_mut = om.BaselineMutator(baseline)
    # Share of cases per family (the rest are JSON traces).
    families = [("trace-binary", 0.25), ("policy", 0.15), ("baseline", 0.06), ("flag", 0.12),
                ("synth", 0.04), ("gzip", 0.05)]
    cases = []
    bombs = 0
    for i in range(count):
        for c in cases:
            if only is None or c.family in only:
                yield c
        cases = []
        r, family = rng.random(), "trace-json"
        for fam, share in families:
            if r < share:
                family = fam
                break
            r -= share
        tname = rng.choice(names)
        cmd = rng.choice(TRACE_COMMANDS)
        if family == "trace-json":
            m = rng.choice(json_mut[tname].mutations())
            mutation, data, must = m(rng)
            cases.append(Case(i, family, mutation, must, {"t.json": data},
                              cmd.format(t="{d}/t.json", o="{d}/out.json"), "t.json"))
        elif family == "trace-binary":
            m = rng.choice(bin_mut[tname].mutations())
            mutation, data, must = m(rng)
            cases.append(Case(i, family, mutation, must, {"t.trace": data},
                              cmd.format(t="{d}/t.trace", o="{d}/out.json"), "t.trace"))
        elif family == "gzip":
            if bombs < 8 and rng.random() < 0.15:
                bombs += 1
                mutation, data, must, name = gzip_bomb(rng)
            else:
                base = tm.dumps(traces[tname])
                if rng.random() < 0.5:
                    base = wire.encode_trace(wire.trace_records(traces[tname]))
                mutation, data, must = om.gzip_mutations(base, rng)
                name = "t.trace.gz"
            cases.append(Case(i, family, mutation, must, {name: data},
                              cmd.format(t="{d}/" + name, o="{d}/out.json"), name))
        elif family == "policy":
            pname = rng.choice(pol_names)
            if rng.random() < 0.8:
                mutation, data, must = rng.choice(pol_mut[pname].mutations())(rng)
                fname = "p.json"
            else:
                mutation, data, must = om.binary_policy_mutations(policies[pname][1], rng)
                fname = "p.policy"
            files = {"t.json": tm.dumps(traces[pname]), fname: data}
            verb = rng.choice(["check", "simulate"])
            cases.append(Case(i, family, mutation, must, files,
                              "%s {d}/t.json {d}/%s" % (verb, fname), fname))
        elif family == "baseline":
            mutation, data, must = rng.choice(base_mut.mutations())(rng)
            cases.append(Case(i, family, mutation, must, {"q.json": data},
                              "regress --baseline {d}/q.json", "q.json"))
        elif family == "flag":
            template, flag, kind = rng.choice(om.FLAG_SITES)
            value, must = om.site_value(flag, kind, rng)
            pname = rng.choice(pol_names)
            device = policies[pname][0].get("device", {}).get("capacity_bytes", 1 << 30) \
                if template.startswith("simulate") else 1 << 30
            must = must or om.reserve_exhausts(flag, value, device)
            files = {"t.json": tm.dumps(traces[pname]), "p.json": tm.dumps(policies[pname][0])}
            args = template.format(t="{d}/t.json", p="{d}/p.json", o="{d}/out.json")
            args += " %s %s" % (flag, shlex.quote(value))
            cases.append(Case(i, family, "flag:%s=%r" % (flag, value), must, files, args, flag))
        else:
            flag, value, must = om.synth_flag(rng)
            args = "synth -q -o {d}/s.trace %s %s" % (flag, shlex.quote(value))
            cases.append(Case(i, family, "synth:%s=%r" % (flag, value), must, {}, args, flag))
    for c in cases:
        if only is None or c.family in only:
            yield c


def gzip_bomb(rng):
    """Small files that inflate to gigabytes."""
    kind = rng.choice(["json-spaces", "zeros", "binary-record"])
    if kind == "json-spaces":  # 1.5 GiB of leading JSON whitespace
        return "gzip-bomb:json-1.5GiB", om.bomb(b" " * (1 << 20), 1536), True, "bomb.json.gz"
    if kind == "zeros":  # 2 GiB of zeros: not a trace
        return "gzip-bomb:zeros-2GiB", om.bomb(b"\0" * (1 << 20), 2048), True, "bomb.trace.gz"
    # The magic, a record announcing 1 GiB - 1, then 2 GiB of zeros.
    head = om.gzip_member(wire.TRACE_MAGIC + wire.varint((1 << 30) - 1))
    return ("gzip-bomb:binary-record-2GiB", head + om.bomb(b"\0" * (1 << 20), 2048), True,
            "bomb.trace.gz")


# --- running and classifying ---------------------------------------------------

def is_sanitized(binary):
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def classify(case, proc, elapsed, timeout, names_path, case_dir=None):
    """A flag case's error is named when it names the flag — or the input
    file it found the problem in: a value that is valid alone but not with
    this trace (an infeasible budget, an overflow in op 12) is reported
    against the trace, which is the right place."""
    if proc is None:
        return "timeout", ""
    err = proc.stderr.decode(errors="replace")
    first = err.strip().splitlines()[0] if err.strip() else ""
    if ("ERROR: AddressSanitizer" in err or "runtime error:" in err or
            "ERROR: LeakSanitizer" in err or "UndefinedBehaviorSanitizer" in err):
        if "rss limit exceeded" in err or "allocation-size-too-big" in err or \
                "out of memory" in err:
            return "memory", first
        return "sanitizer", next((l for l in err.splitlines() if "ERROR" in l or
                                  "runtime error" in l), first)
    if proc.returncode == -signal.SIGXCPU:
        return "timeout", "over %g s of CPU time" % timeout
    if proc.returncode < 0:
        return "signal", "signal %d %s" % (-proc.returncode, first)
    rc = proc.returncode
    if rc == 0:
        return ("must-fail-accepted" if case.must_fail else "ok"), first
    lines = err.strip().splitlines()
    if rc in (2, 3, 4):
        if len(lines) != 1:
            return "multi-line", " | ".join(lines[:3])
        named = names_path in err or os.path.basename(names_path) in err or \
            (case.family == "baseline" and "/nonexistent/" in err) or \
            (case.family == "flag" and case_dir is not None and case_dir in err)
        return ("clean-error" if named else "unnamed-error"), first
    if rc == 1 and case.family == "baseline" and len(lines) == 1 and "rows fail against" in err:
        # regress's documented verdict for a quality regression (exit 1 today;
        # exit 4 per util/error.h once the CLI maps kinds).
        return "clean-error", first
    if rc == 1:
        return "internal", first
    return "other", "exit %d %s" % (rc, first)


def limits(cpu_seconds, memory_bytes):
    """Per-run limits set in the child: CPU time (the kernel sends SIGXCPU
    past it, so the time limit counts work done, not waiting on a shared
    machine) and, for builds without ASan (which needs a vast address
    space), the address space."""
    def apply():
        cpu = int(cpu_seconds + 0.999)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    return apply


def run_case(binary, case, work, timeout, sanitized, memory_mb):
    d = os.path.join(work, "case%d" % case.index)
    os.makedirs(d, exist_ok=True)
    try:
        for name, data in case.files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        argv = [binary] + [a.replace("{d}", d) for a in shlex.split(case.args)]
        env = dict(os.environ)
        env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
        env["ASAN_OPTIONS"] = "detect_leaks=1:hard_rss_limit_mb=%d" % memory_mb
        start = time.monotonic()
        try:
            # The wall-clock limit only catches runs that wait without
            # working (a hang); work is limited by CPU time (limits()).
            proc = subprocess.run(argv, capture_output=True, timeout=max(120, 12 * timeout),
                                  env=env, preexec_fn=limits(
                                      timeout, 0 if sanitized else memory_mb << 20))
        except subprocess.TimeoutExpired:
            proc = None
        elapsed = time.monotonic() - start
        names = case.names if case.family in ("flag", "synth") else os.path.join(d, case.names)
        cls, line = classify(case, proc, elapsed, timeout, names, d)
        return cls, line.replace(d, "DIR"), elapsed
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", help="swapplan binary (e.g. build-sanitize/swapplan)")
    ap.add_argument("--count", type=int, default=10500,
                    help="cases drawn (default 10500; all run unless --families)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="CPU seconds per run (default 10)")
    ap.add_argument("--time-limit", type=float, default=3600,
                    help="stop starting new runs after this many seconds (default 3600)")
    ap.add_argument("--memory-mb", type=int, default=3072, help="per-run memory limit")
    ap.add_argument("--families", default="",
                    help="comma-separated families to run (default all: %s); the cases of "
                         "a family are those of a full run with the same seed and count"
                    % ",".join(FAMILIES))
    ap.add_argument("--out", default=os.path.join(ROOT, "build-campaign"))
    args = ap.parse_args()
    families = set(f for f in args.families.split(",") if f) or None
    if families and not families <= set(FAMILIES):
        ap.error("unknown families: %s" % ",".join(sorted(families - set(FAMILIES))))
    binary = os.path.abspath(args.binary)
    os.makedirs(os.path.join(args.out, "examples"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="swapplan-campaign-")
    try:
        traces, policies, baseline = make_bases(binary, work)
        sanitized = is_sanitized(binary)
        print("campaign: %d cases drawn%s, seed %d, %d jobs, %s build" %
              (args.count, " (families %s)" % ",".join(sorted(families)) if families else "",
               args.seed, args.jobs, "sanitizer" if sanitized else "plain"), flush=True)
        # Cases are made as runs finish (at most 4 per job waiting), so the
        # harness stays small; each run is still one swapplan process.
        records, examples = [], {}
        start = time.monotonic()
        stopped = 0
        log = open(os.path.join(args.out, "results.jsonl"), "w")
        gen = generate(args.count, args.seed, traces, policies, baseline, families)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            pending = {}

            def fill():
                nonlocal stopped
                while len(pending) < 4 * args.jobs:
                    c = next(gen, None)
                    if c is None:
                        return
                    if time.monotonic() - start > args.time_limit:
                        stopped += 1
                        continue
                    pending[pool.submit(run_case, binary, c, work, args.timeout, sanitized,
                                        args.memory_mb)] = c

            fill()
            while pending:
                done, _ = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for f in done:
                    c = pending.pop(f)
                    cls, line, elapsed = f.result()
                    # One line per finished run, as it finishes: a long
                    # campaign can be read (and a stopped one salvaged)
                    # before the tables exist.
                    log.write(json.dumps({"case": c.index, "family": c.family,
                                          "mutation": c.mutation, "class": cls,
                                          "seconds": round(elapsed, 3), "line": line}) + "\n")
                    log.flush()
                    records.append((c.index, c.family, c.must_fail, cls, elapsed))
                    keep_example(c, cls, line, args.out, examples)
                    if len(records) % 1000 == 0:
                        print("  %d runs (%.0f s)" % (len(records), time.monotonic() - start),
                              flush=True)
                fill()
        log.close()
        wall = time.monotonic() - start
        report(records, stopped, examples, args, wall, binary)
        bad = sum(1 for r in records if r[3] not in GOOD)
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def example_key(c, cls):
    m = c.mutation
    return (cls, m.split(":")[0] + ":" + m.split(":")[1].split("=")[0] if ":" in m else m)


def keep_example(c, cls, line, out, examples):
    """The first input of each (bad class, mutation), written to
    OUT/examples/ as the run finishes."""
    key = example_key(c, cls)
    if cls in GOOD or key in examples:
        return
    path = None
    if c.files:
        name = sorted(c.files)[-1]
        path = os.path.join(out, "examples", "%s-%d%s" % (cls, c.index, os.path.splitext(name)[1]))
        with open(path, "wb") as f:
            f.write(c.files[name])
    examples[key] = {"class": cls, "family": c.family, "mutation": c.mutation,
                     "must_fail": c.must_fail, "command": "swapplan " + c.args,
                     "stderr": line[:300], "input": os.path.relpath(path, ROOT) if path else None}


def report(records, stopped, examples, args, wall, binary):
    """records: (index, family, must_fail, class, wall seconds) per run."""
    by_family = collections.defaultdict(collections.Counter)
    for _, family, _, cls, _ in records:
        by_family[family][cls] += 1
    total = collections.Counter()
    for counts in by_family.values():
        total.update(counts)
    must_fail = sum(1 for r in records if r[2])
    # Wall seconds per run (on a shared machine mostly waiting for a core;
    # the per-run limit itself is on CPU time).
    walls = sorted(r[4] for r in records) or [0.0]
    median_s, p99_s = walls[len(walls) // 2], walls[min(len(walls) - 1, int(len(walls) * 0.99))]
    over_10s_wall = sum(1 for w in walls if w > 10)
    summary = {"binary": binary, "seed": args.seed, "count": args.count,
               "families": args.families or "all", "runs": len(records),
               "skipped": stopped, "must_fail_cases": must_fail, "jobs": args.jobs,
               "timeout_s": args.timeout, "wall_s": round(wall, 1),
               "slowest_run_s": round(walls[-1], 2),
               "median_run_s": round(median_s, 2), "p99_run_s": round(p99_s, 2),
               "runs_over_10s_wall": over_10s_wall,
               "classes": {k: total.get(k, 0) for k in CLASSES},
               "by_family": {f: dict(v) for f, v in sorted(by_family.items())},
               "examples": sorted(examples.values(), key=lambda e: (e["class"], e["mutation"]))}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    fams = sorted(by_family)
    lines = ["| class | " + " | ".join(fams) + " | total |",
             "|---|" + "---:|" * (len(fams) + 1)]
    for cls in CLASSES:
        row = [by_family[fm].get(cls, 0) for fm in fams]
        lines.append("| %s | %s | %d |" % (cls, " | ".join(map(str, row)), total.get(cls, 0)))
    lines.append("| **cases** | %s | %d |" % (" | ".join(str(sum(by_family[fm].values()))
                                                         for fm in fams), sum(total.values())))
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    print(table)
    print("runs %d (must fail %d, not started past the time limit %d), wall %.0f s, run wall "
          "time median %.2f s, p99 %.2f s, slowest %.2f s, over 10 s %d" %
          (len(records), must_fail, stopped, wall, median_s, p99_s, walls[-1], over_10s_wall))
    for e in summary["examples"]:
        print("  [%s] %s (%s): %s -> %s" % (e["class"], e["mutation"], e["family"],
                                            e["command"], e["stderr"][:160]))


if __name__ == "__main__":
    sys.exit(main())
