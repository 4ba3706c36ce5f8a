"""swapplan.recorder: record a PyTorch training loop into a swapplan trace.

    import swapplan.recorder
    with swapplan.recorder.Recorder("step.json.gz", model=model, optimizer=opt) as rec:
        for x, y in loader:
            ...                 # the unmodified training step
            rec.step()          # ends the iteration

See recorder.py and the README section "Recording PyTorch programs".
"""

from .recorder import Recorder
from .version import __version__

__all__ = ["Recorder", "__version__"]
