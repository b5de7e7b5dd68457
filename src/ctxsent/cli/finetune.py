"""``ctxsent finetune as2`` (cross-encoder, cascade, bi-encoder rankers) and ``ctxsent
finetune cross-thought`` (Cross-Thought's Eq. 10 answer selection and Eq. 11 pairs)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli.options import (
    AcceleratorOption,
    AccumulateOption,
    ColumnsOption,
    DevicesOption,
    NumNodesOption,
    OverwriteOption,
    PrecisionOption,
    SeedOption,
    StrategyOption,
    finite,
    positive,
)
from ctxsent.cli.pretrain import KeepCheckpointsOption, configured, report
from ctxsent.errors import InputError
from ctxsent.training.settings import (
    MIN_INPUT_LENGTH,
    Arch,
    Loss,
)

app = typer.Typer(no_args_is_help=True, help="Fine-tune rankers on labelled data.")


@app.command("as2")
def as2(
    out: Annotated[Path, typer.Option(help="run folder; the best model goes to OUT/model")],
    data: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME:PATH, e.g. wikiqa:DIR, squad-as2:DIR, hf:NAME; repeat it to train on "
            "several sets at once (batches mix their questions; dev: all their dev splits)"
        ),
    ] = None,
    train_file: Annotated[
        str | None,
        typer.Option(
            "--train",
            help="your own data instead of --data: a .tsv/.csv/.jsonl/.parquet file or a "
            "dataset, hf:NAME or hf-disk:PATH (@SPLIT picks a split); needs --dev",
        ),
    ] = None,
    dev_file: Annotated[
        str | None, typer.Option("--dev", help="your dev file (as --train): early stopping")
    ] = None,
    test_file: Annotated[
        str | None, typer.Option("--test", help="your test file, scored by the best model")
    ] = None,
    columns: ColumnsOption = None,
    mine_negatives: Annotated[
        str | None,
        typer.Option(
            help="bm25 | bi-encoder[:BACKBONE]: add each question's hard negatives to your "
            "files, each from its own candidates (for question-answer pairs)"
        ),
    ] = None,
    negatives: Annotated[int, typer.Option(min=1, help="negatives mined per question")] = 5,
    init: Annotated[
        str, typer.Option(help="backbone (HF folder/id) or a ctxsent ranker to continue (TANDA)")
    ] = "all-MiniLM-L6-v2",
    preset: Annotated[
        str | None,
        typer.Option(
            help="an as2 preset ('ctxsent presets --family as2'); default: the --arch's "
            "(as2-ARCH), else the default recipe; the options given replace its values"
        ),
    ] = None,
    fresh_head: Annotated[
        bool,
        typer.Option(
            help="re-draw the --init ranker's scoring head, keep its encoder (a control: how "
            "much a pre-trained head, e.g. SSP's, adds)"
        ),
    ] = False,
    contextual: Annotated[
        bool | None,
        typer.Option("--contextual/--pairwise", help="add previous+next as a 3rd segment"),
    ] = None,
    dev_data: Annotated[
        str | None, typer.Option(help="select on another set's dev split (TANDA: the target)")
    ] = None,
    balance_sources: Annotated[
        bool,
        typer.Option(help="several --data: train on each about equally, not by question count"),
    ] = False,
    arch: Annotated[
        Arch | None,
        typer.Option(
            help="cross-encoder | cascade (Cascade Transformer: an exit classifier per stage) | "
            "bi-encoder (cosine of mean-pooled embeddings; the Eq. 10 recipe: --loss listwise "
            "--lr 5e-5 --questions-per-batch 8 --max-negatives 15 --max-steps 300 "
            "--eval-every 20 --patience 2). Default: bi-encoder (--contextual, --exits or "
            "--layers: a cross-encoder or cascade), or the --init model's kind"
        ),
    ] = None,
    cascade: Annotated[bool, typer.Option(hidden=True, help="replaced by --arch cascade")] = False,
    layers: Annotated[
        int | None,
        typer.Option(
            min=1, help="keep only the first N encoder layers (truncated monolithic model)"
        ),
    ] = None,
    exits: Annotated[
        str | None,
        typer.Option(
            help="--arch cascade exit layers, e.g. 2,3,4,5,6 (default: the paper's 1/3, 1/2, 2/3, "
            "5/6, 1 of the depth); one exit at the last layer is a monolithic model with "
            "the cascade's mean-pooled classifier"
        ),
    ] = None,
    train_split: Annotated[str, typer.Option(help="training split of a --data folder")] = "train",
    dev_split: Annotated[str, typer.Option(help="dev split of a --data folder")] = "dev",
    train_clean: Annotated[
        bool,
        typer.Option(
            help="train on questions with both labels (WikiQA: 857 of 2,118 / 8,651 pairs; the "
            "Cascade paper's Table 1 counts the 873 with a correct answer)"
        ),
    ] = True,
    dev_clean: Annotated[bool, typer.Option(help="select on the clean dev set")] = True,
    dev_questions: Annotated[
        int | None,
        typer.Option(min=1, help="evaluate on the first N dev questions only (large sets)"),
    ] = None,
    epochs: Annotated[int | None, typer.Option(min=1, help="passes over the training data")] = None,
    max_steps: Annotated[int | None, typer.Option(min=1, help="stop after this many steps")] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            min=1, help="global batch in pairs (listwise: whole questions, about this many pairs)"
        ),
    ] = None,
    lr: Annotated[float | None, typer.Option(callback=positive, help="learning rate")] = None,
    head_lr_scale: Annotated[
        float | None,
        typer.Option(
            callback=positive, help="learning-rate multiplier for the new scoring head(s)"
        ),
    ] = None,
    warmup_ratio: Annotated[
        float | None,
        typer.Option(min=0, max=1, callback=finite, help="share of the steps spent warming up"),
    ] = None,
    eval_every: Annotated[
        int | None, typer.Option(min=1, help="steps between dev evaluations")
    ] = None,
    patience: Annotated[
        int | None, typer.Option(min=1, help="evaluations without dev-MAP gain")
    ] = None,
    max_negatives: Annotated[
        int | None,
        typer.Option(min=1, help="negatives kept per question (subsample large sets)"),
    ] = None,
    loss: Annotated[
        Loss | None,
        typer.Option(
            help="pointwise (cross-entropy per pair) | listwise (softmax over each "
            "question's candidates; batches of whole questions); bi-encoder: listwise"
        ),
    ] = None,
    questions_per_batch: Annotated[
        int | None,
        typer.Option(
            min=1, help="listwise: questions per batch (default: about --batch-size pairs)"
        ),
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option(callback=positive, help="bi-encoder: logits are cosine / T (0.05)"),
    ] = None,
    in_batch_negatives: Annotated[
        bool,
        typer.Option(
            help="listwise bi-encoder: the other questions' candidates in a batch are extra "
            "negatives"
        ),
    ] = False,
    hard_negatives: Annotated[
        bool,
        typer.Option(
            help="bi-encoder: keep each question's --max-negatives negatives that the model "
            "scores highest before training, not random ones"
        ),
    ] = False,
    max_length: Annotated[
        int | None,
        typer.Option(min=MIN_INPUT_LENGTH, help="tokens per input, all segments included (256)"),
    ] = None,
    precision: PrecisionOption = "auto",
    accelerator: AcceleratorOption = "auto",
    devices: DevicesOption = "auto",
    strategy: StrategyOption = "auto",
    num_nodes: NumNodesOption = 1,
    accumulate: AccumulateOption = None,
    seed: SeedOption = 42,
    keep_checkpoints: KeepCheckpointsOption = False,
    overwrite: OverwriteOption = False,
) -> None:
    """Fine-tune an AS2 ranker (cross-encoder, cascade, bi-encoder); early stopping on dev
    MAP; resumable.

    Data: --data SPEC, or your own files: --train FILE --dev FILE [--test FILE].
    """
    from ctxsent.training.as2_finetune import As2Data, run_as2

    if cascade:
        if arch not in (None, "cascade"):
            raise InputError("--cascade (now --arch cascade) contradicts --arch", field="arch")
        warnings.warn("--cascade is replaced by --arch cascade", FutureWarning, stacklevel=1)
        arch = "cascade"
    sources = As2Data(
        data or (), train_file, dev_file, test_file, columns, mine_negatives, negatives,
        dev_data, train_split, dev_split, train_clean, dev_clean, dev_questions,
        balance_sources,
    )  # fmt: skip
    model = dict(
        arch=arch, contextual=contextual, max_length=max_length, layers=layers,
        exits=_exit_layers(exits) if exits else None, fresh_head=fresh_head or None,
    )  # fmt: skip
    settings = dict(
        learning_rate=lr, head_lr_scale=head_lr_scale, batch_size=batch_size, epochs=epochs,
        max_steps=max_steps, warmup_ratio=warmup_ratio, eval_every=eval_every,
        patience=patience, max_negatives_per_question=max_negatives, loss=loss,
        questions_per_batch=questions_per_batch, temperature=temperature,
        in_batch_negatives=in_batch_negatives or None, hard_negatives=hard_negatives or None,
        precision=precision, accelerator=accelerator, devices=devices, strategy=strategy,
        num_nodes=num_nodes, accumulate=accumulate, seed=seed,
        keep_checkpoints=keep_checkpoints or None,
    )  # fmt: skip
    given = [{k: v for k, v in d.items() if v is not None} for d in (model, settings)]
    report(run_as2(out, sources, preset, init, *given, overwrite=overwrite), out)


def _exit_layers(text: str) -> tuple[int, ...]:
    """``--exits 2,4,6`` -> ``(2, 4, 6)``."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"expected comma-separated layers, got {text!r}", field="exits") from None


@app.command("cross-thought")
def cross_thought(
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
    max_steps: Annotated[int, typer.Option(min=1, help="optimiser steps")] = 500,
    batch_size: Annotated[
        int | None, typer.Option(min=1, help="default: 8 questions / 32 pairs")
    ] = None,
    lr: Annotated[
        float | None, typer.Option(callback=positive, help="default: 5e-5 (AS2) / 2e-5 (pairs)")
    ] = None,
    negatives: Annotated[int, typer.Option(min=1, help="AS2: sampled negatives per question")] = 15,
    eval_every: Annotated[int, typer.Option(min=1, help="steps between dev evaluations")] = 100,
    seed: SeedOption = 42,
    backbone: Annotated[str, typer.Option(help="with --init backbone: the encoder")] = (
        "all-MiniLM-L6-v2"
    ),
    precision: PrecisionOption = "auto",
    accelerator: AcceleratorOption = "auto",
    devices: DevicesOption = "auto",
    strategy: StrategyOption = "auto",
    num_nodes: NumNodesOption = 1,
    keep_checkpoints: KeepCheckpointsOption = False,
    overwrite: OverwriteOption = False,
) -> None:
    """Fine-tune a pre-trained Cross-Thought: answer selection (Eq. 10) or pairs (Eq. 11);
    resumable."""
    from ctxsent.training.cross_thought_train import finetune_cross_thought

    flags = dict(
        learning_rate=lr, max_steps=max_steps, batch_size=batch_size, negatives=negatives,
        eval_every=eval_every, seed=seed, precision=precision, accelerator=accelerator,
        devices=devices, strategy=strategy, num_nodes=num_nodes,
        keep_checkpoints=keep_checkpoints or None,
    )  # fmt: skip
    preset = "cross-thought-as2" if task == "as2" else "cross-thought-pairs"
    config = configured(preset, "cross-thought-finetune", flags, None)
    report(finetune_cross_thought(task, init, out, data, config, backbone, overwrite), out)
