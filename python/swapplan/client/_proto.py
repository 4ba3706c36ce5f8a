"""The messages of proto/planner_service.proto (package swapplan.v1).

`protoc --python_out` generates planner_service_pb2.py at build time
(python/meson.build): a wheel installs it next to this file; a source tree
has it in the build directory. Looked up in this order:

  1. swapplan/client/planner_service_pb2.py (installed by `pip install .`);
  2. the directory $SWAPPLAN_PROTO_PYTHON_DIR (the meson tests set it);
  3. <source root>/build/python/ (`ninja -C build` in a checkout).
"""

import importlib
import importlib.util
import os
import sys

_MODULE = "planner_service_pb2"
_QUALIFIED = __name__.rsplit(".", 1)[0] + "." + _MODULE


def _load():
    try:
        return importlib.import_module(_QUALIFIED)
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = []
    env = os.environ.get("SWAPPLAN_PROTO_PYTHON_DIR")
    if env:
        candidates.append(env)
    candidates.append(os.path.normpath(os.path.join(here, "..", "..", "..", "build", "python")))
    for directory in candidates:
        path = os.path.join(directory, _MODULE + ".py")
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location(_QUALIFIED, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[_QUALIFIED] = module
            spec.loader.exec_module(module)
            return module
    raise ImportError(
        "swapplan.client: the generated messages (%s.py) were not found in the package, "
        "in $SWAPPLAN_PROTO_PYTHON_DIR or in %s: build them (`ninja -C build "
        "python/planner_service_pb2.py`) or install the package (`pip install .`)"
        % (_MODULE, candidates[-1]))


pb = _load()
