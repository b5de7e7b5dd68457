"""The model registry: every model class that declares a kind is in its table."""

from __future__ import annotations

import importlib
import pkgutil

import ctxsent.models
from ctxsent.models.registry import MODEL_CLASSES
from ctxsent.saving import registered_models


def test_every_registered_model_kind_is_in_the_table():
    for module in pkgutil.iter_modules(ctxsent.models.__path__):
        importlib.import_module(f"ctxsent.models.{module.name}")
    assert registered_models() == MODEL_CLASSES
