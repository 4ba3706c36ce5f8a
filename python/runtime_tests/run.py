"""Runs the swapplan.runtime tests (meson: `meson test -C build runtime_python`).

Exit status 77 (meson's "skipped") when PyTorch is not installed, unless
SWAPPLAN_REQUIRE_TORCH=1 (scripts/quickstart.sh test sets it).
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("runtime tests need PyTorch (Debian: python3-torch): %s" % e)
        return 1 if os.environ.get("SWAPPLAN_REQUIRE_TORCH") == "1" else 77
    pattern = argv[0] if argv else "test_*.py"
    suite = unittest.defaultTestLoader.discover(HERE, pattern=pattern,
                                                top_level_dir=os.path.dirname(HERE))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
