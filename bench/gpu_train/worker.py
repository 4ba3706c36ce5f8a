"""One row of the GPU training check, in a process of its own.

    python3 bench/gpu_train/worker.py SPEC.json

SPEC (written by driver.py) names the method (methods.py), the model size
(model.SIZES), the device, the memory cap, the steps and the time box, and
where the result goes. The worker sets the cap before the first CUDA
allocation (torch.cuda.set_per_process_memory_fraction), starts the memory
history there when asked (torch.cuda.memory._record_memory_history), trains
`warmup` + `steps` steps (the timed ones stop after time_box_s) and rewrites
the result file after every step, so a row killed by the driver still leaves
its figures. Step time: wall clock
from before zero_grad to after optimizer.step() and a device synchronise.
"""

import gzip
import json
import os
import pickle
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import methods  # noqa: E402
import model as M  # noqa: E402


def _write(path, result):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, path)


def _sync(device):
    if device != "cpu":
        torch.cuda.synchronize()


def _memory(device, result):
    if device == "cpu":
        return
    result["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()


def _prepare_device(spec, result):
    """Cap, memory history, determinism: before the first CUDA allocation."""
    device = spec["device"]
    M.deterministic()
    if device == "cpu":
        torch.set_num_threads(spec.get("threads", 1))
        return
    if spec.get("snapshot"):
        torch.cuda.memory._record_memory_history(max_entries=spec.get("snapshot_entries", 100000),
                                                 stacks="python")
    total = torch.cuda.get_device_properties(0).total_memory
    result["device_total_bytes"] = total
    result["device_name"] = torch.cuda.get_device_name(0)
    cap = spec.get("cap_bytes")
    if cap:
        fraction = min(1.0, cap / total)
        torch.cuda.set_per_process_memory_fraction(fraction)
        result["cap_fraction"] = fraction


def _snapshot(path, limit=15 << 20):
    """torch.cuda.memory._snapshot() of the history begun before the first
    allocation, pickled and gzipped; without the Python frames when that is
    over `limit` bytes (a GPU machine's call returns files of at most 16 MiB)."""
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    with gzip.open(path, "wb") as f:
        pickle.dump(snap, f)
    stripped = False
    if os.path.getsize(path) > limit:
        for trace in snap.get("device_traces", []):
            for entry in trace:
                entry.pop("frames", None)
        for segment in snap.get("segments", []):
            for block in segment.get("blocks", []):
                block.pop("frames", None)
        with gzip.open(path, "wb") as f:
            pickle.dump(snap, f)
        stripped = True
    return {"snapshot": os.path.basename(path), "snapshot_bytes": os.path.getsize(path),
            "snapshot_frames_stripped": stripped,
            "snapshot_events": sum(len(t) for t in snap.get("device_traces", []))}


def run(spec):
    cfg = M.SIZES[spec["size"]]
    device = spec["device"]
    result = {"name": spec["name"], "status": "running", "losses": [], "step_s": [],
              "warmup": spec["warmup"], "torch": torch.__version__}
    path = spec["result"]
    t_start = time.perf_counter()
    deadline = None  # time_box_s of timed steps, from the first one
    method = None
    try:
        _prepare_device(spec, result)
        model, opt = M.make(cfg, device)
        # Made before the method sees any op: a policy's op positions are
        # those of the recorded step, which has no batch-making ops.
        batches = [M.batch(cfg, i, device) for i in range(spec["warmup"] + spec["steps"])]
        method = methods.open_method(spec, model, opt, device)
        with method:
            for i in range(spec["warmup"] + spec["steps"]):
                timed = i - spec["warmup"]
                if timed == 0:
                    deadline = time.perf_counter() + spec["time_box_s"]
                elif timed >= 1 and time.perf_counter() > deadline:
                    result["time_boxed"] = True
                    break
                x, y = batches[i]
                _sync(device)
                t0 = time.perf_counter()
                loss = M.step(model, opt, x, y, method.forward)
                _sync(device)
                result["step_s"].append(time.perf_counter() - t0)
                result["losses"].append(loss)
                _memory(device, result)
                _write(path, result)
        result["status"] = "ok"
    except methods.RowError as e:
        result["status"] = "unavailable"
        result["error"] = str(e)
    except Exception as e:  # noqa: BLE001 - the row reports what stopped it
        oom = type(e).__name__ == "OutOfMemoryError" or "out of memory" in str(e)
        result["status"] = "oom" if oom else "error"
        result["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
        result["traceback"] = traceback.format_exc()[-4000:]
    if method is not None:
        try:
            result.update(method.counts())  # a failed row's counts too
        except Exception as e:  # noqa: BLE001
            result["counts_error"] = "%s: %s" % (type(e).__name__, e)
    try:
        _memory(device, result)
    except Exception as e:  # noqa: BLE001 - a broken context: the figures so far stand
        result["memory_error"] = "%s: %s" % (type(e).__name__, e)
    result["wall_s"] = time.perf_counter() - t_start
    if spec.get("snapshot") and device != "cpu":
        try:
            result.update(_snapshot(spec["snapshot"]))
        except Exception as e:  # noqa: BLE001
            result["snapshot_error"] = "%s: %s" % (type(e).__name__, e)
    _write(path, result)
    return result


def main(argv):
    with open(argv[0]) as f:
        spec = json.load(f)
    run(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
