"""ctxsent: sentence representations learned from context, and answer sentence selection."""

from importlib.metadata import version

from ctxsent.resolver import load

__version__ = version("ctxsent")  # one place: pyproject.toml
__all__ = ["load", "__version__"]
