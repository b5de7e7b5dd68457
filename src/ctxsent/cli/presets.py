"""``ctxsent presets``: the registered training presets (:mod:`ctxsent.presets`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer

from ctxsent.presets import FAMILIES, presets, setting_names


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
            listed = asdict(preset)
            listed["config"] = {
                name: listed["config"][name] for name in setting_names(preset.config)
            }
            typer.echo(json.dumps(listed, default=str))
        else:
            typer.echo(f"{preset.name}\t{preset.family}\t{preset.description}")
