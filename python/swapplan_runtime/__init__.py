"""The old name of swapplan.runtime, kept so that existing scripts keep working
(from a checkout, with python/ on sys.path). New code imports swapplan.runtime;
`pip install .` installs only the swapplan package."""

import sys

import swapplan.runtime as _package

sys.modules[__name__] = _package
