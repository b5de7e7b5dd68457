"""Write small corpus files for the tests (plain, gzipped, CRLF, other encodings)."""

from __future__ import annotations

import gzip
from pathlib import Path

import typer

from ctxsent.cli.corpus import app


def write(path: Path, text: str, *, encoding: str = "utf-8", newline: str = "\n") -> Path:
    """Write ``text`` with ``newline`` line ends, gzipped when ``path`` ends in .gz."""
    data = text.replace("\n", newline).encode(encoding)
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def corpus_cli() -> typer.Typer:
    """An app with ``corpus`` mounted as in ``ctxsent``, for CliRunner."""
    root = typer.Typer()
    root.add_typer(app, name="corpus")
    return root
