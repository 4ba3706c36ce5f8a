"""Runs a directory of the Python test suites with unittest discovery:
`run.py [DIR] [PATTERN]`, DIR defaulting to this one (the recorder tests,
meson: `meson test -C build recorder`); meson's runtime_python test passes
python/runtime_tests.

Exit status 77 (meson's "skipped") when PyTorch is not installed, unless
SWAPPLAN_REQUIRE_TORCH=1 (scripts/quickstart.sh test sets it), in which case
a missing PyTorch is a failure.
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    start = HERE
    if argv and os.path.isdir(argv[0]):
        start = os.path.abspath(argv[0])
        argv = argv[1:]
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("the tests in %s need PyTorch (Debian: python3-torch): %s" % (start, e))
        return 1 if os.environ.get("SWAPPLAN_REQUIRE_TORCH") == "1" else 77
    pattern = argv[0] if argv else "test_*.py"
    suite = unittest.defaultTestLoader.discover(start, pattern=pattern,
                                                top_level_dir=os.path.dirname(start))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
