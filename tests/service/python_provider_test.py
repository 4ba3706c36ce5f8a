#!/usr/bin/env python3
"""swapplan.runtime.ServicePlanProvider (issue 22): the runtime shim's
policy provider that asks the planner service at GenPolicy.

  * an unreachable service: the provider returns no policy at once, counted
    as a fallback;
  * a service that accepts the connection and never answers: the provider
    returns no policy within its timeout;
  * examples/runtime/train_with_policy.py --server on such a service:
    training goes on (losses identical to the run without the shim), every
    GenPolicy step a fallback;
  * the same example on a live `swapplan serve`: the Stable steps run a
    policy planned by the service, within the budget, no OOM.

Exit 77 (skipped) without PyTorch unless SWAPPLAN_REQUIRE_TORCH=1; the live
test is skipped (the others run) when the swapplan command has no `serve`.
"""

import contextlib
import io
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_fixture as fx  # noqa: E402

sys.path.insert(0, os.path.join(fx.ROOT, "examples", "runtime"))


class SilentServer:
    """Accepts TCP connections on a loopback port and never answers: a
    service that is slow forever."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.conns = []
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self):
        self._stop = True
        self.sock.close()
        for c in self.conns:
            c.close()


def run_example(*args):
    """train_with_policy.main(ARGS) with its text output swallowed."""
    import train_with_policy
    with contextlib.redirect_stdout(io.StringIO()):
        return train_with_policy.main(list(args))


class ProviderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="swapplan-provider-test-")
        cls.record = fx.synth(os.path.join(cls.tmp, "record.json.gz"), *fx.SMALL_MODEL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def request(self):
        return {"record_path": self.record, "iteration": 0, "runtime_iteration": 3,
                "device_budget_bytes": 1 << 30, "work_dir": self.tmp}

    def test_unreachable_service_is_a_fast_fallback(self):
        from swapplan.runtime import ServicePlanProvider
        provider = ServicePlanProvider(fx.free_port_address(), timeout_s=20)
        t0 = time.monotonic()
        with self.assertLogs("swapplan.runtime", "WARNING") as logs:
            self.assertIsNone(provider(self.request()))
        elapsed = time.monotonic() - t0
        provider.close()
        # Connection refused fails at once, long before the 20 s timeout.
        self.assertLess(elapsed, 10)
        self.assertEqual(1, provider.stats["fallbacks"])
        self.assertEqual(0, provider.stats["policies"])
        self.assertIn("UNAVAILABLE", provider.stats["last_error"])
        self.assertIn("runtime iteration 3", logs.output[0])

    def test_silent_service_is_a_fallback_within_the_timeout(self):
        from swapplan.runtime import ServicePlanProvider
        silent = SilentServer()
        try:
            provider = ServicePlanProvider(silent.address, timeout_s=1.5)
            t0 = time.monotonic()
            with self.assertLogs("swapplan.runtime", "WARNING"):
                self.assertIsNone(provider(self.request()))
            elapsed = time.monotonic() - t0
            provider.close()
        finally:
            silent.close()
        self.assertGreaterEqual(elapsed, 1.4)
        self.assertLess(elapsed, 1.5 + 3.0)  # slack for a loaded machine
        self.assertEqual(1, provider.stats["fallbacks"])
        self.assertIn("DEADLINE_EXCEEDED", provider.stats["last_error"])

    def test_training_goes_on_without_an_answering_service(self):
        silent = SilentServer()
        try:
            t0 = time.monotonic()
            r = run_example("--steps", "5", "--server", silent.address, "--server-timeout", "1")
            elapsed = time.monotonic() - t0
        finally:
            silent.close()
        self.assertTrue(r["loss_identical"])
        self.assertGreaterEqual(r["service"]["asked"], 1)
        self.assertEqual(r["service"]["asked"], r["service"]["fallbacks"])
        self.assertEqual(0, r["service"]["policies"])
        self.assertEqual(0, r["policy_swaps"])
        self.assertEqual(0, r["ooms"])
        # Each GenPolicy step waited at most its second (+ slack).
        self.assertLess(r["service"]["seconds"], r["service"]["asked"] * 3.0)
        print("without an answering service: %d fallbacks, %.2f s waiting, %.1f s in all"
              % (r["service"]["fallbacks"], r["service"]["seconds"], elapsed))

    def test_live_service_provides_the_stable_policy(self):
        ok, why = fx.serve_available()
        if not ok:
            self.skipTest(why)
        server = fx.Server()
        try:
            r = run_example("--steps", "8", "--server", server.address, "--server-timeout", "120")
        finally:
            self.assertEqual(0, server.stop())
        self.assertTrue(r["loss_identical"])
        self.assertGreaterEqual(r["service"]["policies"], 1, r["service"])
        self.assertEqual(0, r["service"]["fallbacks"])
        self.assertGreaterEqual(r["stable"]["iterations"], 1)
        self.assertIsNotNone(r["planned_peak_bytes"])
        self.assertGreater(r["policy_swaps"], 0)
        self.assertEqual(0, r["ooms"])
        self.assertEqual(0, r["planned_policy_violations"])
        self.assertTrue(any("method=Plan" in line for line in server.log))


def main():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("needs PyTorch: %s" % e)
        return 1 if os.environ.get("SWAPPLAN_REQUIRE_TORCH") == "1" else fx.SKIP
    torch.set_num_threads(1)
    result = unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
