"""Shared plumbing of the recording examples: command line, seeding, and the
import path so the examples run from a clone without installing anything.

Every example is `python3 examples/<name>.py [--out FILE] [--steps N] ...`
and also importable (`main(argv)` returns the Recorder's summary), which is
how the tests run them with tiny sizes.
"""

import argparse
import os
import sys

_PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "python"))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

import torch  # noqa: E402

import swapplan.recorder  # noqa: E402,F401


def parser(name, description, steps=2):
    p = argparse.ArgumentParser(prog=name, description=description)
    p.add_argument("--out", default=name + ".json.gz",
                   help="trace to write (.json or .json.gz; default: %(default)s)")
    p.add_argument("--steps", type=int, default=steps,
                   help="training iterations to record (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads (default: %(default)s)")
    p.add_argument("--op-durations", action="store_true",
                   help="also record each op's wall duration")
    p.add_argument("--allocator-check", action="store_true",
                   help="compare with the CPU allocator (slow; see README)")
    p.add_argument("--poll-every-op", action="store_true",
                   help="check every live storage before every op (exact, slower)")
    return p


def setup(args):
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)


def recorder_options(args):
    return {"record_op_durations": args.op_durations,
            "allocator_check": args.allocator_check,
            "poll_every_op": args.poll_every_op}


def record_language_model(args, model, opt, model_name, attributes):
    """Records args.steps next-token training steps of `model` on random tokens
    (batch args.batch, args.context tokens, vocabulary args.vocab) into
    args.out; prints and returns the Recorder's summary."""
    import torch.nn.functional as F
    with swapplan.recorder.Recorder(args.out, model=model, optimizer=opt, model_name=model_name,
                                    attributes=attributes, **recorder_options(args)) as rec:
        for _ in range(args.steps):
            tokens = torch.randint(0, args.vocab, (args.batch, args.context + 1))
            x, y = tokens[:, :-1], tokens[:, 1:]
            opt.zero_grad(set_to_none=True)
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
            loss.backward()
            opt.step()
            rec.step()
    report(rec.summary)
    return rec.summary


def report(summary):
    print("%s: %d iterations, %d ops, %d tensors, peak %d bytes during an op" % (
        summary["path"], summary["iterations"], summary["ops"], summary["tensors"],
        summary["peak_bytes"]))
    check = summary.get("allocator_check")
    if check:
        print("allocator check: %d of %d ops differ after the op (max %d bytes at %s); "
              "largest in-kernel temporary %d bytes at %s" % (
                  check["ops_with_after_diff"], check["ops"],
                  check["max_abs_after_diff_bytes"], check["max_abs_after_diff_at"],
                  check["max_in_kernel_hidden_bytes"], check["max_in_kernel_hidden_at"]))
