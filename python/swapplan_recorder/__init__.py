"""The old name of swapplan.recorder, kept so that existing scripts keep working
(from a checkout, with python/ on sys.path). New code imports swapplan.recorder;
`pip install .` installs only the swapplan package."""

import sys

import swapplan.recorder as _package

sys.modules[__name__] = _package
