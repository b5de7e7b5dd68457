"""Saved-model folders: writing one (:func:`model_folder`), reading it strictly.

A ctxsent model folder holds ``ctxsent.json`` (``{"kind": ..., "format": 1,
"config": {...}}``), weights in safetensors and the tokenizer. A model class registers
its kind with :func:`register_model`; :func:`ctxsent.models.registry.load_model_folder`
reads the kind and hands the folder to that class. This module imports no model: it
sits below them. Pickled weights (``*.bin``, ``*.pt``) are never loaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import types
import typing
import warnings
from collections.abc import Iterator
from pathlib import Path

from ctxsent import model_card
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.io import MANIFEST, RUN_FILE, atomic_path
from ctxsent.presets import type_name

TOKENIZER_CONFIG = "tokenizer_config.json"
FORMAT_VERSION = 1

_REGISTRY: dict[str, type] = {}


def register_model(kind: str):
    """Class decorator: folders of ``kind`` load with ``cls.from_pretrained``."""

    def decorate(cls):
        _REGISTRY[kind] = cls
        cls.kind = kind
        return cls

    return decorate


def registered_models() -> dict[str, type]:
    """The kinds registered so far (:mod:`ctxsent.models.registry` imports the built-in ones)
    and their classes."""
    return dict(_REGISTRY)


def is_model_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder with a ctxsent manifest (not yet checked for validity)."""
    return (Path(path) / MANIFEST).is_file()


@contextlib.contextmanager
def model_folder(
    path: str | Path, kind: str, config: dict, overwrite: bool = False
) -> Iterator[Path]:
    """Write a model folder: the one way every model saves itself.

    Yields an empty staging folder for the model's weights (safetensors) and tokenizer;
    then the manifest (``kind``, format version, ``config``) and a model card are added,
    and the folder replaces ``path`` atomically (:func:`~ctxsent.io.atomic_path`: an
    existing folder only if it holds this kind of model, or with ``overwrite``). An I/O
    error of safetensors (a full disk) is an :class:`OSError` naming ``path``.
    """
    from safetensors import SafetensorError

    with atomic_path(path, kind, overwrite=overwrite) as staged:
        staged.mkdir()
        try:
            yield staged
        except SafetensorError as err:  # a full disk under safetensors: an OSError as any
            code = re.search(r"Os \{ code: (\d+)", str(err))
            if code is None:
                raise
            raise OSError(int(code[1]), os.strerror(int(code[1])), str(path)) from err
        (staged / MANIFEST).write_text(
            json.dumps({"kind": kind, "format": FORMAT_VERSION, "config": config}, indent=2) + "\n"
        )
        write_model_card(staged)
        run_file = unfinished_run(path)
        if run_file is not None:  # saved by a run under way: it says so, wherever it is copied
            (staged / RUN_STAMP).write_text(json.dumps({"run": str(run_file.absolute())}) + "\n")


def write_model_card(
    folder: str | Path, training: dict | None = None, metrics: dict | None = None
) -> None:
    """Write the model card of the model in ``folder`` (:mod:`ctxsent.model_card`), with
    ``training``, a run's report (``dev`` and ``test`` metrics, data, recipe), and
    ``metrics`` (``{"dev": {...}, "test": {...}}``) when given."""
    manifest = read_manifest(folder)
    kind, config = manifest["kind"], manifest["config"]
    model_class = _REGISTRY.get(kind)  # registered: its module was imported to save or load it
    summary = ((model_class.__doc__ if model_class else None) or "").strip().splitlines()
    model_card.write_model_card(folder, kind, config, (summary or [""])[0], training, metrics)


def read_manifest(folder: str | Path, *kinds: str) -> dict:
    """Read and check ``ctxsent.json`` (of a model of one of ``kinds``, when given); raise
    :class:`ModelFolderError` naming what is wrong."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelFolderError("not a folder", path=folder)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise ModelFolderError(
            f"not a ctxsent model folder (no {MANIFEST}); train one with "
            "'ctxsent finetune' or pass a built-in model name",
            path=folder,
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelFolderError(f"corrupt manifest ({err})", path=manifest_path) from None
    if not isinstance(manifest, dict) or "kind" not in manifest:
        raise ModelFolderError("manifest has no model kind", path=manifest_path, field="kind")
    if not isinstance(manifest.get("config"), dict):
        raise ModelFolderError("manifest has no config object", path=manifest_path, field="config")
    if manifest.get("format") != FORMAT_VERSION:
        raise ModelFolderError(
            f"unsupported format {manifest.get('format')!r} (expected {FORMAT_VERSION})",
            path=manifest_path,
            field="format",
        )
    weights = list(folder.glob("*.safetensors")) or list(folder.glob("*/*.safetensors"))
    if not weights:  # composite models (e.g. the Sequential Ranker) keep them in sub-folders
        raise ModelFolderError("no safetensors weights in the folder", path=folder)
    if kinds and manifest["kind"] not in kinds:
        raise ModelFolderError(f"holds a {manifest['kind']!r}, not a {kinds[0]}", path=folder)
    return manifest


def config_from(config_class: type, manifest: dict, path: str | Path):
    """The ``config_class`` dataclass that the manifest's ``config`` describes.

    Each value is checked against its field's type (lists become tuples where the field
    is a tuple): an unknown key, a value of the wrong type (``"max_length": "huge"``) or
    out of range is a :class:`ModelFolderError` naming the key, never a traceback later.
    """
    where = Path(path) / MANIFEST
    values = manifest["config"]
    hints = typing.get_type_hints(config_class)
    unknown = sorted(set(values) - {item.name for item in dataclasses.fields(config_class)})
    if unknown:
        raise ModelFolderError(f"unknown config fields {unknown}", path=where, field="config")
    for key, value in values.items():
        if not _fits(value, hints[key]):
            raise ModelFolderError(
                f"expected {type_name(hints[key])}, got {value!r}", path=where, field=key
            )
    fixed = {
        k: tuple(v) if isinstance(v, list) and _is_tuple(hints[k]) else v for k, v in values.items()
    }
    try:
        return config_class(**fixed)
    except InputError as err:  # a value out of range (the config's __post_init__)
        raise ModelFolderError(err.problem, path=where, field=err.field) from None
    except TypeError as err:  # a required key is missing
        raise ModelFolderError(
            f"config does not fit {config_class.__name__}: {err}", path=where, field="config"
        ) from None


def _fits(value: object, hint: object) -> bool:
    """Whether a JSON ``value`` has the type ``hint`` (``int``, ``list[int]``, a Literal, ...)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            return False
        if origin is tuple and Ellipsis not in args:
            return len(value) == len(args) and all(map(_fits, value, args))
        return all(_fits(item, args[0]) for item in value)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _is_tuple(hint: object) -> bool:
    return tuple in (typing.get_origin(hint), *map(typing.get_origin, typing.get_args(hint)))


def load_tokenizer(folder: str | Path):
    """The tokenizer saved in ``folder``; :class:`ModelFolderError` naming missing files.

    Without its files ``AutoTokenizer`` can build an empty tokenizer from the model config
    that reads every word as ``[UNK]``: ``tokenizer_config.json`` and one of the tokenizer
    class's vocabulary files (``tokenizer.json``, ``vocab.txt``, ...) must be present.
    """
    from transformers import AutoTokenizer

    folder = Path(folder)
    if not (folder / TOKENIZER_CONFIG).is_file():
        raise ModelFolderError(f"missing tokenizer file {TOKENIZER_CONFIG}", path=folder)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError) as err:
        raise ModelFolderError(f"cannot load the tokenizer: {err}", path=folder) from None
    vocabularies = sorted(set(type(tokenizer).vocab_files_names.values()))
    if not any((folder / name).is_file() for name in vocabularies):
        raise ModelFolderError(
            f"missing tokenizer vocabulary file ({' or '.join(vocabularies)})", path=folder
        )
    return tokenizer


def load_network(model_class, path: str | Path, allow_unexpected: bool = False, **options):
    """``model_class.from_pretrained(path, **options)`` that refuses incomplete weights.

    HF ``from_pretrained`` initialises absent tensors at random with no more than a log
    line; here a missing tensor (or an unexpected one, unless ``allow_unexpected``: a
    backbone read from a checkpoint with pre-training heads) is a :class:`ModelFolderError`
    naming the tensors. Tensors of the wrong shape make HF raise; that is one too.
    """
    from safetensors import SafetensorError

    try:
        model, info = model_class.from_pretrained(path, output_loading_info=True, **options)
    except (OSError, ValueError, RuntimeError, SafetensorError) as err:
        raise ModelFolderError(f"cannot load the weights: {err}", path=path) from None
    check_tensors(path, info["missing_keys"], () if allow_unexpected else info["unexpected_keys"])
    return model


def save_weights(module, file: Path) -> None:
    """Write ``module``'s tensors to the safetensors ``file``."""
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}, file)


def load_weights(module, file: Path) -> None:
    """Load the safetensors ``file`` into ``module``: a missing file, a corrupt one, or a
    tensor missing, unexpected or of the wrong shape is a :class:`ModelFolderError`."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not file.is_file():
        raise ModelFolderError(f"missing {file.name}", path=file.parent)
    try:
        missing, unexpected = module.load_state_dict(load_file(file), strict=False)
    except (OSError, RuntimeError, SafetensorError) as err:
        raise ModelFolderError(f"cannot load the weights ({err})", path=file) from None
    check_tensors(file, missing, unexpected)


def check_tensors(path: str | Path, missing=(), unexpected=()) -> None:
    """A one-line :class:`ModelFolderError` naming the ``missing`` or ``unexpected`` tensors."""
    for kind, names in (("missing", sorted(missing)), ("unexpected", sorted(unexpected))):
        if names:
            shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            raise ModelFolderError(f"{len(names)} {kind} weight tensors: {shown}", path=path)


class UnfinishedRunWarning(UserWarning):
    """A model loaded from a run folder whose run has not finished (killed, or running)."""


#: In a model folder a run saved before it finished (:func:`model_folder`); the run's
#: :func:`ctxsent.training.runs.finish_run` removes it. Holds the run file's path.
RUN_STAMP = "unfinished-run.json"


def unfinished_run(model_folder: str | Path) -> Path | None:
    """The run file of ``model_folder``'s run if that run has not finished, else None: the
    run file next to the folder, or the one its :data:`RUN_STAMP` names (a folder copied out
    of an unfinished run's)."""
    model_folder = Path(model_folder)
    run_file = model_folder.parent / RUN_FILE
    stored = read_run(run_file.parent)
    if stored is not None:
        return run_file if stored.get("status") != "finished" else None
    try:
        return Path(json.loads((model_folder / RUN_STAMP).read_text(encoding="utf-8"))["run"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def warn_if_unfinished(model_folder: str | Path) -> None:
    """Warn (:class:`UnfinishedRunWarning`) when ``model_folder`` is an unfinished run's."""
    run_file = unfinished_run(model_folder)
    if run_file is not None:
        warnings.warn(
            f"{model_folder} comes from a run that has not finished (killed, or still "
            f"running; see {run_file}): it is the best model so far, not the run's result",
            UnfinishedRunWarning,
            stacklevel=3,
        )


def read_run(out: Path) -> dict | None:
    """The run file of run folder ``out`` (``{"status": ..., "settings": ...}``), or None."""
    try:
        stored = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"unreadable run file ({err})", path=out / RUN_FILE) from None
    return stored if isinstance(stored, dict) else None


def check_finite_weights(model, path: str | Path) -> None:
    """A :class:`ModelFolderError` naming the first weight tensors of ``model`` (a torch
    module; others pass) that hold NaN or infinity: such a model scores NaN, which
    evaluation refuses (:mod:`ctxsent.evaluation.as2_metrics`) and a service would send."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return
    bad = [
        name
        for name, tensor in model.state_dict().items()
        if tensor.is_floating_point() and not torch.isfinite(tensor).all()
    ]
    if bad:
        shown = ", ".join(bad[:5]) + (", ..." if len(bad) > 5 else "")
        raise ModelFolderError(
            f"{len(bad)} weight tensors hold NaN or infinity: {shown}", path=path
        )
