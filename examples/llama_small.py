"""Records training steps of a small Llama-style language model.

RMSNorm (pre-norm), rotary position embeddings, grouped-query attention,
SwiGLU MLP, no biases, untied LM head, AdamW.

    python3 examples/llama_small.py --out traces/llama_small.json.gz
"""

import math
import sys

import common  # noqa: F401  (import path)
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables(head_dim, context, theta=10000.0):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(context).float(), inv_freq)  # (context, head_dim/2)
    return torch.cos(angles), torch.sin(angles)


def apply_rotary(x, cos, sin):
    # x: (batch, heads, t, head_dim); rotate interleaved pairs.
    x1, x2 = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return rotated.flatten(-2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        repeat = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        scores = scores + mask
        y = F.softmax(scores.float(), dim=-1).type_as(q) @ v
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, n_heads, n_kv_heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab, context, dim, n_heads, n_kv_heads, n_layers, hidden):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, n_heads, n_kv_heads, hidden)
                                    for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        cos, sin = rotary_tables(dim // n_heads, context)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        mask = torch.full((context, context), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens):
        t = tokens.size(1)
        h = self.tok_embeddings(tokens)
        cos, sin, mask = self.cos[:t], self.sin[:t], self.mask[:t, :t]
        for layer in self.layers:
            h = layer(h, cos, sin, mask)
        return self.output(self.norm(h))


def main(argv=None):
    p = common.parser("llama_small", __doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=352)
    p.add_argument("--batch", type=int, default=4)
    args = p.parse_args(argv)
    common.setup(args)
    model = Llama(args.vocab, args.context, args.dim, args.heads, args.kv_heads, args.layers,
                  args.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    attrs = {"batch": args.batch, "sequence": args.context, "dim": args.dim,
             "heads": args.heads, "kv_heads": args.kv_heads, "vocab": args.vocab}
    return common.record_language_model(args, model, opt, "llama-small", attrs)


if __name__ == "__main__":
    main(sys.argv[1:])
