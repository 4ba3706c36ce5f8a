"""The messages of proto/planner_service.proto (package swapplan.v1) and of
the policy schema it imports (proto/policy.proto, package swapplan.proto:
the device model and its memory tiers; policy.proto imports trace.proto).

`protoc --python_out` generates trace_pb2.py, policy_pb2.py and
planner_service_pb2.py at build time (python/meson.build): a wheel installs
them next to this file; a source tree has them in the build directory.
Looked up in this order:

  1. swapplan/client/ (installed by `pip install .`);
  2. the directory $SWAPPLAN_PROTO_PYTHON_DIR (the meson tests set it);
  3. <source root>/build/python/ (`ninja -C build` in a checkout).

The generated modules import each other by their bare names (`import
policy_pb2`, what protoc writes for `import "policy.proto"`): each is loaded
as swapplan.client.<name> while the bare names of the ones before it point
at those modules, and the bare names are put back as they were afterwards,
so a program's own trace_pb2 or policy_pb2 module, if any, is left alone.
"""

import importlib.util
import os
import sys

_PACKAGE = __name__.rsplit(".", 1)[0]
# In import order: each imports the ones before it.
_MODULES = ("trace_pb2", "policy_pb2", "planner_service_pb2")


def _directory():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [here]
    env = os.environ.get("SWAPPLAN_PROTO_PYTHON_DIR")
    if env:
        candidates.append(env)
    candidates.append(os.path.normpath(os.path.join(here, "..", "..", "..", "build", "python")))
    for directory in candidates:
        if all(os.path.exists(os.path.join(directory, m + ".py")) for m in _MODULES):
            return directory
    raise ImportError(
        "swapplan.client: the generated messages (%s) were not found in the package, "
        "in $SWAPPLAN_PROTO_PYTHON_DIR or in %s: build them (`ninja -C build "
        "python/planner_service_pb2.py`) or install the package (`pip install .`)"
        % (", ".join(m + ".py" for m in _MODULES), candidates[-1]))


def _load():
    """(trace_pb2, policy_pb2, planner_service_pb2) as modules."""
    loaded = [sys.modules.get(_PACKAGE + "." + m) for m in _MODULES]
    if all(loaded):
        return loaded
    directory = _directory()
    saved = {m: sys.modules.get(m) for m in _MODULES}
    try:
        for i, name in enumerate(_MODULES):
            qualified = _PACKAGE + "." + name
            module = sys.modules.get(qualified)
            if module is None:
                spec = importlib.util.spec_from_file_location(
                    qualified, os.path.join(directory, name + ".py"))
                module = importlib.util.module_from_spec(spec)
                sys.modules[qualified] = module
                spec.loader.exec_module(module)
            loaded[i] = module
            sys.modules[name] = module  # for the next module's `import <name>`
    finally:
        for name, before in saved.items():
            if before is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = before
    return loaded


trace_pb, policy_pb, pb = _load()
