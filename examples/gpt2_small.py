"""Records training steps of a small GPT-2-style language model.

Pre-LayerNorm decoder blocks (causal multi-head attention, GELU MLP), learned
position embeddings, LM head tied to the token embedding, AdamW.

    python3 examples/gpt2_small.py --out traces/gpt2_small.json.gz
"""

import sys

import common  # noqa: F401  (import path)
import torch

from gpt_model import GPT


def main(argv=None):
    p = common.parser("gpt2_small", __doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=4)
    args = p.parse_args(argv)
    common.setup(args)
    model = GPT(args.vocab, args.context, args.d_model, args.heads, args.layers)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    attrs = {"batch": args.batch, "sequence": args.context, "d_model": args.d_model,
             "heads": args.heads, "vocab": args.vocab}
    return common.record_language_model(args, model, opt, "gpt2-small", attrs)


if __name__ == "__main__":
    main(sys.argv[1:])
