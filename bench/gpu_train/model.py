"""The training step every row of the GPU training check runs.

The GPT-style model of examples/gpt_model.py (pre-LayerNorm blocks, causal
attention with the score matrix materialised, GELU MLP, tied LM head) in one
dtype (bf16 by default), AdamW, and seeded synthetic token batches made on
the CPU and copied to the device, so that every row of a run trains on the
same bytes.

    cfg = SIZES["gpu"]                                   # ~356M parameters
    model, opt = make(cfg, "cuda")
    loss = step(model, opt, *batch(cfg, 0, "cuda"))      # a Python float

A step is O(layers x batch x seq^2) in memory (the attention scores).
"""

import os
import sys

import torch
import torch.nn.functional as F

_EXAMPLES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                          "examples"))
if _EXAMPLES not in sys.path:
    sys.path.insert(0, _EXAMPLES)

from gpt_model import GPT  # noqa: E402  (examples/gpt_model.py)

# Model and batch per run kind. "gpu": GPT-2-medium-like (24 x 1024, 16
# heads, vocab 50304: 356M parameters), sequence 2048, batch 4: 2.1 GB of
# parameters and AdamW state in bf16 and, extrapolated from a CPU recording
# of one block at batch 1 (docs/runtime.md "Training on a GPU"), about 20 GB
# of activations, most of them the 24 x 4 x 16 x 2048^2 softmax outputs.
# "dry": the same code at toy size for the CPU.
SIZES = {
    "gpu": dict(vocab=50304, context=2048, d_model=1024, heads=16, layers=24, batch=4,
                dtype="bfloat16"),
    "dry": dict(vocab=256, context=64, d_model=64, heads=4, layers=3, batch=4,
                dtype="bfloat16"),
}

SEED = 1234


def deterministic():
    """Deterministic kernels (warnings where an op has none), so that rows can
    be asked for identical losses; without filling new memory with NaN (what
    deterministic mode does from PyTorch 2.1 on: a write of every new tensor,
    work the rows would each pay)."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        import torch.utils.deterministic as d
    except ImportError:  # PyTorch < 2.1: no filling
        return
    d.fill_uninitialized_memory = False


def dtype_of(cfg):
    return getattr(torch, cfg["dtype"])


def parameters(cfg):
    """Parameter count of the model `cfg` describes (the LM head is tied)."""
    d, v, c, n = cfg["d_model"], cfg["vocab"], cfg["context"], cfg["layers"]
    block = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    return v * d + c * d + n * block + 2 * d


def make(cfg, device):
    """The model (on `device`, in cfg's dtype) and its AdamW, seeded."""
    torch.manual_seed(SEED)
    # Made on the device where torch.device is a context manager (2.x).
    where = torch.device(device)
    with where if where.type != "cpu" and hasattr(where, "__enter__") else _null():
        model = GPT(cfg["vocab"], cfg["context"], cfg["d_model"], cfg["heads"], cfg["layers"])
    model = model.to(device=device, dtype=dtype_of(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    return model, opt


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def batch(cfg, step, device):
    """Tokens and targets of step `step`: made on the CPU from a seed, so every
    row and every device gets the same ones."""
    g = torch.Generator().manual_seed(SEED * 7919 + step)
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["context"] + 1), generator=g)
    return tokens[:, :-1].to(device), tokens[:, 1:].to(device)


def step(model, opt, x, y, forward=None):
    """One training step; the loss as a Python float (a host sync).
    `forward(model, x)` replaces model(x) (the offloading rows wrap it)."""
    opt.zero_grad(set_to_none=True)
    logits = model(x) if forward is None else forward(model, x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    del logits
    loss.backward()
    value = loss.item()
    opt.step()
    return value
