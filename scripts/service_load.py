#!/usr/bin/python3
"""Load test of the planner service (issue 22), loopback only, bounded in
count and time.

Starts `swapplan serve --listen 127.0.0.1:0` (its own process; --serve-arg
passes flags to it), synthesizes traces of about 10k, 100k and 1M ops with
`swapplan synth` (kept in --work-dir and reused), then runs --clients client
processes (default 16) with --requests mixed requests each (default 200):
Plan, Check and Simulate on the traces, a --repeat fraction (default half)
of them exact repeats of an earlier request of the same client. A new Plan
asks for a budget no request asked before (the prepared budget plus a unique
multiple of 4 KiB), so that it plans, 1M-op traces included; a repeated Plan
is answered from the cache. A request refused with RESOURCE_EXHAUSTED (--max-concurrent-plans)
is retried after a capped exponential back-off; those refusals are counted,
not failed. Every other error is a failure.

Reports throughput, p50/p99 latency per method (the answered attempt, and
end to end with back-offs), the cache hit rate of Plan, the cached Plan p99
(all sizes, and per trace size with the plans computed per size), a probe of
cached Plans of the smallest trace sent every --load-probe-interval-s from
the driving process during the mixed run, the server's peak RSS (VmHWM of /proc/PID/status), the failed requests,
the latencies the server logs (no client, no network), and a probe of
--cached-probe sequential cached Plans by one client after the mixed run,
as text and with --json FILE as JSON; the server's log (one line per call)
goes to WORK_DIR/serve.log. Exit 1 when a request failed or the server's
peak RSS passed --max-server-rss-bytes (default 2 GiB, docs/service.md).
bench/service_load (C++ clients) runs the same mix without Python's cost.

    /usr/bin/python3 scripts/service_load.py --binary build/swapplan \\
        --work-dir /tmp/swapplan-load --json load.json

Uses Debian's python3 (python3-grpcio, python3-protobuf) and the build
tree's python/planner_service_pb2.py (or an installed swapplan package).
"""

import argparse
import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
if os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))

# One GPT-2-like rank: 12 layers, 524 ops per micro-batch + 448 optimizer
# ops; the micro-batch count sets the size. Same peak for every size.
SYNTH_MODEL = ["--model", "gpt2", "--layers", "12", "--hidden", "256", "--heads", "4",
               "--ffn", "1024", "--seq", "1024", "--micro-batch", "4"]
SIZES = {"10k": 19, "100k": 190, "1M": 1900}  # micro-batches: 10404, 100008, 996048 ops
METHODS = ("Plan", "Check", "Simulate")


def synth_traces(binary, work_dir, labels):
    os.makedirs(work_dir, exist_ok=True)
    paths = {}
    for label in labels:
        path = os.path.join(work_dir, "load-%s.trace" % label)
        if not os.path.exists(path):
            tmp = path + ".tmp.trace"
            subprocess.run([binary, "synth"] + SYNTH_MODEL +
                           ["--micro-batches", str(SIZES[label]), "-o", tmp, "-q"], check=True)
            os.replace(tmp, path)
        paths[label] = path
    return paths


class Server:
    def __init__(self, binary, args, log_path):
        self.log_file = open(log_path, "w")
        self.proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0"] + args,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = 0
        self.cache_hits_logged = 0
        self.address = None
        self.rss_samples = []
        ready = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.lines += 1
                self.log_file.write(line)
                if "cache=hit" in line:
                    self.cache_hits_logged += 1
                m = re.search(r"listening on (\S+):(\d+)", line)
                if m and self.address is None:
                    self.address = "127.0.0.1:%s" % m.group(2)
                    ready.set()
                elif self.address is None:
                    sys.stderr.write(line)
            ready.set()
        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(120) or self.address is None:
            self.proc.kill()
            raise SystemExit("swapplan serve did not start")

    def status_kib(self, key):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        time.sleep(0.2)  # the reader thread writes the last lines
        self.log_file.close()
        return rc


def make_requests(client, n, repeat, weights, seed):
    """The client's request list: (method, size label, budget offset)."""
    rng = random.Random(seed * 1000003 + client)
    labels = list(weights)
    out = []
    for k in range(n):
        if out and rng.random() < repeat:
            out.append(rng.choice(out))
            continue
        method = rng.choice(METHODS)
        label = rng.choices(labels, [weights[x] for x in labels])[0]
        # A new Plan: a budget no request asked for before (a new cache key),
        # on every trace size, so that 1M-op plans are computed during the
        # mixed run too (they compete for the CPU with the cache hits).
        offset = (client * n + k + 1) * 4096 if method == "Plan" else 0
        out.append((method, label, offset))
    return out


def percentile(values, p):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def with_retries(call, deadline, rng, refusals):
    """call() until it is not refused with RESOURCE_EXHAUSTED (capped
    exponential back-off with jitter); every refusal's reason counted in
    `refusals` ("--max-concurrent-plans", "Server Threadpool Exhausted",
    ...). Gives up after 200 refusals or at the deadline (re-raising)."""
    from swapplan.client import ResourceExhausted
    n = 0
    while True:
        try:
            return call()
        except ResourceExhausted as e:
            n += 1
            reason = ("--max-concurrent-plans" if "--max-concurrent-plans" in e.message
                      else e.message)
            refusals[reason] = refusals.get(reason, 0) + 1
            if n >= 200 or time.time() > deadline:
                raise
            time.sleep(min(0.01 * 2 ** min(n, 6), 0.5) * (0.5 + rng.random()))


def run_client(args):
    """One client process: its requests in order; returns its records."""
    address, client, requests, paths, budgets, policies, deadline = args
    from swapplan.client import Planner, PlannerError
    planner = Planner(address, timeout_s=600)
    records, uploads, refusals = [], [], {}
    uploaded = {}
    rng = random.Random(client)
    stat = "/proc/self/task/%d/schedstat" % threading.get_native_id()
    for method, label, offset in requests:
        if time.time() > deadline:
            break
        rec = {"method": method, "label": label, "ok": False, "cache_hit": False,
               "latency_s": 0.0, "end_to_end_s": 0.0}
        try:
            if label not in uploaded:
                t0 = time.perf_counter()
                uploaded[label] = with_retries(lambda: planner.upload(paths[label]), deadline,
                                               rng, refusals)
                uploads.append((label, time.perf_counter() - t0))
            trace = uploaded[label]
            start = time.perf_counter()
            last = [start]

            def once():
                last[0] = time.perf_counter()
                if method == "Plan":
                    return planner.plan(trace, device_memory=budgets[label] + offset).cache_hit
                if method == "Check":
                    planner.check(trace, policies[label])
                else:
                    planner.simulate(trace, policies[label])
                return False
            w0 = schedstat_wait_ns(stat)
            rec["cache_hit"] = with_retries(once, deadline, rng, refusals)
            now = time.perf_counter()
            rec["queue_wait_s"] = (schedstat_wait_ns(stat) - w0) / 1e9
            rec.update(ok=True, latency_s=now - last[0], end_to_end_s=now - start)
        except PlannerError as e:
            rec["error"] = str(e)
        records.append(rec)
    planner.close()
    return {"records": records, "uploads": uploads, "refusals": refusals}


class LoadProbe:
    """During the mixed run: one cached Plan of the smallest trace every
    `interval_s` from a thread of this (otherwise idle) process, so that the
    cached latency is seen apart from the clients' own CPU use."""

    def __init__(self, address, path, budget, interval_s):
        from swapplan.client import Planner
        self.planner = Planner(address, timeout_s=600)
        self.trace = self.planner.upload(path)
        self.budget = budget
        self.planner.plan(self.trace, device_memory=budget)
        self.latencies_ms = []
        self.stop = threading.Event()
        self.interval_s = interval_s
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        # The probe thread's own time waiting for a CPU (run queue), per call:
        # the part of its latency that is this client not being scheduled.
        self.queue_wait_ms = []
        stat = "/proc/self/task/%d/schedstat" % threading.get_native_id()
        while not self.stop.wait(self.interval_s):
            w0 = schedstat_wait_ns(stat)
            t0 = time.perf_counter()
            r = self.planner.plan(self.trace, device_memory=self.budget)
            self.latencies_ms.append((time.perf_counter() - t0) * 1e3)
            self.queue_wait_ms.append((schedstat_wait_ns(stat) - w0) / 1e6)
            assert r.cache_hit, "the load probe's plan was not a cache hit"

    def finish(self):
        self.stop.set()
        self.thread.join()
        self.planner.close()
        v, q = self.latencies_ms, self.queue_wait_ms
        return {"count": len(v), "p50_ms": round(percentile(v, 50), 3) if v else None,
                "p99_ms": round(percentile(v, 99), 3) if v else None,
                "max_ms": round(max(v), 3) if v else None,
                "client_run_queue_wait_p50_ms": round(percentile(q, 50), 3) if q else None,
                "client_run_queue_wait_p99_ms": round(percentile(q, 99), 3) if q else None}


def schedstat_wait_ns(path):
    """Nanoseconds the thread has waited on a run queue (schedstat field 2)."""
    try:
        with open(path) as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def server_threads(pid):
    """Per thread of the server: (name, run ns, run-queue wait ns) by tid."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = re.sub(r"[0-9]+$", "", f.read().strip())
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                run, wait = [int(x) for x in f.read().split()[:2]]
        except (OSError, ValueError):
            continue
        out[tid] = (name, run, wait)
    return out


def thread_deltas(before, after):
    """Per thread name: run and run-queue wait seconds between two
    server_threads() samples (threads started meanwhile count from 0; those
    that ended meanwhile are not counted)."""
    out = {}
    for tid, (name, run, wait) in after.items():
        _, run0, wait0 = before.get(tid, (name, 0, 0))
        acc = out.setdefault(name, {"threads": 0, "run_s": 0.0, "run_queue_wait_s": 0.0})
        acc["threads"] += 1
        acc["run_s"] += (run - run0) / 1e9
        acc["run_queue_wait_s"] += (wait - wait0) / 1e9
    return {k: {"threads": v["threads"], "run_s": round(v["run_s"], 2),
                "run_queue_wait_s": round(v["run_queue_wait_s"], 2)}
            for k, v in sorted(out.items())}


def process_cpu_ns(pid):
    """utime + stime of /proc/PID/stat in ns: every thread of the process,
    those that ended included (summing the live threads' schedstat misses
    the handler threads gRPC ends meanwhile); 0 when unreadable."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) * 10**9 // os.sysconf("SC_CLK_TCK")


def cached_plan_probe(address, path, budget, n, server_pid):
    """n sequential Plans answered from the cache, one client, nothing else
    of ours running: their latencies in ms, and the CPU time both sides
    spent per call — the server's (every thread of it: gRPC's pollers,
    the handler, serialization, threads gRPC ended meanwhile included;
    utime + stime of /proc/PID/stat, clock-tick resolution) and this
    client process's (time.process_time: Python, protobuf and gRPC's own
    threads) — which waiting for a core on a loaded host does not inflate."""
    from swapplan.client import Planner
    out = []
    with Planner(address) as p:
        trace = p.upload(path)
        p.plan(trace, device_memory=budget)
        server_before = process_cpu_ns(server_pid)
        client_before = time.process_time_ns()
        for _ in range(n):
            t0 = time.perf_counter()
            r = p.plan(trace, device_memory=budget)
            out.append((time.perf_counter() - t0) * 1e3)
            assert r.cache_hit, "the probe's plan was not a cache hit"
        client_cpu_ns = time.process_time_ns() - client_before
        server_cpu_ns = process_cpu_ns(server_pid) - server_before
    return out, {"server_cpu_per_call_ms": round(server_cpu_ns / n / 1e6, 4),
                 "client_cpu_per_call_ms": round(client_cpu_ns / n / 1e6, 4)}


_LOG_LINE = re.compile(
    r"method=(\w+) .*latency_us=(\d+) status=(\w+) cache=(\w+)(?: cpu_us=(\d+))?")


def server_side(log_path):
    """Per method (and Plan cache hits): p50/p99 of the latency the server
    logs (handler entry to answer; no client, no network) and of the
    handler thread's CPU time (cpu_us; a computation's own CPU is on the
    computing pool, not in it), OK calls only."""
    lat, cpu = {}, {}
    with open(log_path) as f:
        for line in f:
            m = _LOG_LINE.search(line)
            if not m or m.group(3) != "OK":
                continue
            method = m.group(1)
            if method == "Plan" and m.group(4) == "hit":
                method = "Plan (cache hit)"
            lat.setdefault(method, []).append(int(m.group(2)) / 1e3)
            if m.group(5) is not None:
                cpu.setdefault(method, []).append(int(m.group(5)) / 1e3)
    out = {}
    for k, v in sorted(lat.items()):
        out[k] = {"count": len(v), "p50_ms": round(percentile(v, 50), 3),
                  "p99_ms": round(percentile(v, 99), 3)}
        c = cpu.get(k)
        if c:
            out[k].update({"handler_cpu_p50_ms": round(percentile(c, 50), 3),
                           "handler_cpu_p99_ms": round(percentile(c, 99), 3)})
    return out


def prepare(address, paths, budget_fraction):
    """Per trace: the unswapped peak, a budget (budget_fraction of it), a
    policy planned for it (the cache's first entry per trace)."""
    from swapplan.client import Planner
    budgets, policies = {}, {}
    with Planner(address, timeout_s=900) as p:
        for label, path in paths.items():
            peak = p.simulate(path)["peak_bytes"]
            budgets[label] = int(peak * budget_fraction)
            policies[label] = p.plan(path, device_memory=budgets[label]).policy
    return budgets, policies


def summarize(results, wall_s, server, rss_peak_kib, args):
    recs = [r for res in results for r in res["records"]]
    done = [r for r in recs if r["ok"]]
    failed = [r for r in recs if not r["ok"]]
    out = {"clients": args.clients, "requests_per_client": args.requests,
           "requests_issued": len(recs), "requests_ok": len(done), "failed": len(failed),
           "failures": sorted({r.get("error", "") for r in failed})[:10],
           "refused_resource_exhausted": {},
           "wall_s": round(wall_s, 2), "throughput_per_s": round(len(done) / wall_s, 2),
           "server_peak_rss_bytes": rss_peak_kib * 1024, "methods": {}}
    for method in METHODS:
        for label in ["all"] + list(SIZES):
            sel = [r for r in done if r["method"] == method and label in ("all", r["label"])]
            if not sel:
                continue
            lat = [r["latency_s"] * 1e3 for r in sel]
            e2e = [r["end_to_end_s"] * 1e3 for r in sel]
            out["methods"]["%s/%s" % (method, label)] = {
                "count": len(sel), "p50_ms": round(percentile(lat, 50), 2),
                "p99_ms": round(percentile(lat, 99), 2),
                "end_to_end_p50_ms": round(percentile(e2e, 50), 2),
                "end_to_end_p99_ms": round(percentile(e2e, 99), 2)}
    plans = [r for r in done if r["method"] == "Plan"]
    hits = [r["latency_s"] * 1e3 for r in plans if r["cache_hit"]]
    out["plans_by_size"] = {}
    for label in SIZES:
        sel = [r for r in plans if r["label"] == label]
        if not sel:
            continue
        size_hits = [r["latency_s"] * 1e3 for r in sel if r["cache_hit"]]
        out["plans_by_size"][label] = {
            "computed": sum(1 for r in sel if not r["cache_hit"]), "cache_hits": len(size_hits),
            "cache_hit_p50_ms": round(percentile(size_hits, 50), 2) if size_hits else None,
            "cache_hit_p99_ms": round(percentile(size_hits, 99), 2) if size_hits else None}
    out["plan_cache_hit_rate"] = round(len(hits) / len(plans), 3) if plans else None
    out["cached_plan_p50_ms"] = round(percentile(hits, 50), 2) if hits else None
    out["cached_plan_p99_ms"] = round(percentile(hits, 99), 2) if hits else None
    # The client process's own run-queue wait during each cached Plan (it
    # was runnable but not on a CPU): the share of the latency that is the
    # client's scheduling, not the server.
    waits = [r.get("queue_wait_s", 0) * 1e3 for r in plans if r["cache_hit"]]
    out["cached_plan_client_run_queue_wait_p50_ms"] = (
        round(percentile(waits, 50), 2) if waits else None)
    out["cached_plan_client_run_queue_wait_p99_ms"] = (
        round(percentile(waits, 99), 2) if waits else None)
    out["server_log_cache_hits"] = server.cache_hits_logged
    for res in results:
        for reason, n in res["refusals"].items():
            out["refused_resource_exhausted"][reason] = (
                out["refused_resource_exhausted"].get(reason, 0) + n)
    ups = [u for res in results for u in res["uploads"]]
    out["uploads"] = {label: {"count": sum(1 for x in ups if x[0] == label),
                              "p50_ms": round(percentile([x[1] * 1e3 for x in ups
                                                          if x[0] == label], 50), 2)}
                      for label in SIZES if any(x[0] == label for x in ups)}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "swapplan"))
    p.add_argument("--work-dir", default="/tmp/swapplan-service-load")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests", type=int, default=200, help="per client")
    p.add_argument("--repeat", type=float, default=0.5, help="fraction of exact repeats")
    p.add_argument("--weights", default="10k=0.92,100k=0.075,1M=0.005",
                   help="trace size mix (labels 10k, 100k, 1M)")
    p.add_argument("--budget-fraction", type=float, default=0.95)
    p.add_argument("--time-limit-s", type=float, default=900,
                   help="no request starts after this (the run is bounded)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--serve-arg", action="append", default=[],
                   help="a flag for swapplan serve (repeat), e.g. --serve-arg=--threads=16")
    p.add_argument("--cached-probe", type=int, default=500,
                   help="after the mixed run: this many sequential cached Plans by one client")
    p.add_argument("--load-probe-interval-s", type=float, default=0.05,
                   help="during the mixed run: a cached Plan of the smallest trace this often "
                        "from the driving process (0 = none)")
    p.add_argument("--max-server-rss-bytes", type=int, default=2 << 30,
                   help="fail when the server's peak RSS (VmHWM) passes this (default 2 GiB)")
    p.add_argument("--json", default=None, help="write the summary here")
    args = p.parse_args(argv)
    weights = {}
    for item in args.weights.split(","):
        label, w = item.split("=")
        if label not in SIZES:
            p.error("--weights: unknown size %r (10k, 100k, 1M)" % label)
        weights[label] = float(w)
    t_prep = time.time()
    paths = synth_traces(args.binary, args.work_dir, [x for x in weights if weights[x] > 0])
    server = Server(args.binary, args.serve_arg, os.path.join(args.work_dir, "serve.log"))
    try:
        budgets, policies = prepare(server.address, paths, args.budget_fraction)
        print("prepared in %.1f s: %s" % (time.time() - t_prep, {k: budgets[k] for k in paths}))
        deadline = time.time() + args.time_limit_s
        jobs = [(server.address, c, make_requests(c, args.requests, args.repeat, weights,
                                                  args.seed), paths, budgets, policies, deadline)
                for c in range(args.clients)]
        peak_rss = [server.status_kib("VmHWM")]
        stop = threading.Event()

        def sample():
            while not stop.wait(0.5):
                peak_rss[0] = max(peak_rss[0], server.status_kib("VmHWM"))
        threading.Thread(target=sample, daemon=True).start()
        small = next(x for x in SIZES if x in paths)
        probe_during = None
        if args.load_probe_interval_s > 0:
            probe_during = LoadProbe(server.address, paths[small], budgets[small],
                                     args.load_probe_interval_s)
        ctx = multiprocessing.get_context("spawn")
        threads_before = server_threads(server.proc.pid)
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        if probe_during:
            probe_during.thread.start()
        with ctx.Pool(args.clients) as pool:
            results = pool.map(run_client, jobs)
        wall = time.perf_counter() - t0
        threads_after = server_threads(server.proc.pid)
        stop.set()
        if probe_during:
            during = probe_during.finish()
        peak_rss[0] = max(peak_rss[0], server.status_kib("VmHWM"))
        summary = summarize(results, wall, server, peak_rss[0], args)
        summary["load_average_1m_before"] = load_before
        summary["load_average_1m_after"] = os.getloadavg()[0]
        # Where the server's threads spent the mixed run, by thread name:
        # on a CPU, and waiting for one (threads that ended meanwhile are
        # not counted).
        summary["server_threads_during_load"] = thread_deltas(threads_before, threads_after)
        if probe_during:
            summary["cached_plan_probe_during_load"] = dict(during, trace=small,
                                                            interval_s=args.load_probe_interval_s)
        if args.cached_probe > 0:
            probe, cpu = cached_plan_probe(server.address, paths[small], budgets[small],
                                           args.cached_probe, server.proc.pid)
            summary["cached_plan_probe"] = dict(
                cpu, count=len(probe), p50_ms=round(percentile(probe, 50), 3),
                p99_ms=round(percentile(probe, 99), 3), trace=small)
        summary.update({"weights": weights, "repeat": args.repeat, "budgets": budgets,
                        "serve_args": args.serve_arg, "seed": args.seed,
                        "time_limit_s": args.time_limit_s})
    finally:
        rc = server.stop()
    summary["server_exit_status"] = rc
    summary["server_side_latency"] = server_side(os.path.join(args.work_dir, "serve.log"))
    summary["max_server_rss_bytes"] = args.max_server_rss_bytes
    summary["server_rss_over_bound"] = summary["server_peak_rss_bytes"] > args.max_server_rss_bytes
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    if summary["server_rss_over_bound"]:
        sys.stderr.write("server peak RSS %d bytes is over --max-server-rss-bytes %d\n"
                         % (summary["server_peak_rss_bytes"], args.max_server_rss_bytes))
    return 1 if summary["failed"] or rc != 0 or summary["server_rss_over_bound"] else 0


if __name__ == "__main__":
    sys.exit(main())
