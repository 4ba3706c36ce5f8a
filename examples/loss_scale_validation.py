"""Records several iterations of a training loop whose shape changes between
iterations: dynamic loss scaling that skips optimizer.step() on overflow,
gradient accumulation over micro-batches, and a validation pass under
torch.no_grad() at the end of some iterations.

The loss scaler follows torch.cuda.amp.GradScaler's rule (GradScaler itself
is CUDA-only in PyTorch 1.13): the scaled loss is backpropagated; the
gradients are unscaled and checked; on inf/nan the step is skipped and the
scale multiplied by the backoff factor. The initial scale, 2^128, is too
large on purpose (it is not representable in float32, so the scaled loss is
inf): the first iteration overflows and skips its step — the trace then has
an iteration without OPTIMIZER ops — and the scale backs off to 2^16
(GradScaler's default initial scale) for the following iterations.

    python3 examples/loss_scale_validation.py --out traces/loss_scale_validation.json.gz
"""

import sys

import common  # noqa: F401  (import path)
import torch
import torch.nn as nn
import torch.nn.functional as F

import swapplan.recorder


class ConvNet(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.BatchNorm2d(2 * channels),
            nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(2 * channels, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class DynamicLossScaler:
    """GradScaler's update rule, on any device."""

    def __init__(self, init_scale, backoff_factor=0.5, growth_factor=2.0, growth_interval=2000):
        self.scale = init_scale
        self.backoff_factor = backoff_factor
        self.growth_factor = growth_factor
        self.growth_interval = growth_interval
        self._good_steps = 0

    def unscale_(self, params):
        """Unscales the gradients in place; True when they are all finite."""
        grads = [p.grad for p in params if p.grad is not None]
        inv = 1.0 / self.scale
        for g in grads:
            g.mul_(inv)
        return bool(torch.stack([torch.isfinite(g).all() for g in grads]).all())

    def update(self, finite):
        if not finite:
            self.scale *= self.backoff_factor
            self._good_steps = 0
            return
        self._good_steps += 1
        if self._good_steps == self.growth_interval:
            self.scale *= self.growth_factor
            self._good_steps = 0


def main(argv=None):
    p = common.parser("loss_scale_validation", __doc__.splitlines()[0], steps=4)
    p.add_argument("--batch", type=int, default=8, help="micro-batch size")
    p.add_argument("--accumulate", type=int, default=2, help="micro-batches per step")
    p.add_argument("--image", type=int, default=32)
    p.add_argument("--channels", type=int, default=16)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--validate-every", type=int, default=2,
                   help="validation pass after every N-th iteration")
    p.add_argument("--init-scale", type=float, default=2.0 ** 128)
    p.add_argument("--backoff-factor", type=float, default=2.0 ** -112)
    p.add_argument("--growth-factor", type=float, default=2.0)
    p.add_argument("--growth-interval", type=int, default=2000,
                   help="finite steps before the scale grows (GradScaler's rule); with "
                        "--init-scale 2**120 --growth-factor 2**8 --backoff-factor 2**-8 the "
                        "scale overflows and a step is skipped every N+1 iterations")
    args = p.parse_args(argv)
    common.setup(args)
    model = ConvNet(args.channels, args.classes)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = DynamicLossScaler(args.init_scale, backoff_factor=args.backoff_factor,
                               growth_factor=args.growth_factor,
                               growth_interval=args.growth_interval)
    val_images = torch.randn(2 * args.batch, 3, args.image, args.image)
    val_labels = torch.randint(0, args.classes, (2 * args.batch,))
    skipped, validated = [], []
    attrs = {"micro_batch_size": args.batch, "micro_batches": args.accumulate,
             "image": args.image}
    with swapplan.recorder.Recorder(args.out, model=model, optimizer=opt,
                                    model_name="convnet-loss-scale", attributes=attrs,
                                    **common.recorder_options(args)) as rec:
        for step in range(args.steps):
            opt.zero_grad(set_to_none=True)
            for _ in range(args.accumulate):
                images = torch.randn(args.batch, 3, args.image, args.image)
                labels = torch.randint(0, args.classes, (args.batch,))
                loss = F.cross_entropy(model(images), labels) / args.accumulate
                (loss * scaler.scale).backward()
            finite = scaler.unscale_(model.parameters())
            if finite:
                opt.step()
            else:
                skipped.append(step)
            scaler.update(finite)
            if (step + 1) % args.validate_every == 0:
                model.eval()
                with torch.no_grad():
                    val_loss = F.cross_entropy(model(val_images), val_labels)
                model.train()
                validated.append((step, float(val_loss)))
            rec.step()
        rec.attributes["skipped_steps"] = ",".join(map(str, skipped))
        rec.attributes["validated_steps"] = ",".join(str(s) for s, _ in validated)
    common.report(rec.summary)
    print("optimizer.step skipped in iterations %s; validation after iterations %s" % (
        skipped, [s for s, _ in validated]))
    summary = dict(rec.summary)
    summary["skipped_steps"] = skipped
    summary["validated_steps"] = [s for s, _ in validated]
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
