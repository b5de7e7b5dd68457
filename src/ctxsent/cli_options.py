"""Command-line options that several command groups share, defined once."""

from __future__ import annotations

from typing import Annotated

import typer

OverwriteOption = Annotated[
    bool,
    typer.Option(
        help="Replace the output even if ctxsent did not write it there; a training run "
        "starts again instead of resuming (needed when OUT holds a run with other settings)."
    ),
]
