"""Records training steps of a bidirectional LSTM sequence classifier.

Embedding, a two-layer bidirectional nn.LSTM, mean pooling over time and a
linear head; Adam. On a CPU, PyTorch runs nn.LSTM as one aten::lstm op that
decomposes into per-time-step cell ops, so the trace shows the recurrence.

    python3 examples/bilstm.py --out traces/bilstm.json.gz
"""

import sys

import common  # noqa: F401  (import path)
import torch
import torch.nn as nn
import torch.nn.functional as F

import swapplan.recorder


class BiLSTMClassifier(nn.Module):
    def __init__(self, vocab, embed, hidden, layers, classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, bidirectional=True,
                            batch_first=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, tokens):
        out, _ = self.lstm(self.embedding(tokens))
        return self.head(out.mean(dim=1))


def main(argv=None):
    p = common.parser("bilstm", __doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--sequence", type=int, default=24)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--classes", type=int, default=5)
    args = p.parse_args(argv)
    common.setup(args)
    model = BiLSTMClassifier(args.vocab, args.embed, args.hidden, args.layers, args.classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    attrs = {"batch": args.batch, "sequence": args.sequence, "hidden": args.hidden,
             "lstm_layers": args.layers}
    with swapplan.recorder.Recorder(args.out, model=model, optimizer=opt, model_name="bilstm",
                                    model_layers=args.layers, attributes=attrs,
                                    **common.recorder_options(args)) as rec:
        for _ in range(args.steps):
            tokens = torch.randint(0, args.vocab, (args.batch, args.sequence))
            labels = torch.randint(0, args.classes, (args.batch,))
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(tokens), labels)
            loss.backward()
            opt.step()
            rec.step()
    common.report(rec.summary)
    return rec.summary


if __name__ == "__main__":
    main(sys.argv[1:])
