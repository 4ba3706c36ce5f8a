"""Training under SwapRuntime measured from outside (swapplan.testing.
residency.ResidencyMeter, entered first): the helpers of the measured_*.py
suites (issue 30). A run gives the losses, the meter and the runtime.

Budget as in the issue: persistent + (plain peak - persistent) / 1.5, where
both figures come from the meter on a run without the runtime (persistent:
the bytes resident between two steps, parameters and optimizer state).
"""

import os
import sys

SOURCE_ROOT = os.environ.get(
    "SWAPPLAN_SOURCE_ROOT",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
for _d in (os.path.join(SOURCE_ROOT, "python"), os.path.join(SOURCE_ROOT, "examples"),
           os.path.join(SOURCE_ROOT, "examples", "runtime")):
    if _d not in sys.path:
        sys.path.insert(0, _d)

try:
    import torch  # noqa: E402
except ImportError as e:  # meson's "skipped", unless PyTorch is required
    print("needs PyTorch: %s" % e)
    sys.exit(1 if os.environ.get("SWAPPLAN_REQUIRE_TORCH") == "1" else 77)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from swapplan.runtime import SwapRuntime  # noqa: E402
from swapplan.testing.residency import ResidencyMeter  # noqa: E402

torch.set_num_threads(1)


class DropoutLM(nn.Module):
    """The second model: token embedding, residual GELU MLP blocks with
    dropout and LayerNorm, an LM head (random ops in every block)."""

    def __init__(self, vocab=128, width=64, depth=3, p=0.1):
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.GELU(),
                          nn.Dropout(p), nn.Linear(4 * width, width)) for _ in range(depth))
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        h = self.emb(idx)
        for b in self.blocks:
            h = h + b(h)
        return self.head(h)


def make_lm(seed=0):
    torch.manual_seed(seed)
    model = DropoutLM()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


# 8 batch shapes (rows x 32 tokens), cycled.
CYCLE = [4, 6, 8, 10, 12, 14, 16, 18]


def lm_step(model, opt, i, rows, vocab=128, seq=32):
    g = torch.Generator().manual_seed(7000 + i)
    tokens = torch.randint(0, vocab, (rows, seq + 1), generator=g)
    opt.zero_grad(set_to_none=True)
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    loss.backward()
    value = loss.item()
    opt.step()
    return value


def measure_plain(make, step, steps):
    """(losses, plain peak, persistent bytes) without the runtime; the seeds
    are reset so that the run with the runtime starts from the same state."""
    model, opt = make()
    torch.manual_seed(12345)
    losses, between = [], []
    with ResidencyMeter() as meter:
        for i in range(steps):
            losses.append(step(model, opt, i))
            between.append(meter.resident_bytes())
    return losses, meter.peak_bytes, max(between)


def budget_of(peak, persistent, ratio=1.5):
    return int(persistent + (peak - persistent) / ratio)


def run_measured(make, step, steps, budget, after_step=None, **runtime_args):
    """(losses, meter, runtime): the run under SwapRuntime inside a meter."""
    model, opt = make()
    torch.manual_seed(12345)
    losses = []
    runtime_args.setdefault("model", model)
    runtime_args.setdefault("optimizer", opt)
    with ResidencyMeter(budget_bytes=budget) as meter:
        with SwapRuntime(device_memory=budget, **runtime_args) as rt:
            for i in range(steps):
                losses.append(step(model, opt, i))
                if after_step is not None:
                    after_step(rt)
                meter.mark_iteration()
    return losses, meter, rt


def step_rows(rt):
    """Per step: its row of rt.iterations, or None for a step the
    saved-tensor clock replayed (rt.step_clocks; not the stage machine's)."""
    rows = iter(rt.iterations)
    return [next(rows) if c == "ops" else None for c in rt.step_clocks]


def summary(meter, rt):
    s = rt.stats
    return ("measured peak %d, budget %d, violations %d (first %s); runtime peak %d; stages %s; "
            "policy swaps %d, passive %d, uses off device %d, ooms %d, unpredicted %s, "
            "plan errors %s; recomputed %d, largest workspace %d" % (
                meter.peak_bytes, s["device_budget_bytes"], meter.violation_count,
                meter.violations[:2], s["peak_device_bytes"],
                [r["stage"][0] for r in rt.iterations], s["policy_swaps"], s["passive_swaps"],
                s["use_while_off_device"], s["ooms"], s["unpredicted_allocations"],
                sorted({r["plan_error"][:200] for r in rt.iterations if r["plan_error"]}),
                s["recomputed_storages"], s["recompute_workspace_peak_bytes"]))
