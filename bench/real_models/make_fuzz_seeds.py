"""Writes the torch 2.x seed of the ET importer's fuzz target (import_et_json):
two training steps of a tiny MLP with Adam (the first creates its state),
recorded on the CPU by torch.profiler with an execution trace observer,
gzip-compressed (about 15 KB).

    .venv/bin/python bench/real_models/make_fuzz_seeds.py   # torch 2.13
"""

import gzip
import os
import shutil
import tempfile
import warnings

import torch
from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def main():
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(2, 4)
    tmp = tempfile.mkdtemp()
    et_path, kineto_path = os.path.join(tmp, "et.json"), os.path.join(tmp, "kineto.json")
    et = ExecutionTraceObserver().register_callback(et_path)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True, execution_trace_observer=et,
                 schedule=schedule(wait=0, warmup=0, active=2)) as prof:
        for _ in range(2):
            opt.zero_grad(set_to_none=True)
            model(x).sum().backward()
            opt.step()
            prof.step()
    prof.export_chrome_trace(kineto_path)
    et.unregister_callback()
    tag = "torch%s_cpu" % torch.__version__.split("+")[0].replace(".", "")
    # The Kineto file of so short a run holds no operator events on torch
    # 2.13 (only the last, empty ProfilerStep#): not a seed.
    for src, target in ((et_path, "import_et_json"),):
        out = os.path.join(ROOT, "fuzz", "corpus", target, "%s_%s.json.gz" % (tag, target[7:]))
        with open(src, "rb") as f, gzip.GzipFile(out, "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
        print(out, os.path.getsize(out))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
