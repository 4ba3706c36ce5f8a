"""swapplan: plan activation swapping for deep-learning training.

The Python side of swapplan (the planner itself is the `swapplan` command,
installed on PATH next to this package by `pip install .`):

    import swapplan.recorder     # record a PyTorch training loop into a trace
    import swapplan.runtime      # run training under a swap policy (ctypes over
                                 # libswapplan_runtime.so, installed in this package)

    with swapplan.recorder.Recorder("step.json.gz", model=model, optimizer=opt) as rec:
        ...

The submodules import PyTorch; `import swapplan` alone does not.
See docs/building.md (installing), docs/recording.md and docs/runtime.md.
"""

from .version import __version__

__all__ = ["__version__"]
