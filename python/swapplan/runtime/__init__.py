"""swapplan.runtime: the swapplan runtime shim for PyTorch (ctypes over
libswapplan_runtime.so). See runtime.py and docs/runtime.md.

    from swapplan.runtime import SwapRuntime
    with SwapRuntime(device_memory="6GiB", model=model, optimizer=opt) as rt:
        ...training steps...
    print(rt.stats)
"""

from ._lib import SwapCopyFailed, SwapOutOfMemory, SwapRuntimeError, library_path
from .provider import SwapplanPlanProvider, find_swapplan_binary
from .runtime import SwapRuntime

__all__ = ["SwapRuntime", "SwapRuntimeError", "SwapOutOfMemory", "SwapCopyFailed",
           "SwapplanPlanProvider", "find_swapplan_binary", "library_path"]
