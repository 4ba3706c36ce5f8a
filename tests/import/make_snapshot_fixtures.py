#!/usr/bin/env python3
"""Writes the memory-snapshot fixtures of tests/import (committed under
tests/data/import/). No CUDA device was available to record a real
torch.cuda.memory._snapshot(), so these are built by hand with the structure
torch 2.x (_snapshot() -> dict with "segments" and "device_traces") and
torch 1.13 (a list of segments whose blocks carry "history") produce, and
written with Python's own pickle module (protocols 4 and 2) and json.

The training step they describe (every size a multiple of 512 B, worked
values in tests/import/snapshot_test.cc):
  resident before the history: two parameters, 4096 B each
  iteration 0: forward allocates a1 (1024 B) and a2 (2048 B) and the loss
    (512 B, freed at once); backward allocates the gradients g1, g2
    (4096 B each) and frees a2 then a1; the optimizer allocates the
    momentum buffers m1, m2 (4096 B each) and keeps them
  iteration 1: the same forward and backward (the gradients of iteration 0
    are freed before the new ones are allocated); the optimizer only
    updates.
Run: python3 tests/import/make_snapshot_fixtures.py tests/data/import
"""
import json
import os
import pickle
import sys

MODEL = {"filename": "/work/train/model.py", "line": 10, "name": "forward"}
MODEL2 = {"filename": "/work/train/model.py", "line": 11, "name": "forward"}
LOSS = {"filename": "/work/train/train.py", "line": 30, "name": "train_step"}
BWD = {"filename": "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", "line": 200,
       "name": "backward"}
OPT = {"filename": "/usr/lib/python3/dist-packages/torch/optim/sgd.py", "line": 80,
       "name": "step"}
TRAIN_BWD = {"filename": "/work/train/train.py", "line": 31, "name": "train_step"}
TRAIN_OPT = {"filename": "/work/train/train.py", "line": 32, "name": "train_step"}

BASE = 0x7f0000000000
P1, P2 = BASE, BASE + 4096
A1, A2, L = BASE + 8192, BASE + 9216, BASE + 11264
G1, G2 = BASE + 16384, BASE + 20480
G1B, G2B = BASE + 32768, BASE + 36864
M1, M2 = BASE + 24576, BASE + 28672


def ev(action, addr, size, frames, t):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
            "frames": frames}


def ring():
    t = [1000]

    def e(action, addr, size, frames):
        t[0] += 10
        return ev(action, addr, size, frames, t[0])

    out = [e("segment_alloc", BASE, 2097152, [MODEL])]
    for it in range(2):
        out += [e("alloc", A1, 1024, [MODEL]), e("alloc", A2, 2048, [MODEL2]),
                e("alloc", L, 512, [LOSS]), e("free_requested", L, 512, [LOSS]),
                e("free_completed", L, 512, [LOSS])]
        if it == 1:  # the previous gradients are released first
            for g in (G1, G2):
                out += [e("free_requested", g, 4096, [TRAIN_BWD]),
                        e("free_completed", g, 4096, [TRAIN_BWD])]
        g1, g2 = (G1, G2) if it == 0 else (G1B, G2B)
        out += [e("alloc", g1, 4096, [BWD, TRAIN_BWD]),
                e("free_requested", A2, 2048, [BWD, TRAIN_BWD]),
                e("free_completed", A2, 2048, [BWD, TRAIN_BWD]),
                e("alloc", g2, 4096, [BWD, TRAIN_BWD]),
                e("free_requested", A1, 1024, [BWD, TRAIN_BWD]),
                e("free_completed", A1, 1024, [BWD, TRAIN_BWD])]
        if it == 0:
            out += [e("alloc", M1, 4096, [OPT, TRAIN_OPT]),
                    e("alloc", M2, 4096, [OPT, TRAIN_OPT])]
    return out


def block(addr, size, state, frames):
    return {"address": addr, "size": size, "requested_size": size, "state": state,
            "frames": frames}


def snapshot_v2():
    blocks = [block(P1, 4096, "active_allocated", [{"filename": "/work/train/model.py",
                                                    "line": 5, "name": "__init__"}]),
              block(P2, 4096, "active_allocated", [{"filename": "/work/train/model.py",
                                                    "line": 6, "name": "__init__"}]),
              block(A1, 6144, "inactive", []),
              block(G1B, 4096, "active_allocated", [BWD, TRAIN_BWD]),
              block(G2B, 4096, "active_allocated", [BWD, TRAIN_BWD]),
              block(M1, 4096, "active_allocated", [OPT, TRAIN_OPT]),
              block(M2, 4096, "active_allocated", [OPT, TRAIN_OPT])]
    seg = {"device": 0, "address": BASE, "total_size": 2097152, "allocated_size": 24576,
           "active_size": 24576, "requested_size": 24576, "stream": 0, "segment_type": "large",
           "segment_pool_id": (0, 0), "is_expandable": False, "frames": [MODEL],
           "blocks": blocks}
    return {"segments": [seg], "device_traces": [ring()],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None}}


def snapshot_113():
    """torch 1.13: a list of segments; active blocks carry their history."""
    def hist(addr, size, frames):
        return [{"addr": addr, "real_size": size, "frames": frames}]
    blocks = [{"size": 4096, "state": "active_allocated", "history": hist(P1, 4096, [MODEL])},
              {"size": 4096, "state": "active_allocated", "history": hist(P2, 4096, [MODEL2])},
              {"size": 8192, "state": "inactive"},
              {"size": 2048, "state": "active_allocated", "history": hist(A1, 2048, [BWD])}]
    return [{"device": 0, "address": BASE, "total_size": 2097152, "allocated_size": 10240,
             "active_size": 10240, "stream": 0, "segment_type": "large", "blocks": blocks}]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    s = snapshot_v2()
    with open(os.path.join(out, "snapshot_v2.pickle"), "wb") as f:
        pickle.dump(s, f, protocol=4)
    with open(os.path.join(out, "snapshot_v2_protocol2.pickle"), "wb") as f:
        pickle.dump(s, f, protocol=2)
    with open(os.path.join(out, "snapshot_v2.json"), "w") as f:
        json.dump(s, f)
    with open(os.path.join(out, "snapshot_113.pickle"), "wb") as f:
        pickle.dump(snapshot_113(), f, protocol=4)
    # Hostile pickles: each must be refused, none may run anything.
    # A class reference (GLOBAL / STACK_GLOBAL then REDUCE) like a pickled
    # os.system call; written as bytes, never unpickled by this script.
    with open(os.path.join(out, "pickle_global.pickle"), "wb") as f:
        f.write(b"\x80\x02cposix\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.")
    # A string declaring 2 GiB that the file does not hold.
    with open(os.path.join(out, "pickle_huge_string.pickle"), "wb") as f:
        f.write(b"\x80\x04X\xff\xff\xff\x7fabc")
    # A list that contains itself as the segments list.
    cyc = []
    cyc.append(cyc)
    with open(os.path.join(out, "pickle_cycle.pickle"), "wb") as f:
        pickle.dump({"segments": cyc}, f, protocol=4)


if __name__ == "__main__":
    main()
