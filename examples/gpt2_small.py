"""Records training steps of a small GPT-2-style language model.

Pre-LayerNorm decoder blocks (causal multi-head attention, GELU MLP), learned
position embeddings, LM head tied to the token embedding, AdamW.

    python3 examples/gpt2_small.py --out traces/gpt2_small.json.gz
"""

import math
import sys

import common  # noqa: F401  (import path)
import torch
import torch.nn as nn
import torch.nn.functional as F

import swapplan.recorder


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, context):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(context, context, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, context, context), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_heads, context):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, context)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, context, d_model, n_heads, n_layers):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, context) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


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
    with swapplan.recorder.Recorder(args.out, model=model, optimizer=opt, model_name="gpt2-small",
                                    attributes=attrs, **common.recorder_options(args)) as rec:
        for _ in range(args.steps):
            tokens = torch.randint(0, args.vocab, (args.batch, args.context + 1))
            x, y = tokens[:, :-1], tokens[:, 1:]
            opt.zero_grad(set_to_none=True)
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
            loss.backward()
            opt.step()
            rec.step()
    common.report(rec.summary)
    return rec.summary


if __name__ == "__main__":
    main(sys.argv[1:])
