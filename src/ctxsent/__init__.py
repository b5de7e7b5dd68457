"""ctxsent: sentence representations learned from context, and answer sentence selection."""

from ctxsent.resolver import load

__version__ = "0.1.0"
__all__ = ["load", "__version__"]
