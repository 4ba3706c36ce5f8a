"""A process of its own for every row of the GPU training check, without
paying PyTorch's import in each.

    runner = Runner({"CUBLAS_WORKSPACE_CONFIG": ":4096:8"})
    rc = runner.run("worker", "row.spec.json", "row.log", timeout_s=60)
    # rc: the exit code, None when the process was killed at timeout_s

The rows are forked from a multiprocessing fork server that imported torch
and the row modules once (importing torch does not initialise CUDA, so every
row still makes its own CUDA context, cap and memory history). The
environment given is set before the server starts, so it holds when torch is
imported there (OMP_NUM_THREADS) and when a row initialises CUDA
(CUBLAS_WORKSPACE_CONFIG). A row's stdout and stderr go to its log file.
Where there is no fork server, or with SWAPPLAN_GPU_TRAIN_FORK=0, each row
runs as `python3 MODULE.py SPEC`.
"""

import gc
import importlib
import json
import multiprocessing
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(module, spec_path, log_path):
    gc.freeze()  # what the server imported: not traversed (nor copied) by the GC
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    with open(spec_path) as f:
        spec = json.load(f)
    importlib.import_module(module).run(spec)
    sys.stdout.flush()
    sys.stderr.flush()


class Runner:
    def __init__(self, env, preload=("torch", "worker", "trace_phase")):
        os.environ.update(env)
        if HERE not in sys.path:
            sys.path.insert(0, HERE)
        self.ctx = None
        if os.environ.get("SWAPPLAN_GPU_TRAIN_FORK", "1") != "0":
            try:
                self.ctx = multiprocessing.get_context("forkserver")
                self.ctx.set_forkserver_preload(list(preload))
            except ValueError:
                self.ctx = None

    def run(self, module, spec_path, log_path, timeout_s):
        if self.ctx is None:
            with open(log_path, "w") as log:
                try:
                    return subprocess.run(
                        [sys.executable, os.path.join(HERE, module + ".py"), spec_path],
                        stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s).returncode
                except subprocess.TimeoutExpired:
                    return None
        p = self.ctx.Process(target=_child, args=(module, spec_path, log_path))
        p.start()
        p.join(timeout_s)
        if p.is_alive():
            p.kill()
            p.join()
            return None
        return p.exitcode
