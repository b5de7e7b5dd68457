"""ctxsent: sentence representations learned from context, and answer sentence selection."""

from importlib.metadata import version

from ctxsent.mteb_adapter import mteb_encoder
from ctxsent.resolver import load

__version__ = version("ctxsent")  # one place: pyproject.toml
__all__ = ["load", "mteb_encoder", "__version__"]
