"""``ctxsent presets``: the registered training presets (:mod:`ctxsent.presets`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer

from ctxsent.presets import FAMILIES, presets


def list_presets(
    family: Annotated[
        str | None,
        typer.Option(help=f"only this family: {', '.join(FAMILIES)}"),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON object a line, with the full config")
    ] = False,
) -> None:
    """List the presets: name, family and description, one a line (tab-separated)."""
    for preset in presets(family):
        if as_json:
            typer.echo(json.dumps(asdict(preset), default=str))
        else:
            typer.echo(f"{preset.name}\t{preset.family}\t{preset.description}")
