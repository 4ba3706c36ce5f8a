"""Records training steps of torchvision's ResNet-18 (image classification).

The model is torchvision.models.resnet18 as shipped (Debian's
python3-torchvision), untrained, with a 10-class head; SGD with momentum and
weight decay; small images so that a step is quick on a CPU.

    python3 examples/resnet18.py --out traces/resnet18.json.gz
"""

import sys

import common  # noqa: F401  (import path)
import torch
import torch.nn.functional as F
import torchvision

import swapplan.recorder


def main(argv=None):
    p = common.parser("resnet18", __doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--image", type=int, default=64, help="image side in pixels")
    p.add_argument("--classes", type=int, default=10)
    args = p.parse_args(argv)
    common.setup(args)
    model = torchvision.models.resnet18(num_classes=args.classes)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    attrs = {"batch": args.batch, "image": args.image, "classes": args.classes,
             "torchvision": torchvision.__version__}
    with swapplan.recorder.Recorder(args.out, model=model, optimizer=opt, model_name="resnet18",
                                    attributes=attrs, **common.recorder_options(args)) as rec:
        for _ in range(args.steps):
            images = torch.randn(args.batch, 3, args.image, args.image)
            labels = torch.randint(0, args.classes, (args.batch,))
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()
            rec.step()
    common.report(rec.summary)
    return rec.summary


if __name__ == "__main__":
    main(sys.argv[1:])
