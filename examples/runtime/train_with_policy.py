"""Seed 000's Fig. 7 experiment in miniature, on the CPU: the same training
run twice — without the swap shim, then with it — and the losses compared
step by step.

A small GPT-style model (pre-LayerNorm decoder blocks, causal attention, GELU
MLP, tied LM head, AdamW) trains on synthetic tokens with a fixed seed. The
sequence length changes across steps (49..64 tokens); the model pads its
input to a multiple of 16, so a step whose length is not one runs one more op
in the forward (and the loss pads its targets: one more) — a slightly varying
op sequence, as validation passes, loss-scale skips or routing make in real
training.

With the shim (`swapplan.runtime.SwapRuntime`), the device budget is
`--device-memory` (default: --budget-fraction of the peak the runtime
measures for a step without swapping). The runtime goes through WarmUp
(Algorithm 3 keeps the peak under the budget by passive swaps), GenPolicy
(after each step, `swapplan plan` plans a policy from the runtime's record of
it) and Stable. Policies are kept per input signature by default (the
runtime's defaults, docs/runtime.md "Stages and providers"): each sequence
length is its own key, planned when first seen, and Stable runs each key's
latest policy. `--one-key --planning iteration` runs the papers' stage
machine instead: one policy, the best of GenPolicy, runs every step from then
on, whatever its length — the setting of Fig. 7, where `--keys` matters:
fuzzy runtime keys find a policy's tensors in steps of another length, the
naive (op ordinal, i-th tensor) key is defeated by the varying sequence.

    python3 examples/runtime/train_with_policy.py --steps 12 --json

With `--server ADDR` the policies come from the planner service (`swapplan
serve`, docs/service.md) instead of a `swapplan plan` process per GenPolicy
step (swapplan.runtime.ServicePlanProvider): each request is bounded by
--server-timeout, and an unreachable or slow service means no policy that
time (passive swaps go on; training never waits longer than that).

With --json it prints one JSON object: loss_identical, steps, budget_bytes,
peak_device_bytes (the runtime's, whole run), planned_peak_bytes (`swapplan
check`'s peak for the policies Stable ran, the largest),
stable_peak_device_bytes, policy_keys, policy_of_other_input,
policy_swaps, passive_swaps, use_while_off_device, ooms, stable (the counts of
the Stable steps), policy_drops / policy_recomputes / recompute_fallbacks_to_swap
(RECOMPUTE items: `--planner recompute`, or any planner `swapplan compare`
knows), and per step the stage, policy and sequence length. The
runtime library is found in build/ or through SWAPPLAN_RUNTIME_LIB.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

_PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "..", "python"))
_EXAMPLES_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _dir in (_PYTHON_DIR, _EXAMPLES_DIR):
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gpt_model import GPT  # noqa: E402  (examples/gpt_model.py)
from swapplan.runtime import (ServicePlanProvider, SwapRuntime,  # noqa: E402
                              find_swapplan_binary)

PAD_TO = 16


def sequence_lengths(steps, context, seed):
    """Per step: the full context or a shorter, seeded length (>= context - 15)."""
    rng = random.Random(seed)
    return [context if rng.random() < 0.5 else rng.randint(context - PAD_TO + 1, context - 1)
            for _ in range(steps)]


def make_model(args):
    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.context, args.d_model, args.heads, args.layers, pad_to=PAD_TO)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    return model, opt


def batch(args, step, length):
    g = torch.Generator().manual_seed(args.seed * 100003 + step)
    tokens = torch.randint(0, args.vocab, (args.batch, length + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def train_step(model, opt, x, y, vocab):
    """One unmodified training step; the loss as a Python float."""
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    if y.size(1) % PAD_TO:
        y = F.pad(y, (0, PAD_TO - y.size(1) % PAD_TO), value=-100)
    loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1), ignore_index=-100)
    loss.backward()
    value = loss.item()
    opt.step()
    return value


def train(args, lengths, runtime=None, steps=None):
    model, opt = make_model(args)
    losses = []
    ctx = runtime(model, opt) if runtime is not None else None
    if ctx is not None:
        ctx.__enter__()
    try:
        for step, length in enumerate(lengths[:steps]):
            x, y = batch(args, step, length)
            losses.append(train_step(model, opt, x, y, args.vocab))
    except BaseException:
        if ctx is not None:
            ctx.__exit__(*sys.exc_info())
        raise
    if ctx is not None:
        ctx.__exit__(None, None, None)
    return losses, ctx


def stable_counts(rows):
    keys = ("policy_swap_outs", "passive_swap_outs", "passive_swap_ins", "uses_while_off_device",
            "ooms")
    total = {k: 0 for k in keys}
    peak = 0
    stable = [r for r in rows if r["stage"] == "Stable"]
    for r in stable:
        for k in keys:
            total[k] += r["counts"][k]
        peak = max(peak, r["peak_bytes"])
    return {"iterations": len(stable), "peak_device_bytes": peak,
            "policy_swaps": total["policy_swap_outs"],
            "passive_swaps": total["passive_swap_outs"] + total["passive_swap_ins"],
            "use_while_off_device": total["uses_while_off_device"], "ooms": total["ooms"]}


def check_peak(record, policy):
    """`swapplan check`'s peak of `policy` on the record it was planned from."""
    out = subprocess.run([find_swapplan_binary(), "check", "--json", record, policy],
                         capture_output=True, text=True, check=False)
    if out.returncode not in (0, 2):  # 2: violations, still a report
        raise RuntimeError("swapplan check failed: " + (out.stderr or out.stdout))
    report = json.loads(out.stdout)
    return report["peak_with_policy_bytes"], report["violations"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--device-memory", default=None,
                   help="device budget, e.g. 24MiB (default: --budget-fraction of the "
                        "unswapped peak the runtime measures)")
    p.add_argument("--budget-fraction", type=float, default=0.8)
    p.add_argument("--keys", choices=("fuzzy", "naive"), default="fuzzy")
    p.add_argument("--json", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--warmup-iterations", type=int, default=1)
    p.add_argument("--genpolicy-iterations", type=int, default=1)
    p.add_argument("--one-key", action="store_true",
                   help="one policy key for every input (the papers'); default: a key per input "
                        "signature")
    p.add_argument("--planning", choices=("observed", "iteration"), default="observed",
                   help="SwapRuntime's planning: observed (each key's latest policy runs in "
                        "Stable) or iteration (the papers': the best GenPolicy policy)")
    p.add_argument("--bandwidth", default="8GB/s", help="host backend link, each way")
    p.add_argument("--min-tensor-bytes", default="16KiB",
                   help="chameleon and hybrid planners: smallest tensor to swap (hybrid: its "
                        "swap_min_tensor_bytes unless --planner-option sets it)")
    p.add_argument("--planner", default="chameleon",
                   help="the GenPolicy planner: chameleon (`swapplan plan`) or any name `swapplan "
                        "compare --planners` takes (recompute, hybrid, ...): its RECOMPUTE items "
                        "are executed by re-running the recorded ATen ops")
    p.add_argument("--planner-option", action="append", default=[], metavar="PLANNER.NAME=VALUE",
                   help="passed to `swapplan compare --planner-option` (planners other than "
                        "chameleon), repeatable")
    p.add_argument("--server", default=None, metavar="ADDR",
                   help="ask the planner service at ADDR (host:port, `swapplan serve`) for "
                        "policies instead of running `swapplan plan`")
    p.add_argument("--server-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="with --server: the most one GenPolicy request may take before "
                        "training goes on without a policy that time")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    lengths = sequence_lengths(args.steps, args.context, args.seed)

    t0 = time.perf_counter()
    baseline, _ = train(args, lengths)
    t_base = time.perf_counter() - t0

    if args.device_memory is None:
        # The unswapped peak, as the runtime counts it, over two steps.
        _, probe = train(args, lengths, lambda m, o: SwapRuntime(
            device_memory=1 << 40, model=m, optimizer=o, provider=None), steps=2)
        budget = int(probe.stats["peak_device_bytes"] * args.budget_fraction)
    else:
        budget = args.device_memory

    if args.planner == "chameleon":
        planner_args = ["--min-tensor-bytes", args.min_tensor_bytes]
    else:
        options = list(args.planner_option)
        # The hybrid's swap step is Chameleon: the same smallest swapped
        # tensor (its 1 MiB default swaps nothing in this miniature).
        if args.planner == "hybrid" and not any(
                o.replace("-", "_").startswith("hybrid.swap_min_tensor_bytes=") for o in options):
            options.append("hybrid.swap_min_tensor_bytes=%s" % args.min_tensor_bytes)
        planner_args = [a for o in options for a in ("--planner-option", o)]
    provider = "default"
    if args.server:
        provider = ServicePlanProvider(args.server, timeout_s=args.server_timeout,
                                       options={"min-tensor-bytes": args.min_tensor_bytes})
    with tempfile.TemporaryDirectory(prefix="swapplan-fig7-") as work:
        def runtime(model, opt):
            return SwapRuntime(device_memory=budget, model=model, optimizer=opt, keys=args.keys,
                               warmup_iterations=args.warmup_iterations,
                               genpolicy_iterations=args.genpolicy_iterations,
                               policies_by_input=not args.one_key, planning=args.planning,
                               h2d_bandwidth=args.bandwidth, d2h_bandwidth=args.bandwidth,
                               provider=provider,
                               planner=args.planner, planner_args=planner_args,
                               on_oom="count", work_dir=work)
        t0 = time.perf_counter()
        losses, rt = train(args, lengths, runtime)
        t_shim = time.perf_counter() - t0
        stats, rows = rt.stats, rt.iterations
        stable = stable_counts(rows)
        stable_policies = sorted({r["policy"] for r in rows if r["stage"] == "Stable"})
        planned_peak = None
        violations = []
        for index in stable_policies:
            if index < 0:
                continue
            record, policy = rt.plans[index]
            peak, found = check_peak(record, policy)
            violations += found
            planned_peak = peak if planned_peak is None else max(planned_peak, peak)

    result = {
        "loss_identical": losses == baseline,
        "steps": args.steps,
        "keys": args.keys,
        "planner": args.planner,
        "budget_bytes": stats["device_budget_bytes"],
        "peak_device_bytes": stats["peak_device_bytes"],
        "planned_peak_bytes": planned_peak,
        "policy_keys": stats["policy_keys"],
        "policy_of_other_input": stats["policy_of_other_input"],
        "stable_peak_device_bytes": stable["peak_device_bytes"] if stable["iterations"] else None,
        "policy_swaps": stats["policy_swaps"],
        "passive_swaps": stats["passive_swaps"],
        "use_while_off_device": stats["use_while_off_device"],
        "ooms": stats["ooms"],
        "policy_drops": stats["policy_drops"],
        "policy_recomputes": stats["policy_recomputes"],
        "recompute_fallbacks_to_swap": stats["recompute_fallbacks_to_swap"],
        "recomputed_random_storages": stats["recomputed_random_storages"],
        "recompute_ms": round(stats["recompute_ms"], 3),
        "stable": stable,
        "planned_policy_violations": len(violations),
        "policies_planned": len(rt.plans),
        "bytes_moved": stats["bytes_moved"],
        "stalls": stats["stalls"],
        "stall_ms": round(stats["stall_ms"], 3),
        "seconds": {"without_shim": round(t_base, 3), "with_shim": round(t_shim, 3)},
        "per_step": [{"step": r["iteration"], "stage": r["stage"], "policy": r["policy"],
                      "sequence_length": lengths[r["iteration"]] if r["iteration"] < len(lengths)
                      else None,
                      "peak_bytes": r["peak_bytes"], "policy_swaps": r["counts"]["policy_swap_outs"],
                      "passive_swaps": r["counts"]["passive_swap_outs"]
                      + r["counts"]["passive_swap_ins"],
                      "use_while_off_device": r["counts"]["uses_while_off_device"],
                      "ooms": r["counts"]["ooms"], "plan_error": r["plan_error"]}
                     for r in rows],
        "losses": losses,
    }
    if args.server:
        provider.close()
        result["service"] = dict(provider.stats, address=args.server)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print("losses identical: %s over %d steps (budget %d bytes, keys %s)"
              % (result["loss_identical"], args.steps, budget, args.keys))
        print("peak %d bytes (stable %s, planned %s); %d policy swaps, %d passive, %d uses while "
              "off device, %d OOMs" % (result["peak_device_bytes"],
                                       result["stable_peak_device_bytes"], planned_peak,
                                       result["policy_swaps"], result["passive_swaps"],
                                       result["use_while_off_device"], result["ooms"]))
        if args.server:
            st = result["service"]
            print("planner service %s: asked %d times, %d policies (%d cached), %d fallbacks, "
                  "%d errors, %.3f s%s" % (args.server, st["asked"], st["policies"],
                                           st["cache_hits"], st["fallbacks"], st["errors"],
                                           st["seconds"], ("; last error: " + st["last_error"])
                                           if st["last_error"] else ""))
        for s in result["per_step"]:
            print("  step %2d  %-9s policy %2d  len %s  peak %d  swaps %d  passive %d  off %d  oom %d"
                  % (s["step"], s["stage"], s["policy"], s["sequence_length"], s["peak_bytes"],
                     s["policy_swaps"], s["passive_swaps"], s["use_while_off_device"], s["ooms"]))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
