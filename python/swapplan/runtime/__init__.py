"""swapplan.runtime: the swapplan runtime shim for PyTorch (ctypes over
libswapplan_runtime.so). See runtime.py and docs/runtime.md.

    from swapplan.runtime import SwapRuntime
    with SwapRuntime(device_memory="6GiB", model=model, optimizer=opt) as rt:
        ...training steps...
    print(rt.stats)

Policies come from `swapplan plan` (SwapplanPlanProvider, the default) or
from the planner service (ServicePlanProvider("127.0.0.1:7070"),
service_provider.py).
"""

from ._lib import SwapCopyFailed, SwapOutOfMemory, SwapRuntimeError, library_path
from .provider import SwapplanPlanProvider, find_swapplan_binary
from .runtime import SwapRuntime
from .service_provider import ServicePlanProvider

__all__ = ["SwapRuntime", "SwapRuntimeError", "SwapOutOfMemory", "SwapCopyFailed",
           "SwapplanPlanProvider", "ServicePlanProvider", "find_swapplan_binary",
           "library_path"]
