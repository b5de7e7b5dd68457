"""The ``ctxsent`` command line: one typer app, one module per command group.

=====================  ==================================================================
module                 commands
=====================  ==================================================================
:mod:`.corpus`         ``corpus build``
:mod:`.data`           ``data squad-as2``
:mod:`.pretrain_data`  ``pretrain-data cross-thought | encoder | ssp``
:mod:`.pretrain`       ``pretrain cross-thought | encoder | ssp``
:mod:`.finetune`       ``finetune as2 | cross-thought``
:mod:`.evaluate`       ``eval as2 | senteval | ssp | retrieval``
:mod:`.cascade`        ``cascade tune | sequential``
:mod:`.pipeline`       ``pipeline build``
:mod:`.rank`           ``rank``, ``demo``
:mod:`.serve`          ``serve``
:mod:`.export`         ``export``
:mod:`.push`           ``push``
:mod:`.presets`        ``presets``
=====================  ==================================================================

A command only parses its options and calls library functions a Python user can call too;
shared options are in :mod:`.options`. Heavy libraries (torch, transformers, datasets) are
imported inside the commands so that ``ctxsent --help`` stays instant. Any
:class:`CtxsentError` or :class:`OSError` (a full disk, a folder one may not write) is
printed as one line on stderr with exit code 2; option values outside their range are usage
errors (exit 2).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Annotated

import typer
from typer.core import TyperGroup

from ctxsent import __version__
from ctxsent.cli import (
    cascade,
    corpus,
    data,
    evaluate,
    export,
    finetune,
    pipeline,
    presets,
    pretrain,
    pretrain_data,
    push,
    rank,
    serve,
)
from ctxsent.errors import CtxsentError


def error_line(err: CtxsentError | OSError) -> str:
    """``err`` as one line; an OS error names its path first, as toolkit errors do."""
    text = str(err)
    if isinstance(err, OSError) and err.filename is not None:
        paths = " -> ".join(str(p) for p in (err.filename, err.filename2) if p is not None)
        text = f"{paths}: {err.strerror or err}"
    return " ".join(text.split())


class OneLineErrors(TyperGroup):
    """The top-level group: toolkit and OS errors end as one line on stderr, exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise  # click's main quietly ends a command whose reader left (ctxsent ... | head)
        except (CtxsentError, OSError) as err:
            typer.secho(f"error: {error_line(err)}", err=True, fg="red")
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=OneLineErrors,
    no_args_is_help=True,
    help="Sentence representations learned from context, and answer sentence selection.",
    pretty_exceptions_enable=False,
)
app.add_typer(corpus.app, name="corpus")
app.add_typer(data.app, name="data", help="Build derived datasets (e.g. SQuAD -> AS2).")
app.add_typer(pretrain_data.app, name="pretrain-data")
app.add_typer(pretrain.app, name="pretrain")
app.add_typer(finetune.app, name="finetune")
app.add_typer(evaluate.app, name="eval")
app.add_typer(cascade.app, name="cascade")
app.add_typer(pipeline.app, name="pipeline")
app.command("rank")(rank.rank)
app.command("demo")(rank.demo)
app.command("serve")(serve.serve)
app.command("export")(export.export)
app.command("push")(push.push)
app.command("presets")(presets.list_presets)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ctxsent {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Options of ``ctxsent`` itself (before the command)."""


def main() -> None:
    """Entry point: usage errors print the usage, toolkit errors one line; both exit 2.

    Warnings print as one line each (``warning: ...``), not with the code that raised them.
    When stderr is not a terminal (a log file, CI), Hugging Face libraries draw no progress
    bars ("Loading weights"), here and in the processes this one starts.
    """
    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    app()  # standalone: click prints usage errors itself and exits
