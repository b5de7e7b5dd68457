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
errors (exit 2). Third-party output known to be harmless (:data:`NOISE`: tips, info lines,
deprecations, ONNX tracing warnings whose parity the export tests check) is hidden while a
command runs, unless ``ctxsent -v``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterator
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
from ctxsent.cli.options import cli_terms
from ctxsent.errors import CtxsentError


def error_line(err: CtxsentError | OSError, root: TyperGroup | None = None) -> str:
    """``err`` as one line; an OS error names its path first, as toolkit errors do; settings
    are named as the options of ``root``'s commands (:func:`~.options.cli_terms`)."""
    text = str(err)
    if isinstance(err, OSError) and err.filename is not None:
        paths = " -> ".join(str(p) for p in (err.filename, err.filename2) if p is not None)
        text = f"{paths}: {err.strerror or err}"
    return " ".join((text if root is None else cli_terms(err, text, root)).split())


#: Third-party log records and warnings a command hides (``-v`` shows them): Lightning's
#: tips and info lines, and warnings whose advice does not apply (a run shorter than the
#: logging interval, a traced branch the ONNX export's parity tests cover).
NOISE = re.compile(
    r"💡 Tip|[GTH]PU available|Using .* Automatic Mixed Precision|Loading `train_dataloader`"
    r"|`Trainer.fit` stopped|`weights_only` was not set|LOCAL_RANK: \d+ - CUDA_VISIBLE"
    r"|You are using a CUDA device .* Tensor Cores|smaller than the logging interval"
    r"|does not have many workers|trace might not generalize|cause the trace to be incorrect"
    r"|exported graph will produce incorrect results|validation will run after every batch"
)
#: The loggers Lightning's info lines come from.
_LIGHTNING_LOGGERS = (
    "lightning.pytorch.utilities.rank_zero",
    "lightning.fabric.utilities.rank_zero",
    "lightning.pytorch.trainer.connectors.checkpoint_connector",
)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Hide :data:`NOISE`, third-party deprecation warnings and Hugging Face's progress bars
    (a "Loading weights" bar per model load) while a command runs."""
    from huggingface_hub import utils as hub

    def wanted(record: logging.LogRecord) -> bool:
        return not NOISE.search(record.getMessage())

    def transformers_bars(show: bool) -> None:
        # transformers reads the hub's setting once, when it is imported
        if "transformers" in sys.modules:
            from transformers.utils import logging as hf_logging

            (hf_logging.enable_progress_bar if show else hf_logging.disable_progress_bar)()

    hub_bars = not hub.are_progress_bars_disabled()
    model_bars = "transformers" not in sys.modules or _transformers_bars_shown()
    loggers = [logging.getLogger(name) for name in _LIGHTNING_LOGGERS]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", f".*(?:{NOISE.pattern})")  # matched from the start
        for category in (DeprecationWarning, FutureWarning):
            warnings.filterwarnings("ignore", category=category, module="(lightning|torch|transf)")
        for logger in loggers:
            logger.addFilter(wanted)
        hub.disable_progress_bars()
        transformers_bars(False)
        try:
            yield
        finally:
            if hub_bars:
                hub.enable_progress_bars()
            transformers_bars(model_bars and hub_bars)
            for logger in loggers:
                logger.removeFilter(wanted)


def _transformers_bars_shown() -> bool:
    from transformers.utils import logging as hf_logging

    return hf_logging.is_progress_bar_enabled()


class OneLineErrors(TyperGroup):
    """The top-level group: toolkit and OS errors end as one line on stderr, exit code 2;
    :func:`quiet` unless ``-v``."""

    def invoke(self, ctx):
        try:
            with contextlib.nullcontext() if ctx.params.get("verbose") else quiet():
                return super().invoke(ctx)
        except BrokenPipeError:
            raise  # click's main quietly ends a command whose reader left (ctxsent ... | head)
        except (CtxsentError, OSError) as err:
            typer.secho(f"error: {error_line(err, self)}", err=True, fg="red")
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
    verbose: Annotated[
        bool,
        typer.Option(
            "-v", "--verbose", help="Show third-party tips, info lines and harmless warnings."
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
