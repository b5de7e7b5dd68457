"""RNN-CNN / Mean-Max AAE commands: ``ctxsent pretrain-data encoder --preset P --corpus DIR
--out DATA`` (vocabulary and word ids) and ``ctxsent pretrain encoder PRESET --data DATA --out
DIR`` (training).

Mounted by the main app; functions, so they can also sit on any typer app. Settings
come from the preset, then ``--word-vectors``, ``--max-minutes``, ``--max-steps`` and
``--set key=value`` (any field of :class:`~ctxsent.training.encoder_pretrain.PretrainConfig`;
tuples as ``600,1200``, ``none`` for no value).
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import typer

from ctxsent.cli_options import OverwriteOption, positive
from ctxsent.errors import InputError
from ctxsent.training.encoder_presets import PRESETS, PretrainConfig, preset_config


def parse_overrides(assignments: list[str]) -> dict:
    """``["hidden_size=64", "decoder_dims=32,64"]`` -> typed values for :class:`PretrainConfig`."""
    defaults = {f.name: f.default for f in fields(PretrainConfig)}
    floats = {"learning_rate", "max_grad_norm", "max_minutes", "dropout"}
    parsed: dict = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in defaults:
            raise InputError(
                f"expected KEY=VALUE with KEY one of {', '.join(defaults)}, got {assignment!r}",
                field="set",
            )
        try:
            if raw.lower() == "none":
                value = None
            elif isinstance(defaults[key], tuple):
                value = tuple(int(part) for part in raw.split(","))
            elif key in floats:
                value = float(raw)
            elif isinstance(defaults[key], int) or key in {"max_sentences", "max_steps"}:
                value = int(raw)
            else:
                value = raw
        except ValueError:
            raise InputError(f"bad value {raw!r}", field=key) from None
        parsed[key] = value
    return parsed


def pretrain_data_encoder(
    corpus: Path = typer.Option(..., help="Corpus folder from 'ctxsent corpus build'."),
    out: Path = typer.Option(..., help="Output data folder."),
    preset: str = typer.Option(..., help="A preset name (see 'pretrain encoder --list')."),
    set_: list[str] = typer.Option(
        [], "--set", help="Override a setting: KEY=VALUE (vocab_size, max_sentences matter)."
    ),
    num_proc: int = typer.Option(1, min=1, help="Worker processes."),
    overwrite: OverwriteOption = False,
) -> None:
    """Build an encoder data folder: the preset's vocabulary and the corpus's word ids."""
    from ctxsent.io import check_writable
    from ctxsent.objectives.pretrain_data import build_encoder_data

    check_writable(out, folder=True)
    config = preset_config(preset, parse_overrides(set_))
    summary = build_encoder_data(
        corpus, out, config.vocab_size, config.max_sentences, num_proc, preset,
        overwrite=overwrite,
    )  # fmt: skip
    typer.echo(json.dumps(summary, indent=2))


def pretrain_encoder(
    preset: str | None = typer.Argument(
        None, help="A preset name (see --list) e.g. rnn-cnn-small-cpu."
    ),
    data: Path | None = typer.Option(
        None, help="Data folder from 'ctxsent pretrain-data encoder' (same vocabulary settings)."
    ),
    out: Path | None = typer.Option(None, help="Run folder; rerun with it to resume."),
    word_vectors: str | None = typer.Option(
        None, help="GloVe/word2vec file or folder, 'glove-6b-50d', or 'none' (random init)."
    ),
    max_minutes: float | None = typer.Option(
        None, callback=positive, help="Wall-clock budget of the whole run."
    ),
    max_steps: int | None = typer.Option(None, min=1, help="Optimiser steps of the whole run."),
    set_: list[str] = typer.Option([], "--set", help="Override a setting: KEY=VALUE."),
    list_presets: bool = typer.Option(False, "--list", help="Print the presets and exit."),
    overwrite: OverwriteOption = False,
) -> None:
    """Pre-train an RNN-CNN or Mean-Max AAE sentence encoder; saves OUT/encoder."""
    from ctxsent.io import check_writable
    from ctxsent.training.encoder_pretrain import pretrain_encoder as run

    if list_presets:
        for name, overrides in PRESETS.items():
            typer.echo(f"{name}: {json.dumps(overrides)}")
        return
    if preset is None:
        raise InputError("name a preset (see --list)", field="preset")
    if data is None or out is None:
        raise InputError("--data and --out are required", field="data" if data is None else "out")
    check_writable(out, folder=True)
    overrides = parse_overrides(set_)
    for key, value in (
        ("word_vectors", word_vectors),
        ("max_minutes", max_minutes),
        ("max_steps", max_steps),
    ):
        if value is not None:
            overrides[key] = value
    config = preset_config(preset, overrides)
    summary = run(data, out, config, overwrite)
    typer.echo(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=2))
    typer.echo(f"encoder saved to {out / 'encoder'}")
