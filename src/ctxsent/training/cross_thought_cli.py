"""Typer commands for Cross-Thought, to be mounted on the main app:

* ``ctxsent pretrain-data cross-thought``: :func:`pretrain_data_command`
* ``ctxsent pretrain cross-thought``: :func:`pretrain_command`
* ``ctxsent finetune cross-thought``: :func:`finetune_command` (answer selection, SICK-E, MRPC)
* ``ctxsent eval retrieval``: :func:`retrieval_command` (SQuAD paragraph ranking, Recall@k)

Heavy libraries are imported inside the commands. Each prints its result as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli_options import DevicesOption, OverwriteOption, SeedOption, positive
from ctxsent.training.settings import Accelerator, Precision

PRESET_HELP = (
    "cross-thought-{1,3,5}-64, cross-thought-1-512, mlm-1-64, mlm-1-512 (paper scale) "
    "or the same names + '-cpu' (minutes on a laptop)"
)


def pretrain_data_command(
    corpus: Annotated[Path, typer.Option(help="a corpus folder from 'ctxsent corpus build'")],
    out: Annotated[Path, typer.Option(help="output data folder")],
    preset: Annotated[str, typer.Option(help=PRESET_HELP + "; sets the sequence length")],
    backbone: Annotated[str, typer.Option(help="the tokenizer: the backbone to pre-train")] = (
        "all-MiniLM-L6-v2"
    ),
    num_proc: Annotated[int, typer.Option(min=1, help="worker processes")] = 1,
    max_sequences: Annotated[
        int | None, typer.Option(min=1, help="keep only the first N short sequences")
    ] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Cut a corpus into the preset's tokenised short sequences (Arrow, memory-mapped)."""
    from ctxsent.io import check_writable
    from ctxsent.objectives.cross_thought import get_preset
    from ctxsent.objectives.pretrain_data import build_cross_thought_data

    check_writable(out, folder=True)
    get_preset(preset)  # unknown preset: fail before reading the corpus
    summary = build_cross_thought_data(
        corpus, out, preset, backbone, num_proc, max_sequences, overwrite=overwrite
    )
    typer.echo(json.dumps(summary, indent=2))


def pretrain_command(
    preset: Annotated[str, typer.Option(help=PRESET_HELP)],
    data: Annotated[
        Path, typer.Option(help="a data folder from 'ctxsent pretrain-data cross-thought'")
    ],
    out: Annotated[Path, typer.Option(help="run folder (OUT/model, OUT/summary.json); resumable")],
    budget: Annotated[
        float | None,
        typer.Option(
            callback=positive, help="stop after this many minutes (total, across resumes)"
        ),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="override the preset's steps")
    ] = None,
    backbone: Annotated[
        str, typer.Option(help="tokenizer and architecture (BERT-style); the data's tokenizer")
    ] = "all-MiniLM-L6-v2",
    init: Annotated[
        Literal["backbone", "random"] | None,
        typer.Option(help="'backbone' (its weights) or 'random'; default: the preset's choice"),
    ] = None,
    precision: Precision = "auto",
    accelerator: Accelerator = "auto",
    devices: DevicesOption = "auto",
    seed: SeedOption = 0,
    overwrite: OverwriteOption = False,
) -> None:
    """Pre-train a Cross-Thought encoder (or an MLM baseline) on a data folder."""
    from ctxsent.io import check_writable
    from ctxsent.training.cross_thought_train import PretrainConfig, pretrain_cross_thought

    check_writable(out, folder=True)
    config = PretrainConfig(
        preset=preset,
        backbone=backbone,
        from_backbone=None if init is None else init == "backbone",
        max_steps=max_steps,
        budget_minutes=budget,
        precision=precision,
        accelerator=accelerator,
        devices=devices,
        seed=seed,
    )
    config.resolved_preset()  # unknown preset: fail before reading the data
    summary = pretrain_cross_thought(data, out, config, overwrite)
    typer.echo(json.dumps(summary, indent=2))


def finetune_command(
    task: Annotated[Literal["as2", "sick-e", "mrpc"], typer.Option(help="the task")],
    init: Annotated[
        str,
        typer.Option(
            help="a pre-trained cross-thought model folder, or 'backbone': --backbone's "
            "weights with no pre-training (MLM-1 architecture, cosine Eq. 10)"
        ),
    ],
    out: Annotated[Path, typer.Option(help="run folder; AS2 keeps the best ranker in OUT/model")],
    data: Annotated[
        str,
        typer.Option(help="as2: NAME:PATH (e.g. wikiqa:DIR); sick-e/mrpc: the shared data folder"),
    ] = "../shared/data",
    max_steps: Annotated[int, typer.Option(min=1)] = 500,
    batch_size: Annotated[
        int | None, typer.Option(min=1, help="default: 8 questions / 32 pairs")
    ] = None,
    lr: Annotated[
        float | None, typer.Option(callback=positive, help="default: 5e-5 (AS2) / 2e-5 (pairs)")
    ] = None,
    negatives: Annotated[int, typer.Option(min=1, help="AS2: sampled negatives per question")] = 15,
    eval_every: Annotated[int, typer.Option(min=1)] = 100,
    seed: SeedOption = 42,
    backbone: Annotated[str, typer.Option(help="with --init backbone: the encoder")] = (
        "all-MiniLM-L6-v2"
    ),
) -> None:
    """Fine-tune a pre-trained Cross-Thought: answer selection (Eq. 10) or pairs (Eq. 11)."""
    from ctxsent.io import atomic_write, check_writable
    from ctxsent.training.cross_thought_train import FineTuneConfig

    check_writable(out, folder=True)
    as2 = task == "as2"
    config = FineTuneConfig(
        learning_rate=lr or (5e-5 if as2 else 2e-5),
        max_steps=max_steps,
        batch_size=batch_size or (8 if as2 else 32),
        negatives=negatives,
        eval_every=eval_every,
        seed=seed,
    )
    model = model_to_finetune(init, backbone)
    out.mkdir(parents=True, exist_ok=True)
    result = (
        _finetune_as2(model, data, out, config)
        if as2
        else _finetune_pairs(model, task, data, config)
    )
    with atomic_write(out / "metrics.json") as handle:
        json.dump(result, handle, indent=2)
    typer.echo(json.dumps(result, indent=2))


def model_to_finetune(init: str, backbone: str):
    """The model ``--init`` names: a saved Cross-Thought folder, or ``backbone``.

    ``backbone`` is the MLM-1 architecture (one special token, no cross-sequence layers)
    built from the backbone's weights with no pre-training: the special token starts as the
    backbone's ``[CLS]``, so Eq. 10 fine-tunes the backbone as a bi-encoder with a listwise
    softmax over cosine similarities (:data:`~ctxsent.models.cross_thought.COSINE_TEMPERATURE`).
    """
    from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel

    if init == "backbone":
        return CrossThoughtModel.build(CrossThoughtConfig(backbone=backbone, cross_sequence=False))
    return CrossThoughtModel.from_pretrained(init)


def _finetune_as2(model, data: str, out: Path, config) -> dict:
    from ctxsent.evaluation.as2_metrics import as2_metrics
    from ctxsent.models.cross_thought import CrossThoughtRanker
    from ctxsent.tasks.as2_load import load_as2
    from ctxsent.tasks.as2_records import clean
    from ctxsent.training.cross_thought_train import finetune_answer_selection

    summary = finetune_answer_selection(
        model, load_as2(data, "train"), load_as2(data, "dev"), out, config
    )
    test = clean(load_as2(data, "test"))
    scores = CrossThoughtRanker.from_pretrained(out / "model").predict(test)
    summary["test_clean"] = as2_metrics(
        [r.question_id for r in test], [r.label for r in test], scores
    )
    return summary


def _finetune_pairs(model, task: str, data: str, config) -> dict:
    from ctxsent.tasks.senteval import get_task, load_task
    from ctxsent.training.cross_thought_train import finetune_pair_classifier, split_off_dev

    task_data = load_task(get_task(task), data)
    splits = task_data.splits
    train, test = splits["train"], splits["test"]
    if "dev" in splits:
        dev = splits["dev"]
    else:
        train, dev = split_off_dev(train, seed=config.seed)
    classes = len(task_data.task.classes)
    return finetune_pair_classifier(model, train, dev, test, classes, config)


def retrieval_command(
    models: Annotated[
        list[str], typer.Argument(help="bm25, minilm, or cross-thought/MLM model folders")
    ],
    squad: Annotated[Path, typer.Option(help="SQuAD v1.1 JSON (.gz ok)")] = Path(
        "../shared/data/squad/dev-v1.1.json.gz"
    ),
    questions: Annotated[
        int | None, typer.Option(min=1, help="a seeded random subset of the questions")
    ] = None,
    seed: SeedOption = 0,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
) -> None:
    """Unsupervised paragraph ranking (the paper's HotpotQA(u) setting) on SQuAD: Recall@1/5/20."""
    from ctxsent.evaluation.retrieval import (
        evaluate_paragraph_ranking,
        scorer_from_spec,
        squad_paragraph_ranking,
    )

    data = squad_paragraph_ranking(squad, questions, seed)
    results = {
        spec: evaluate_paragraph_ranking(scorer_from_spec(spec, batch_size), data)
        for spec in models
    }
    typer.echo(json.dumps(results, indent=2))
