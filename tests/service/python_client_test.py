#!/usr/bin/env python3
"""swapplan.client against a live `swapplan serve` (issue 22): every RPC from
Python, results equal to the CLI's `--json` for the same inputs, the error
mapping (bad token, malformed trace, oversized upload, unknown planner,
infeasible budget, fingerprint mismatch, unknown cache key, deadline,
unreachable server), TLS with a certificate made in the test, a search
stopped by its deadline, and a re-upload after the server lost a trace.

The server listens on a loopback port it chooses (--listen 127.0.0.1:0).
Exit 77 (skipped) when the swapplan command has no `serve`.
"""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_fixture as fx  # noqa: E402

client = None  # swapplan.client, imported in main() once the server is known to exist
pb = None      # its messages

BUDGET = "1.45GiB"  # 1556925645 B: under the small trace's 1645543424 B peak
# The device fields the CLI's report and the proto's DeviceModel share.
DEVICE_FIELDS = ("name", "capacity_bytes", "reserve_bytes", "h2d_bandwidth_bytes_per_s",
                 "d2h_bandwidth_bytes_per_s", "copy_latency_ns", "copy_engines",
                 "compute_time_scale")


class OfflineTest(unittest.TestCase):
    """The client's own logic, no server: units, chunking, status mapping."""

    def test_device_spec_reads_the_cli_units(self):
        from swapplan.client._convert import device_spec
        s = device_spec("a100-80g", "60GiB", reserve="2GiB", h2d_bandwidth="25GB/s",
                        d2h_bandwidth=1e9, copy_latency="10us", half_duplex=True,
                        compute_time_scale="0.5x")
        self.assertEqual("a100-80g", s.preset)
        self.assertEqual(60 * 2 ** 30, s.capacity_bytes)    # 64424509440
        self.assertEqual(2 * 2 ** 30, s.reserve_bytes)
        self.assertEqual(25e9, s.h2d_bandwidth_bytes_per_s)
        self.assertEqual(1e9, s.d2h_bandwidth_bytes_per_s)
        self.assertEqual(10000, s.copy_latency_ns)           # 10 us
        self.assertTrue(s.half_duplex)
        self.assertEqual(0.5, s.compute_time_scale)
        unset = device_spec()
        self.assertEqual(0, unset.capacity_bytes)            # 0 = the trace's figure
        with self.assertRaisesRegex(ValueError, "device_memory: cannot read '60 parsecs'"):
            device_spec(device_memory="60 parsecs")
        # A memory tier as the --remote-* flags give one.
        t = device_spec(tiers=[{"capacity": "1TiB", "store_bandwidth": "50GB/s",
                                "load_bandwidth": 25e9, "latency": "2us",
                                "shared_by_ranks": 8}]).tiers
        self.assertEqual(1, len(t))
        self.assertEqual((b"remote", 2 ** 40, 50e9, 25e9, 2000, 8),
                         (t[0].name, t[0].capacity_bytes, t[0].store_bandwidth_bytes_per_s,
                          t[0].load_bandwidth_bytes_per_s, t[0].latency_ns,
                          t[0].shared_by_ranks))
        with self.assertRaisesRegex(ValueError, r"tiers\[0\]: give bandwidth"):
            device_spec(tiers=[{"capacity": "1TiB", "store_bandwidth": "50GB/s"}])
        with self.assertRaisesRegex(ValueError, r"tiers\[0\]: unknown key bandwith"):
            device_spec(tiers=[{"capacity": "1TiB", "bandwith": "50GB/s"}])

    def test_uploads_go_in_chunks_with_the_size_first(self):
        import io
        p = client.Planner("127.0.0.1:1", chunk_bytes=100)
        try:
            msgs = list(p._chunks("t.trace", 250, io.BytesIO(bytes(250)).read))
            # 250 bytes in chunks of 100: 100 + 100 + 50; name and size once.
            self.assertEqual([100, 100, 50], [len(m.chunk) for m in msgs])
            self.assertEqual(("t.trace", 250), (msgs[0].name, msgs[0].total_bytes))
            self.assertEqual(("", 0), (msgs[1].name, msgs[1].total_bytes))
            empty = list(p._chunks("e.trace", 0, io.BytesIO(b"").read))
            self.assertEqual(1, len(empty))  # one message: the server sees the name
        finally:
            p.close()
        with self.assertRaisesRegex(ValueError, "chunk_bytes"):
            client.Planner("127.0.0.1:1", chunk_bytes=(1 << 20) + 1)

    def test_status_codes_become_exceptions_with_the_servers_message(self):
        import grpc
        from swapplan.client._errors import from_rpc_error

        class FakeRpcError(grpc.RpcError):
            def __init__(self, code, details, trailing):
                self._c, self._d, self._t = code, details, trailing

            def code(self):
                return self._c

            def details(self):
                return self._d

            def trailing_metadata(self):
                return self._t

        e = from_rpc_error("Plan", FakeRpcError(grpc.StatusCode.OUT_OF_RANGE, "2 bytes missing",
                                                (("swapplan-error-kind", "infeasible"),)))
        self.assertIsInstance(e, client.Infeasible)
        self.assertEqual(("Plan", "2 bytes missing", "infeasible"), (e.method, e.message, e.kind))
        self.assertEqual("Plan: OUT_OF_RANGE: 2 bytes missing", str(e))
        for code, cls, builtin in (
                (grpc.StatusCode.INVALID_ARGUMENT, client.InvalidArgument, ValueError),
                (grpc.StatusCode.NOT_FOUND, client.NotFound, LookupError),
                (grpc.StatusCode.FAILED_PRECONDITION, client.FingerprintMismatch, Exception),
                (grpc.StatusCode.RESOURCE_EXHAUSTED, client.ResourceExhausted, Exception),
                (grpc.StatusCode.DEADLINE_EXCEEDED, client.DeadlineExceeded, TimeoutError),
                (grpc.StatusCode.CANCELLED, client.Cancelled, Exception),
                (grpc.StatusCode.UNAUTHENTICATED, client.Unauthenticated, PermissionError),
                (grpc.StatusCode.UNAVAILABLE, client.Unavailable, ConnectionError),
                (grpc.StatusCode.INTERNAL, client.InternalError, Exception)):
            e = from_rpc_error("Check", FakeRpcError(code, "m", None))
            self.assertIs(cls, type(e))
            self.assertIsInstance(e, builtin)
            self.assertIsNone(e.kind)
        e = from_rpc_error("Plan", FakeRpcError(grpc.StatusCode.ABORTED, "m", ()))
        self.assertIs(client.PlannerError, type(e))


class ServiceTestBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="swapplan-client-test-")
        cls.trace = fx.synth(os.path.join(cls.tmp, "small.trace"), *fx.SMALL_MODEL)
        # The same model with 3 layers: another op sequence (fingerprint).
        other = list(fx.SMALL_MODEL)
        other[other.index("--layers") + 1] = "3"
        cls.other_trace = fx.synth(os.path.join(cls.tmp, "other.trace"), *other)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


class EveryMethodTest(ServiceTestBase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = fx.Server("--cache-dir", os.path.join(cls.tmp, "cache"))
        cls.planner = client.Planner(cls.server.address, timeout_s=120)

    @classmethod
    def tearDownClass(cls):
        cls.planner.close()
        rc = cls.server.stop()
        super().tearDownClass()
        assert rc == 0, "swapplan serve exited %s on SIGTERM" % rc

    def cli_plan(self):
        policy = os.path.join(self.tmp, "cli-policy.pb")
        return fx.cli_json("plan", self.trace, "--device-memory", BUDGET, "-o", policy), policy

    def test_upload_describes_the_trace(self):
        up = self.planner.upload(self.trace)
        self.assertEqual(64, len(up.trace_id))  # sha256, hex
        self.assertEqual(os.path.getsize(self.trace), up.info["size_bytes"])
        self.assertEqual(1, up.info["num_iterations"])
        self.assertEqual(356, up.info["num_ops"])  # as `swapplan synth` reports for SMALL_MODEL
        self.assertEqual(356, up.info["iterations"][0]["num_ops"])
        # Uploading the same bytes again names the same trace.
        with open(self.trace, "rb") as f:
            self.assertEqual(up.trace_id, self.planner.upload(f.read()).trace_id)

    def test_plan_equals_the_cli_and_a_repeat_is_a_cache_hit(self):
        cli, cli_policy = self.cli_plan()
        first = self.planner.plan(self.trace, device_memory=BUDGET, skip_cache=True)
        r = first.report
        for k in ("budget_bytes", "check", "d2h_bytes", "h2d_bytes", "feasible", "iteration",
                  "iteration_time_ns", "ideal_iteration_time_ns", "num_items", "num_ops",
                  "num_release_waits", "overhead_vs_ideal_fraction", "peak_unswapped_bytes",
                  "peak_with_policy_bytes", "peak_with_policy_op", "planner", "stall_ns",
                  "expected_overhead_ns", "warnings"):
            self.assertEqual(cli[k], r[k], k)
        for k in DEVICE_FIELDS:
            self.assertEqual(cli["device"][k], r["device"][k], "device." + k)
        self.assertEqual(os.path.basename(self.trace), r["trace"])
        self.assertFalse(first.cache_hit)
        self.assertGreater(first.plan_time_ns, 0)
        # The policy itself: the CLI's check of the service's policy equals
        # its check of its own.
        mine = first.save(os.path.join(self.tmp, "service-policy.pb"))
        self.assertEqual(fx.cli_json("check", self.trace, cli_policy)["num_items"],
                         fx.cli_json("check", self.trace, mine)["num_items"])
        again = self.planner.plan(self.trace, device_memory=BUDGET)
        self.assertTrue(again.cache_hit)
        self.assertEqual(0, again.plan_time_ns)
        self.assertEqual(first.cache_key, again.cache_key)
        self.assertEqual(first.policy, again.policy)
        self.assertEqual(r, again.report)
        # Another device is another key.
        other = self.planner.plan(self.trace, device_memory="1.5GiB")
        self.assertNotEqual(first.cache_key, other.cache_key)

    def test_the_cli_with_server_and_python_agree(self):
        remote = fx.cli_json("plan", self.trace, "--device-memory", BUDGET, "--server",
                             self.server.address)
        r = self.planner.plan(self.trace, device_memory=BUDGET).report
        for k in ("budget_bytes", "num_items", "d2h_bytes", "iteration_time_ns", "stall_ns",
                  "peak_with_policy_bytes", "peak_with_policy_op", "feasible", "planner"):
            self.assertEqual(remote[k], r[k], k)

    def test_get_policy_returns_the_cached_plan(self):
        planned = self.planner.plan(self.trace, device_memory=BUDGET, policy_as_json=True)
        got = self.planner.get_policy(planned.cache_key, policy_as_json=True)
        self.assertEqual(planned.policy, got.policy)
        self.assertEqual(planned.report, got.report)
        self.assertIn('"items"', got.policy_json)
        path = got.save(os.path.join(self.tmp, "got.json"))
        self.assertEqual(planned.report["num_items"],
                         fx.cli_json("check", self.trace, path)["num_items"])

    def test_check_equals_the_cli(self):
        _, policy = self.cli_plan()
        cli = fx.cli_json("check", self.trace, policy)
        r = self.planner.check(self.trace, policy)
        # CheckResponse name <- `swapplan check --json` name.
        names = {"clean": "clean", "iteration": "iteration", "items": "num_items",
                 "budget_bytes": "budget_bytes", "peak_unswapped_bytes": "peak_unswapped_bytes",
                 "peak_bytes": "peak_with_policy_bytes", "peak_op": "peak_with_policy_op",
                 "bytes_out": "d2h_bytes", "late_swap_ins": "num_late_swap_ins",
                 "swap_in_wait_ns": "swap_in_wait_ns", "release_waits": "num_release_waits",
                 "release_wait_ns": "release_wait_ns"}
        for mine, theirs in names.items():
            self.assertEqual(cli[theirs], r[mine], mine)
        self.assertEqual([], r["violations"])

    def test_simulate_equals_the_cli(self):
        _, policy = self.cli_plan()
        cli = fx.cli_json("simulate", self.trace, policy)
        r = self.planner.simulate(self.trace, policy)
        names = {"iteration": "iteration", "num_ops": "num_ops",
                 "iteration_time_ns": "iteration_time_ns",
                 "ideal_time_ns": "ideal_iteration_time_ns",
                 "overhead_vs_ideal_fraction": "overhead_vs_ideal_fraction",
                 "compute_ns": "compute_ns", "stall_ns": "stall_ns",
                 "peak_bytes": "peak_with_policy_bytes", "peak_op": "peak_with_policy_op",
                 "bytes_d2h": "d2h_bytes", "bytes_h2d": "h2d_bytes",
                 "copies_d2h": "num_d2h_copies", "copies_h2d": "num_h2d_copies"}
        for mine, theirs in names.items():
            self.assertEqual(cli[theirs], r[mine], mine)
        self.assertEqual(cli["oom"]["occurred"], r["oom"])
        for k in DEVICE_FIELDS:
            self.assertEqual(cli["device"][k], r["device"][k], "device." + k)
        # No policy: the iteration as recorded (80 GiB, no copies, no stall).
        plain = self.planner.simulate(self.trace)
        self.assertFalse(plain["oom"])
        self.assertEqual(0, plain["stall_ns"])
        self.assertEqual(0, plain["copies_d2h"])
        self.assertEqual(cli["ideal_iteration_time_ns"], plain["iteration_time_ns"])
        self.assertEqual(1645543424, plain["peak_bytes"])  # the unswapped peak

    def test_compare_equals_the_cli(self):
        planners = ["noswap", "chameleon", "recompute"]
        cli = fx.cli_json("compare", self.trace, "--device-memory", BUDGET, "--planners",
                          ",".join(planners))
        r = self.planner.compare(self.trace, planners, device_memory=BUDGET)
        for k in ("budget_bytes", "peak_unswapped_bytes", "iteration", "num_ops"):
            self.assertEqual(cli[k], r[k], k)
        self.assertEqual(cli["ideal_iteration_time_ns"], r["ideal_time_ns"])
        cli_rows = {row["planner"]: row for row in cli["rows"]}
        rows = {row["planner"]: row for row in r["rows"]}
        self.assertEqual(set(cli_rows), set(rows))
        for name, row in rows.items():
            theirs = cli_rows[name]
            self.assertEqual(theirs["feasible"], row["feasible"], name)
            if not row["feasible"]:
                continue
            self.assertEqual(theirs["iteration_time_ns"], row["iteration_time_ns"], name)
            self.assertEqual(theirs["stall_ns"], row["stall_ns"], name)
            self.assertEqual(theirs["peak_with_policy_bytes"], row["peak_bytes"], name)
            self.assertEqual(theirs["num_items"], row["items"], name)
            self.assertEqual(theirs["overhead_vs_ideal_fraction"],
                             row["overhead_vs_ideal_fraction"], name)
        # The budget as an oversubscription ratio, and a planner's option.
        cli = fx.cli_json("compare", self.trace, "--oversubscription", "1.05x", "--planners",
                          "chameleon", "--planner-option", "chameleon.min-tensor-bytes=16KiB")
        r = self.planner.compare(self.trace, ["chameleon"], oversubscription=1.05,
                                 planner_options={"chameleon": {"min-tensor-bytes": "16KiB"}})
        self.assertEqual(cli["budget_bytes"], r["budget_bytes"])
        row, theirs = r["rows"][0], cli["rows"][0]
        self.assertEqual(("chameleon", theirs["num_items"], theirs["iteration_time_ns"]),
                         (row["planner"], row["items"], row["iteration_time_ns"]))

    def test_search_streams_progress_and_equals_the_cli(self):
        flags = {"max-generations": 3, "seed": 1, "population": 16, "local-search-moves": 50,
                 "time-limit-ns": "0"}
        cli_args = []
        for k, v in flags.items():
            cli_args += ["--" + k, str(v)]
        cli = fx.cli_json("search", self.trace, "--device-memory", BUDGET, *cli_args)
        call = self.planner.search(self.trace, device_memory=BUDGET, options=flags,
                                   skip_cache=True)
        progress = list(call)
        # Generation 0 (the first population), then 3 more.
        self.assertEqual([0, 1, 2, 3], [p["generation"] for p in progress])
        self.assertTrue(all(p["evaluations"] > 0 for p in progress))
        self.assertIsNotNone(call.result)
        res = call.result
        self.assertEqual("generation limit", res.stop_reason)
        self.assertEqual(cli["stop_reason"], res.stop_reason)
        # Every figure of the result is the CLI's report of the same search
        # (search --json names in the SearchResult docstring).
        self.assertEqual(cli["num_generations"], progress[-1]["generation"])
        for mine, theirs in (("generations", "num_generations"),
                             ("evaluations", "num_evaluations"),
                             ("infeasible_evaluations", "num_infeasible_evaluations"),
                             ("source", "result_source"),
                             ("local_moves_tried", "num_local_moves_tried"),
                             ("local_moves_kept", "num_local_moves_kept")):
            self.assertEqual(cli[theirs], getattr(res, mine), mine)
        self.assertGreater(res.search_time_ns, 0)
        self.assertEqual(len(cli["seeds"]), len(res.seeds))
        for seed, theirs in zip(res.seeds, cli["seeds"]):
            self.assertEqual(theirs["planner"], seed["planner"])
            # The CLI writes null for a seed that does not fit, the proto -1.
            want = -1 if theirs["iteration_time_ns"] is None else theirs["iteration_time_ns"]
            self.assertEqual(want, seed["iteration_time_ns"], seed["planner"])
            self.assertEqual((theirs["chromosome"], theirs["note"]),
                             (seed["chromosome"], seed["note"]), seed["planner"])
        # The history is what the stream sent, generation by generation.
        self.assertEqual(progress, res.history)
        # The final simulation: the report's numbers and the CLI's.
        self.assertEqual(cli["iteration_time_ns"], res.simulation["iteration_time_ns"])
        self.assertEqual(cli["stall_ns"], res.simulation["stall_ns"])
        self.assertEqual(cli["peak_with_policy_bytes"], res.simulation["peak_bytes"])
        self.assertEqual(cli["pool_bytes"], res.simulation["detail"]["pool_bytes"])
        self.assertEqual(cli["d2h_bytes"], res.simulation["bytes_d2h"])
        self.assertEqual(set(res.to_dict()) - {"plan"},
                         {"stop_reason", "generations", "evaluations", "infeasible_evaluations",
                          "search_time_ns", "source", "local_moves_tried", "local_moves_kept",
                          "seeds", "history", "simulation"})
        report = res.plan.report
        self.assertEqual("advisor", report["planner"])
        self.assertFalse(res.plan.best_so_far)
        self.assertEqual(cli["iteration_time_ns"], report["iteration_time_ns"])
        self.assertEqual(cli["peak_with_policy_bytes"], report["peak_with_policy_bytes"])
        # Asked again: the cache answers with the result only, and with the
        # figures of the search that made the policy.
        again = self.planner.search(self.trace, device_memory=BUDGET, options=flags)
        self.assertEqual([], list(again))
        self.assertTrue(again.result.plan.cache_hit)
        for name in ("stop_reason", "generations", "evaluations", "infeasible_evaluations",
                     "search_time_ns", "source", "local_moves_tried", "local_moves_kept",
                     "seeds", "history", "simulation"):
            self.assertEqual(getattr(res, name), getattr(again.result, name), name)

    def test_a_device_with_a_memory_tier_plans_as_the_cli(self):
        # The chameleon toy (13 ops) on 900 B with a 300-byte remote tier at
        # 4 GB/s (the CLI's --remote-memory 300B --remote-bandwidth 4GB/s;
        # tests/cli/sim_cli_test.cc): the hyperoffload planner puts A (200
        # bytes) on the tier (tier 1), remotely as locally.
        toy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "traces",
                           "chameleon_toy.json")
        tier = {"capacity": "300B", "bandwidth": "4GB/s", "latency": "5ns"}
        link = {"device_memory": "900B", "h2d_bandwidth": "2GB/s", "d2h_bandwidth": "2GB/s"}
        flags = ["--device-memory", "900B", "--h2d-bandwidth", "2GB/s", "--d2h-bandwidth",
                 "2GB/s", "--remote-memory", "300B", "--remote-bandwidth", "4GB/s",
                 "--remote-latency", "5ns"]
        saved = os.path.join(self.tmp, "tiered")
        fx.cli_json("compare", toy, *flags, "--planners", "hyperoffload", "--planner-option",
                    "hyperoffload.min-tensor-bytes=0", "--save-policies", saved)
        r = self.planner.plan(toy, planner="hyperoffload", options={"min-tensor-bytes": 0},
                              tiers=[tier], policy_as_json=True, **link)
        device = r.report["device"]
        self.assertEqual([{"name": "remote", "capacity_bytes": 300,
                           "store_bandwidth_bytes_per_s": 4e9, "load_bandwidth_bytes_per_s": 4e9,
                           "latency_ns": 5, "shared_by_ranks": 1}], device["tiers"])
        import json
        mine = json.loads(r.policy_json)
        with open(os.path.join(saved, "hyperoffload.json"), encoding="utf-8") as f:
            theirs = json.load(f)
        self.assertEqual(theirs["items"], mine["items"])
        self.assertEqual(theirs["device"], mine["device"])
        self.assertEqual([200], [item["size_bytes"] for item in mine["items"]
                                 if item.get("tier") == 1])
        # Without the tier the planner has nowhere but the host: another key.
        host_only = self.planner.plan(toy, planner="hyperoffload",
                                      options={"min-tensor-bytes": 0}, **link)
        self.assertNotEqual(r.cache_key, host_only.cache_key)
        self.assertEqual([], host_only.report["device"]["tiers"])
        # simulate with the tier: its traffic, as the CLI reports it.
        sim = self.planner.simulate(toy, r, tiers=[tier], **link)
        cli_sim = fx.cli_json("simulate", toy, os.path.join(saved, "hyperoffload.json"), *flags)
        self.assertEqual(cli_sim["iteration_time_ns"], sim["iteration_time_ns"])
        remote = sim["detail"]["tiers"][1]
        self.assertEqual(("remote", 200, 200), (remote["name"], remote["bytes_stored"],
                                                remote["bytes_loaded"]))
        with self.assertRaisesRegex(ValueError, r"tiers\[0\]: give its capacity"):
            self.planner.plan(toy, tiers=[{"bandwidth": "1GB/s"}], **link)

    def test_a_search_stopped_by_its_deadline_answers_its_best_so_far(self):
        # A 10-minute time limit and no generation limit: the 3 s deadline
        # stops it.
        t0 = time.monotonic()
        call = self.planner.search(self.trace, device_memory=BUDGET, timeout_s=3,
                                   options={"max-generations": 0, "time-limit-ns": "600s",
                                            "population": 16, "seed": 2})
        result = call.wait()
        self.assertLess(time.monotonic() - t0, 3.5)
        self.assertTrue(result.plan.best_so_far)
        self.assertEqual("deadline", result.stop_reason)
        self.assertTrue(result.plan.report["feasible"])
        self.assertLessEqual(result.plan.report["peak_with_policy_bytes"],
                             result.plan.report["budget_bytes"])

    def test_inline_trace(self):
        with open(self.trace, "rb") as f:
            data = f.read()
        r = self.planner.plan(client.InlineTrace(data, "inline.trace"), device_memory=BUDGET,
                              skip_cache=True)
        cli, _ = self.cli_plan()
        # The server keeps one copy of equal bytes: its name is the first
        # one it got them under (another test may have uploaded them).
        self.assertIn(r.report["trace"], ("inline.trace", "small.trace"))
        for k in ("budget_bytes", "num_items", "iteration_time_ns", "peak_with_policy_bytes"):
            self.assertEqual(cli[k], r.report[k], k)

    def test_errors_carry_the_code_and_the_servers_message(self):
        p = self.planner
        with self.assertRaises(client.NotFound) as e:
            p.plan(self.trace, device_memory=BUDGET, planner="no-such-planner")
        self.assertIn("no-such-planner", e.exception.message)
        self.assertEqual("not-found", e.exception.kind)
        with self.assertRaises(client.Infeasible) as e:
            p.plan(self.trace, device_memory="64MiB")
        self.assertIn("still missing", e.exception.message)
        self.assertEqual("infeasible", e.exception.kind)
        with self.assertRaises(client.InvalidArgument) as e:
            p.plan(self.trace, device_memory=BUDGET, iteration=5)
        self.assertIn("iteration 5 is out of range", e.exception.message)
        with self.assertRaises(client.InvalidArgument) as e:
            p.upload(b"this is not a trace", name="junk.trace")
        self.assertIn("junk.trace", e.exception.message)
        self.assertEqual("malformed-input", e.exception.kind)
        with self.assertRaises(client.InvalidArgument):
            p.check(self.trace, b"not a policy either")
        _, policy = self.cli_plan()
        with self.assertRaises(client.FingerprintMismatch) as e:
            p.check(self.other_trace, policy)
        self.assertEqual("fingerprint-mismatch", e.exception.kind)
        with self.assertRaises(client.NotFound) as e:
            p.get_policy("0" * 64)
        self.assertIn("0" * 64, e.exception.message)
        # Every one of them is a PlannerError naming its RPC.
        with self.assertRaises(client.PlannerError) as e:
            p.get_policy("f" * 64)
        self.assertTrue(str(e.exception).startswith("GetPolicy: NOT_FOUND: "))

    def test_a_deadline_before_the_answer_is_deadline_exceeded(self):
        # 100,008 ops (12 layers, 190 micro-batches): chameleon plans it in
        # about a second on this machine, 20x the 50 ms deadline.
        big = fx.synth(os.path.join(self.tmp, "big.trace"), "--model", "gpt2", "--layers", "12",
                       "--hidden", "256", "--heads", "4", "--ffn", "1024", "--seq", "1024",
                       "--micro-batch", "4", "--micro-batches", "190")
        up = self.planner.upload(big)
        self.assertEqual(100008, up.info["num_ops"])
        with self.assertRaises(client.DeadlineExceeded) as e:
            self.planner.plan(up, device_memory="1.8GiB", skip_cache=True, timeout_s=0.05)
        self.assertIsInstance(e.exception, TimeoutError)

    def test_unreachable_server_is_unavailable_and_fast(self):
        with client.Planner(fx.free_port_address(), timeout_s=30) as p:
            t0 = time.monotonic()
            with self.assertRaises(client.Unavailable):
                p.get_policy("0" * 64)
            with self.assertRaises(ConnectionError):  # Unavailable is one
                p.get_policy("0" * 64)
            self.assertLess(time.monotonic() - t0, 20)


class LimitsAndTokenTest(ServiceTestBase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        token_file = os.path.join(cls.tmp, "token")
        with open(token_file, "w") as f:
            f.write("s3cret-token\n")
        # 64 KiB: the small trace (about 37 KB) fits, a 100 KB one does not.
        cls.server = fx.Server("--token-file", token_file, "--max-trace-bytes", "64KiB")

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        super().tearDownClass()
        assert rc == 0, "swapplan serve exited %s on SIGTERM" % rc

    def test_token(self):
        with client.Planner(self.server.address, token="s3cret-token") as p:
            self.assertEqual(16, p.plan(self.trace, device_memory=BUDGET).report["num_items"])
        for token in (None, "wrong-token", "s3cret-token-and-more"):
            saved = os.environ.pop("SWAPPLAN_TOKEN", None)
            try:
                with client.Planner(self.server.address, token=token) as p:
                    with self.assertRaises(client.Unauthenticated) as e:
                        p.plan(self.trace, device_memory=BUDGET)
                    self.assertIn("token", e.exception.message)
                    self.assertIsInstance(e.exception, PermissionError)
            finally:
                if saved is not None:
                    os.environ["SWAPPLAN_TOKEN"] = saved
        os.environ["SWAPPLAN_TOKEN"] = "s3cret-token"
        try:
            with client.Planner(self.server.address) as p:  # the token from the environment
                self.assertTrue(p.plan(self.trace, device_memory=BUDGET).report["feasible"])
        finally:
            del os.environ["SWAPPLAN_TOKEN"]

    def test_oversized_upload_is_refused_while_uploading(self):
        big = bytes(100 * 1024)
        with client.Planner(self.server.address, token="s3cret-token") as p:
            with self.assertRaises(client.ResourceExhausted) as e:
                p.upload(big, name="big.trace")
            self.assertIn("--max-trace-bytes", e.exception.message)
            self.assertEqual("resource-limit", e.exception.kind)
            with self.assertRaises(client.ResourceExhausted):
                p.plan(client.InlineTrace(big), device_memory=BUDGET)
            # Without a declared size: refused once the bytes pass the limit,
            # long before the 64 chunks of 1 MiB are all sent.
            pulled = []

            def chunks():
                for i in range(64):
                    pulled.append(i)
                    yield pb.UploadTraceRequest(name="stream.trace", chunk=bytes(1 << 20))
            with self.assertRaises(client.ResourceExhausted) as e:
                p._upload_stream_requests(chunks(), timeout_s=60)
            self.assertIn("while uploading", e.exception.message)
            self.assertLess(len(pulled), 64)


class TlsTest(ServiceTestBase):
    def test_tls_with_the_servers_roots(self):
        if shutil.which("openssl") is None:
            self.skipTest("needs the openssl command to make a test certificate")
        cert, key = os.path.join(self.tmp, "cert.pem"), os.path.join(self.tmp, "key.pem")
        fx.subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                           key, "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext",
                           "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                          check=True, capture_output=True)
        server = fx.Server("--tls-cert", cert, "--tls-key", key)
        try:
            with client.Planner(server.address, tls_ca=cert) as p:
                self.assertEqual(16, p.plan(self.trace, device_memory=BUDGET).report["num_items"])
            with client.Planner("localhost:%d" % server.port, tls_ca=cert) as p:
                self.assertTrue(p.plan(self.trace, device_memory=BUDGET).cache_hit)
            # Plain text to a TLS server: the connection fails.
            with client.Planner(server.address, timeout_s=20) as p:
                with self.assertRaises(client.Unavailable):
                    p.get_policy("0" * 64)
        finally:
            self.assertEqual(0, server.stop())


class RestartTest(ServiceTestBase):
    def test_a_trace_the_server_lost_is_uploaded_again(self):
        first = fx.Server()
        address = first.address
        p = client.Planner(address)
        try:
            r = p.plan(self.trace, device_memory=BUDGET)
            self.assertFalse(r.cache_hit)
            self.assertEqual(0, first.stop())
            # Same port, no cache dir: the remembered trace id is unknown.
            second = fx.Server(listen=address)
            try:
                p.wait_ready(60)
                again = p.plan(self.trace, device_memory=BUDGET)
                self.assertEqual(r.report, again.report)
                self.assertEqual(2, sum("method=UploadTrace" in line
                                        for line in first.log + second.log))
            finally:
                self.assertEqual(0, second.stop())
        finally:
            p.close()


def main():
    global client, pb
    import swapplan.client as imported
    from swapplan.client._proto import pb as messages
    client, pb = imported, messages
    ok, why = fx.serve_available()
    argv = [sys.argv[0], "-v"] + sys.argv[1:]
    if not ok:
        # The client's own tests still run; the rest needs the server.
        argv = [sys.argv[0], "-v", "OfflineTest"]
    result = unittest.main(argv=argv, exit=False).result
    if not result.wasSuccessful():
        return 1
    if not ok:
        print("skipped the tests against a server: %s" % why)
        return fx.SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
