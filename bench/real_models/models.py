"""The real-model corpus: each model built from its library's own code, from a
small configuration with random weights (nothing is downloaded), with the data
and the training step it runs.

    import models
    spec = models.build("gpt2")          # a models.Spec
    for step in range(3):
        loss = spec.train_step(step)     # one unmodified training step, loss as a float

Hugging Face models (GPT-2, Llama, Mixtral) need `transformers`; ResNet-50 and
ViT-B/16 need `torchvision`. Sizes are chosen so that a few steps take seconds
on one CPU core; `build(name, **overrides)` changes them.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HF_MODELS = ("gpt2", "llama", "mixtral")
VISION_MODELS = ("resnet50", "vit_b_16")
ALL_MODELS = HF_MODELS + VISION_MODELS


class Spec:
    """A model, its optimizer and its data: train_step(step) runs one step on
    batch number `step` (the same tensors in every run with the same seed)."""

    def __init__(self, name, model, optimizer, make_batch, loss_fn, config):
        self.name = name
        self.model = model
        self.optimizer = optimizer
        self.make_batch = make_batch
        self.loss_fn = loss_fn
        self.config = config
        self.batches = {}

    def batch(self, step):
        # Made before any recording starts (prepare()), so that data creation
        # is not part of what either recording sees.
        if step not in self.batches:
            g = torch.Generator().manual_seed(1000 + step)
            self.batches[step] = self.make_batch(g)
        return self.batches[step]

    def prepare(self, steps):
        for s in range(steps):
            self.batch(s)

    def train_step(self, step):
        x, y = self.batch(step)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model, x, y)
        loss.backward()
        value = loss.item()
        self.optimizer.step()
        return value

    def parameters(self):
        return sum(p.numel() for p in self.model.parameters())


def _lm_loss(model, x, y):
    logits = model(input_ids=x, use_cache=False).logits
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))


def _lm_spec(name, model, cfg, batch, seq, vocab):
    def make_batch(g):
        tokens = torch.randint(0, vocab, (batch, seq + 1), generator=g)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    return Spec(name, model, opt, make_batch, _lm_loss,
                dict(cfg, batch=batch, sequence=seq, vocab=vocab))


def _hf_common(kw):
    # Eager attention: the math a reader can follow op by op (and the same on
    # every torch build); no dropout, so that two runs compute the same losses.
    return dict(attn_implementation="eager", **kw)


def build(name, seed=0, **over):
    """Builds model `name` (one of ALL_MODELS) with a fixed seed."""
    torch.manual_seed(seed)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        c = dict(n_layer=4, n_embd=256, n_head=4, vocab_size=2048, n_positions=256)
        c.update({k: v for k, v in over.items() if k in c})
        cfg = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                         bos_token_id=0, eos_token_id=0, **_hf_common(c))
        model = GPT2LMHeadModel(cfg)
        return _lm_spec(name, model, c, over.get("batch", 4), over.get("seq", 128),
                        c["vocab_size"])
    if name == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM
        c = dict(num_hidden_layers=4, hidden_size=256, intermediate_size=688,
                 num_attention_heads=8, num_key_value_heads=4, vocab_size=2048,
                 max_position_embeddings=256)
        c.update({k: v for k, v in over.items() if k in c})
        cfg = LlamaConfig(bos_token_id=0, eos_token_id=0, pad_token_id=0, **_hf_common(c))
        model = LlamaForCausalLM(cfg)
        return _lm_spec(name, model, c, over.get("batch", 4), over.get("seq", 128),
                        c["vocab_size"])
    if name == "mixtral":
        from transformers import MixtralConfig, MixtralForCausalLM
        c = dict(num_hidden_layers=2, hidden_size=256, intermediate_size=512,
                 num_attention_heads=8, num_key_value_heads=4, num_local_experts=4,
                 num_experts_per_tok=2, vocab_size=2048, max_position_embeddings=256)
        c.update({k: v for k, v in over.items() if k in c})
        cfg = MixtralConfig(bos_token_id=0, eos_token_id=0, pad_token_id=0,
                            router_aux_loss_coef=0.0, **_hf_common(c))
        model = MixtralForCausalLM(cfg)
        return _lm_spec(name, model, c, over.get("batch", 4), over.get("seq", 128),
                        c["vocab_size"])
    if name in VISION_MODELS:
        import torchvision
        batch = over.get("batch", 4)
        image = over.get("image", 112 if name == "vit_b_16" else 128)
        model = getattr(torchvision.models, name)(weights=None, num_classes=100,
                                                  **({"image_size": image}
                                                     if name == "vit_b_16" else {}))

        def make_batch(g):
            return (torch.randn(batch, 3, image, image, generator=g),
                    torch.randint(0, 100, (batch,), generator=g))

        def loss_fn(m, x, y):
            return F.cross_entropy(m(x), y)
        opt = (torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
               if name == "resnet50" else torch.optim.AdamW(model.parameters(), lr=1e-3))
        return Spec(name, model, opt, make_batch, loss_fn,
                    dict(batch=batch, image=image, classes=100))
    raise ValueError("unknown model %r (known: %s)" % (name, ", ".join(ALL_MODELS)))
