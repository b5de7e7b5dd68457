"""``ctxsent push``: a model folder to the Hugging Face Hub
(:func:`ctxsent.model_card.push_to_hub`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def push(
    model: Annotated[Path, typer.Argument(help="a saved or exported model folder")],
    repo_id: Annotated[str, typer.Option(help="the Hub repository, OWNER/NAME")],
    private: Annotated[bool, typer.Option(help="create the repository private")] = False,
    token: Annotated[
        str | None, typer.Option(help="Hub token (default: HF_TOKEN or the saved login)")
    ] = None,
) -> None:
    """Upload a model folder with its model card to the Hugging Face Hub."""
    from ctxsent.model_card import push_to_hub

    typer.echo(push_to_hub(model, repo_id, private, token))
