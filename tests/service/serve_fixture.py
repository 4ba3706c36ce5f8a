"""Test support for the Python client tests: a `swapplan serve` process on a
loopback port chosen at run time, traces made with `swapplan synth`, and the
CLI's `--json` reports to compare with.

Environment (tests/meson.build sets it): SWAPPLAN_BINARY (the swapplan
command), SWAPPLAN_SOURCE_ROOT (python/ is put on sys.path) and
SWAPPLAN_PROTO_PYTHON_DIR (the generated planner_service_pb2.py).

SKIP (77) is the exit status of a test program whose swapplan command has
no `serve` (the service is not built); every other problem is a failure.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

SKIP = 77
ROOT = os.environ.get("SWAPPLAN_SOURCE_ROOT",
                      os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")))
if os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))
BINARY = os.environ.get("SWAPPLAN_BINARY", os.path.join(ROOT, "build", "swapplan"))

_LISTENING = re.compile(r"listening on (\S+):(\d+)")


def serve_available():
    """(True, "") when BINARY has the serve command, else (False, why)."""
    if not os.path.exists(BINARY):
        return False, "%s does not exist" % BINARY
    p = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True)
    if p.returncode != 0 or "--listen" not in p.stdout:
        return False, "%s has no serve command (the service is not built)" % BINARY
    return True, ""


def run_cli(*args, ok=(0,)):
    """Runs the swapplan command; returns (exit status, stdout, stderr)."""
    p = subprocess.run([BINARY] + [str(a) for a in args], capture_output=True, text=True)
    if p.returncode not in ok:
        raise AssertionError("swapplan %s exited %d: %s" % (" ".join(map(str, args)),
                                                           p.returncode, p.stderr))
    return p.returncode, p.stdout, p.stderr


def cli_json(*args, ok=(0,)):
    """The JSON report of `swapplan ARGS --json`."""
    _, out, _ = run_cli(*(list(args) + ["--json"]), ok=ok)
    return json.loads(out)


def synth(path, *flags):
    """`swapplan synth FLAGS -o PATH -q`; returns PATH."""
    run_cli("synth", *(list(flags) + ["-o", path, "-q"]))
    return path


# A GPT-2-like block stack of 356 ops whose unswapped peak (1645543424 B,
# the fp32 logits at op 56) is over 1.45 GiB: chameleon plans 16 swaps.
SMALL_MODEL = ("--model", "gpt2", "--layers", "4", "--hidden", "256", "--heads", "4", "--ffn",
               "1024", "--seq", "1024", "--micro-batch", "4")


class Server:
    """`swapplan serve --listen HOST:PORT ARGS` (port 0 = chosen by the
    server, read from its first log line). `log` collects its stderr lines;
    stop() sends SIGTERM and returns the exit status."""

    def __init__(self, *args, listen="127.0.0.1:0", start_timeout_s=120.0):
        self.proc = subprocess.Popen([BINARY, "serve", "--listen", listen] +
                                     [str(a) for a in args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.log = []
        self._ready = threading.Event()
        self.port = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(start_timeout_s) or self.port is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("swapplan serve did not start: %s" % "".join(self.log))
        self.address = "127.0.0.1:%d" % self.port

    def _read(self):
        for line in self.proc.stderr:
            self.log.append(line)
            if self.port is None:
                m = _LISTENING.search(line)
                if m:
                    self.port = int(m.group(2))
                    self._ready.set()
        self._ready.set()

    def peak_rss_bytes(self):
        """The server's peak resident set (VmHWM of /proc/PID/status)."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self, timeout_s=60.0):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        self.proc.stderr.close()
        return self.proc.returncode


def wait_until(predicate, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def free_port_address():
    """A loopback address nothing listens on (a port the kernel just gave
    out and took back)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1:%d" % s.getsockname()[1]
