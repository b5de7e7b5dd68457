"""Command-line options that several command groups share, defined once.

Numbers are checked against their valid range when the command starts (typer's ``min`` and
``max``, :func:`positive`; every float option is finite: :func:`finite`), choices against
their values (``Literal`` types), so a bad value is a usage error before any work starts.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
import types
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from ctxsent.errors import InputError
from ctxsent.models.precision import PrecisionName
from ctxsent.training.settings import Accelerator, RunSettings

OverwriteOption = Annotated[
    bool,
    typer.Option(
        help="replace OUT even if ctxsent did not write it there; a training run starts "
        "again instead of resuming"
    ),
]

SeedOption = Annotated[int, typer.Option(min=0, help="random seed")]


def finite(value: float | None) -> float | None:
    """Option callback of every float option: refuse NaN and infinity, which compare false
    with every bound (``min``, ``max``) and would turn limits off or fail later."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


def positive(value: float | None) -> float | None:
    """Option callback: refuse a number that is not finite and > 0 (a learning rate, a
    time budget)."""
    if finite(value) is not None and value <= 0:
        raise typer.BadParameter(f"must be > 0, got {value}")
    return value


def devices(text: str) -> int | str:
    """Parse ``--devices``: ``auto``, a count >= 1, ``-1`` (all) or GPU ids such as ``0,1``."""
    if text.isdigit() and int(text) >= 1:
        return int(text)
    if text in ("auto", "-1") or re.fullmatch(r"(\d+,)+\d*", text):
        return text
    raise ValueError("expected auto, a count >= 1, -1 (all) or ids like 0,1")


MODEL_HELP = (
    "a saved model folder, bm25, bi-encoder[:BACKBONE], st:PATH or ce:PATH "
    "(sentence-transformers); see ctxsent.resolver"
)
ModelOption = Annotated[str, typer.Option(help=MODEL_HELP)]

# ``serve`` and ``export`` take ``--model`` or MODEL (the older form): see :func:`one_model`
EitherModelOption = Annotated[str | None, typer.Option(help=MODEL_HELP, show_default=False)]
ModelArgument = Annotated[
    str | None,
    typer.Argument(metavar="MODEL", help="the model, as --model (older form)", show_default=False),
]


def one_model(argument: str | None, option: str | None) -> str:
    """The model given as MODEL or as ``--model``: one of them."""
    if (argument is None) == (option is None):
        raise typer.BadParameter("give the model once: --model MODEL", param_hint="'--model'")
    return argument or option


DataOption = Annotated[
    str, typer.Option(help="NAME:PATH, e.g. wikiqa:DIR, selqa:DIR; or FILE.csv, hf:NAME...")
]

SplitOption = Annotated[
    str | None,
    typer.Option(
        help="split of a folder or dataset, not of a file (default: test; cascade tune: dev)",
        show_default=False,
    ),
]

AlphaOption = Annotated[
    str | None,
    typer.Option(help="cascade drop rate, or one per non-final exit: 0.3 or 0.3,0.3,0.2,0.1"),
]

ColumnsOption = Annotated[
    str | None,
    typer.Option(
        help="your file's column names: question=Query,candidate=Passage,label=Relevant "
        "(fields: question candidate label question_id previous next document_id "
        "document_title)"
    ),
]


def parse_columns(text: str | None) -> dict[str, str] | None:
    """``--columns``' mapping (:func:`ctxsent.tasks.as2_files.parse_columns`)."""
    from ctxsent.tasks.as2_files import parse_columns

    return parse_columns(text) if text else None


def report_dropped(dropped: dict[str, int], hint: str = "") -> None:
    """One stderr line saying how many questions the clean setting left out, and why."""
    if dropped["questions"]:
        typer.echo(
            f"dropped {dropped['questions']} question(s) without both labels "
            f"({dropped['no_positive']} no positive, {dropped['only_positives']} only "
            f"positives){hint}",
            err=True,
        )


InferencePrecisionOption = Annotated[
    PrecisionName,
    typer.Option(
        help="inference precision: auto (bf16 on GPUs and on CPUs with native bf16, else fp32; "
        "scores stay fp32), fp32, bf16, fp16, int8 (cross-encoders on the CPU)"
    ),
]

AcceleratorOption = Annotated[
    Accelerator, typer.Option(help=RunSettings.__dataclass_fields__["accelerator"].metadata["help"])
]

BatchSizeOption = Annotated[int, typer.Option(min=1, help="records per forward pass")]


def cli_terms(err: Exception, text: str, root: Any) -> str:
    """``text`` of ``err`` in a CLI user's terms: a setting that a library error names as a
    Python field (``field 'top_k': ...``, ``pass overwrite=True``) is named as the option of
    that name in ``root``'s commands (``--top-k: ...``, ``pass --overwrite``), and a
    Python spelling in brackets (``pass --overwrite (overwrite=True)``) is left out."""
    flags = option_flags(root)
    field = getattr(err, "field", None)
    flag = flags.get((field or "").replace("-", "_"))
    if flag and isinstance(err, InputError) and err.path is None and err.line is None:
        named = re.search(rf"(?<![\w-]){flag}(?![\w-])", err.problem)
        text = err.problem if named else f"{flag}: {err.problem}"

    def flag_alone(found: re.Match) -> str:  # "--overwrite (overwrite=True)"
        return found[1] if flags.get(found[2]) == found[1] else found[0]

    text = re.sub(r"(--[\w-]+) \((\w+)=True\)", flag_alone, text)
    return re.sub(r"\b(\w+)=True\b", lambda found: flags.get(found[1], found[0]), text)


@functools.cache
def option_flags(root: Any) -> dict[str, str]:
    """Each option's parameter name, and its flag's own name (``dev`` of ``dev_file``), -> its
    long flag, over every (click) command under ``root``; the first command's where two
    differ."""
    flags: dict[str, str] = {}
    for command in getattr(root, "commands", {}).values():
        flags = {**option_flags(command), **flags}
    for param in root.params:
        if param.param_type_name == "option":
            flag = next(o for o in param.opts if o.startswith("--"))
            flags.setdefault(param.name, flag)
            flags.setdefault(flag[2:].replace("-", "_"), flag)
    return flags


_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def config_options(
    config: type, names: str, into: str = "settings", defaults: bool = False
) -> Callable:
    """Decorate a command with an option per field of the dataclass ``config`` in ``names``
    (built from the field's type and its :func:`~ctxsent.training.settings.setting`
    metadata), in the place of its parameter ``into``; the command gets ``into``, a dict of
    the options given. An option not given is left out, so the preset's value stays; with
    ``defaults`` (a config without presets) it is the field's default, shown in ``--help``."""
    hints = typing.get_type_hints(config)
    fields = {f.name: f for f in dataclasses.fields(config)}
    options = [_option(fields[n], hints[n], defaults) for n in names.split()]

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        params = [p.replace(kind=_KEYWORD) for p in signature.parameters.values()]
        at = [p.name for p in params].index(into)

        @functools.wraps(command)
        def run(**values: Any) -> Any:
            given = {o.name: values.pop(o.name) for o in options}
            return command(**values, **{into: {k: v for k, v in given.items() if v is not None}})

        run.__signature__ = signature.replace(parameters=params[:at] + options + params[at + 1 :])
        run.__annotations__ = {p.name: p.annotation for p in run.__signature__.parameters.values()}
        del run.__wrapped__  # typer reads the signature above
        return run

    return decorate


def _option(field: dataclasses.Field, kind: Any, default: bool) -> inspect.Parameter:
    """The typer option of ``field`` (type ``kind``): default ``None`` (not given), or with
    ``default`` the field's."""
    members = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and len(members) == 1:
        kind = members[0]  # X | None -> X
    if typing.get_origin(kind) in (Sequence, tuple, list):
        kind = list[typing.get_args(kind)[0]]
    kind = kind | None
    meta = field.metadata
    extra: dict[str, Any] = {"min": meta.get("min"), "max": meta.get("max")}
    if field.name == "devices":
        kind, extra["parser"] = str | None, devices
    elif kind == float | None:
        extra["callback"] = positive if meta.get("positive") else finite
    option = Annotated[kind, typer.Option(*meta.get("flags", ()), help=meta["help"], **extra)]
    value = field.default if default and field.default != () else None
    return inspect.Parameter(field.name, _KEYWORD, default=value, annotation=option)
