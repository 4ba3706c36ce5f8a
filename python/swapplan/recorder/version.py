from ..version import __version__  # noqa: F401  (one version for the whole package)
