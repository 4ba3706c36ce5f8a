"""Runs a directory of the Python test suites: `run.py [DIR] [PATTERN]`, DIR
defaulting to this one (the recorder tests, meson: `meson test -C build
recorder`); meson's runtime_python test passes python/runtime_tests.

With pytest installed (the venv's python/requirements.txt, Debian's
python3-pytest) pytest collects the unittest suites as they are; without it
unittest discovery runs them. Either way a directory where nothing is
collected fails (pytest's exit 5), so a broken import cannot pass as "no
tests".

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
    try:
        import pytest
    except ImportError:
        pytest = None
    if pytest is not None:
        # -rs: the reason of every skip; no cache directory in the tree.
        rc = pytest.main([start, "-v", "-rs", "-p", "no:cacheprovider",
                          "-o", "python_files=" + pattern])
        if rc == pytest.ExitCode.NO_TESTS_COLLECTED:
            print("run.py: pytest collected no test in %s" % start)
            return 1
        return int(rc)
    suite = unittest.defaultTestLoader.discover(start, pattern=pattern,
                                                top_level_dir=os.path.dirname(start))
    if suite.countTestCases() == 0:
        print("run.py: no test in %s" % start)
        return 1
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
