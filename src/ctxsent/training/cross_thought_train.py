"""Cross-Thought pre-training (section 4.2) and fine-tuning (section 3.3).

* :func:`pretrain_cross_thought`: the training engine; AdamW (betas 0.9/0.98, eps 1e-6, weight
  decay 0.01: RoBERTa-base's, which the paper says it follows), linear warm-up then linear
  decay, gradients clipped at 1.0. It reads a data folder from ``ctxsent pretrain-data
  cross-thought`` (:mod:`~ctxsent.objectives.pretrain_data`) memory-mapped: a sample's M
  consecutive sequences are sliced from the Arrow table when its batch comes
  (:class:`~ctxsent.training.sampling.StreamBatches`: a step's batch depends only on the
  seed, and each DDP rank reads its share of it); masks, position offsets and dropout come
  from generators seeded by the step. ``OUT/checkpoints/last.ckpt`` is written every
  ``checkpoint_every`` steps and at the end, and a rerun with the same ``OUT`` resumes from
  it with the batches and masks an uninterrupted run would have used. The model is saved
  to ``OUT/model`` and ``OUT/summary.json`` holds steps, tokens and tokens/s.
* :func:`finetune_answer_selection`: Eq. 10, ``-log alpha[0][m]`` with ``alpha`` the mean of
  the first-layer attention weights of all heads of all cross-sequence Transformers, for
  a question against its positive and sampled negatives (several positives: their losses
  are averaged). Best dev MAP is kept as a ``cross-thought-ranker`` folder.
* :func:`finetune_pair_classifier`: Eq. 11, a linear softmax classifier on the flattened
  cross-sequence outputs ``[C_0; ...; C_{N-1}]`` of the two sentences (SICK-E, MRPC).
  MLM baselines have no cross-sequence Transformers and use the flattened ``E`` instead.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from ctxsent.errors import InputError, check_choice, check_range
from ctxsent.evaluation.as2_evaluation import As2Evaluator
from ctxsent.evaluation.senteval import PairAccuracy, pair_metrics
from ctxsent.evaluation.specs import evaluator_from_spec
from ctxsent.io import atomic_write, check_output
from ctxsent.models.backbones import DEFAULT_BACKBONE
from ctxsent.models.cross_thought import (
    CrossThoughtConfig,
    CrossThoughtModel,
    CrossThoughtRanker,
    PairClassifier,
)
from ctxsent.objectives.cross_thought import (
    AnswerSelectionObjective,
    ConsecutiveSequences,
    CrossThoughtObjective,
    PairClassificationObjective,
    collator_for,
)
from ctxsent.objectives.cross_thought_presets import CrossThoughtPreset
from ctxsent.objectives.pretrain_data import (
    ArrowChunks,
    check_cross_thought_data,
    data_identity,
    load_pretrain_data,
)
from ctxsent.presets import apply_overrides, get_preset
from ctxsent.saving import write_model_card
from ctxsent.tasks.as2_records import As2Record, clean, group_by_question
from ctxsent.tasks.senteval import Pairs
from ctxsent.training.engine import (
    Evaluation,
    OptimizerSettings,
    pretraining_evaluation,
    train_objective,
)
from ctxsent.training.runs import check_run_folder, finish_run, run_folder
from ctxsent.training.sampling import StreamBatches
from ctxsent.training.settings import (
    ACCELERATORS,
    PRECISIONS,
    PretrainSettings,
    RunSettings,
    warn_uneven_accumulation,
)


# ---- pre-training ------------------------------------------------------------------------------
@dataclass
class CrossThoughtPretrainConfig(PretrainSettings):
    """A pre-training run: a preset plus what this machine and budget change."""

    preset: str
    backbone: str = DEFAULT_BACKBONE
    from_backbone: bool | None = None
    """Start the encoder from ``backbone``'s weights; ``None`` keeps the preset's choice."""
    max_steps: int | None = None
    max_minutes: float | None = None
    checkpoint_every: int = 200
    seed: int = 0
    overrides: list[str] | None = None
    """``key=value`` settings of the preset (:func:`~ctxsent.presets.apply_overrides`),
    kept as given so a resumed run compares them; ``None``: the preset as registered."""

    def __post_init__(self) -> None:
        check_range(self, "max_steps checkpoint_every", 1)
        check_range(self, "max_minutes", 0, above=True)
        check_range(self, "seed", 0)
        super().__post_init__()

    def resolved_preset(self) -> CrossThoughtPreset:
        """The preset, then ``max_steps`` and ``from_backbone`` when set, then ``overrides``
        (the order of the CLI: preset, the command's options, ``--set``)."""
        preset = get_preset(self.preset, "cross-thought").config
        if self.max_steps is not None:
            preset = replace(preset, max_steps=self.max_steps)
        if self.from_backbone is not None:
            preset = replace(preset, from_backbone=self.from_backbone)
        return apply_overrides(preset, self.overrides or ())


def pretrain_cross_thought(
    data: str | Path, out: str | Path, config: CrossThoughtPretrainConfig, overwrite: bool = False
) -> dict:
    """Pre-train ``config.preset`` on the data folder ``data`` (``ctxsent pretrain-data
    cross-thought``, built with the run's backbone for a preset of the same sequence length).

    Stops at the preset's ``max_steps`` or after ``max_minutes``, whichever comes first;
    returns (and writes to ``OUT/summary.json``) what was done. A rerun with the same ``OUT``
    resumes only with the same config and data (the budget and steps may change);
    ``overwrite`` starts it again (:mod:`~ctxsent.training.runs`).
    """
    preset = config.resolved_preset()
    data, out = Path(data), Path(out)
    check_run_folder(out, overwrite)
    dataset, data_summary = load_pretrain_data(data, "cross-thought")
    check_output(out / "model", CrossThoughtModel.kind, overwrite)
    L.seed_everything(config.seed, verbose=False)
    model = CrossThoughtModel.build(preset.model_config(config.backbone), seed=config.seed)
    check_cross_thought_data(data_summary, data, preset.sequence_length, model.tokenizer)
    evaluator = config.eval and evaluator_from_spec(config.eval) or None
    with run_folder(
        out,
        {**asdict(config), "data": data_identity(data_summary)},
        state=("checkpoints", "model", "best.json"),
        may_change=("max_minutes", "max_steps"),
        overwrite=overwrite,
    ):
        chunks = ArrowChunks(dataset, preset.sequence_length, model.tokenizer.pad_token_id or 0)
        samples = ConsecutiveSequences(chunks, preset.sequences_per_sample)
        if preset.batch_size < config.accumulate:
            raise InputError(
                f"the batch of {preset.batch_size} cannot be split in {config.accumulate}",
                field="accumulate",
            )
        warn_uneven_accumulation(preset.batch_size, config.accumulate, "samples")
        batches = StreamBatches(
            len(samples),
            preset.batch_size,
            config.seed,
            preset.max_steps,
            accumulate=config.accumulate,
        )
        collator = collator_for(model, preset, config.seed)
        evaluated = CrossThoughtRanker(model) if (config.eval or "").startswith("as2:") else model
        evaluation = pretraining_evaluation(
            config, evaluator, evaluated, out, lambda: model.save_pretrained(out / "model")
        )
        trained = train_objective(
            CrossThoughtObjective(model, collator),
            DataLoader(samples, batch_sampler=batches, collate_fn=collator.stack),
            out,
            config,
            OptimizerSettings(  # RoBERTa's AdamW
                preset.learning_rate,
                weight_decay=0.01,
                betas=(0.9, 0.98),
                eps=1e-6,
                warmup_steps=preset.warmup_steps,
                total_steps=preset.max_steps,
            ),
            seed=config.seed,
            max_steps=preset.max_steps,
            max_minutes=config.max_minutes,
            max_grad_norm=1.0,
            checkpoint_every=config.checkpoint_every,
            evaluation=evaluation,
        )
        summary = {
            "preset": asdict(preset),
            "config": asdict(config),
            "data": str(data),
            "steps": trained.steps,
            "steps_this_run": trained.steps_this_run,
            "tokens_seen": trained.module.tokens_seen,
            "corpus_sequences": data_summary["sequences"],
            "corpus_tokens": data_summary["tokens"],
            "seconds_this_run": round(trained.seconds, 1),
            "last_loss": trained.metrics.get("train_loss", math.nan),
            "best": trained.best or None,
        }
        if trained.is_global_zero:
            if evaluation is None:  # else OUT/model holds the best evaluation's
                model.save_pretrained(out / "model")
            with atomic_write(out / "summary.json") as handle:
                json.dump(summary, handle, indent=2)
            finish_run(out, summary)
        return summary


# ---- fine-tuning ---------------------------------------------------------------------------------
@dataclass
class CrossThoughtFineTuneConfig:
    """Shared fine-tuning settings (section 4.2 values where the paper gives them)."""

    learning_rate: float = 5e-5
    max_steps: int = 500
    warmup_ratio: float = 0.1
    batch_size: int = 8
    """Questions per step (answer selection) or pairs per step (classification)."""
    negatives: int = 15
    """Sampled negatives per question (answer selection)."""
    eval_every: int = 100
    seed: int = 42
    precision: str = "auto"
    accelerator: str = "auto"

    def __post_init__(self) -> None:
        check_range(self, "learning_rate", 0, above=True)
        check_range(self, "max_steps batch_size negatives eval_every", 1)
        check_range(self, "warmup_ratio", 0, 1)
        check_range(self, "seed", 0)
        check_choice(self, "precision", PRECISIONS)
        check_choice(self, "accelerator", ACCELERATORS)


def _optimise(
    objective: nn.Module, config: CrossThoughtFineTuneConfig, out: Path, evaluation: Evaluation
) -> dict:
    """Train ``objective`` (Eq. 10 or Eq. 11) for ``config.max_steps`` steps on the engine
    (:mod:`~ctxsent.training.engine`): AdamW without weight decay, the triangular schedule,
    gradients clipped at 1.0, the run's precision, logs in ``out/logs``; ``evaluation`` every
    ``eval_every`` steps and after the last. Returns the best evaluation. The steps draw
    their batches from the objective's one generator, so several processes would train on
    the same batches: one device, and a rerun starts again (the runs are minutes long)
    rather than resuming."""
    trained = train_objective(
        objective,
        DataLoader(range(config.max_steps), batch_size=None),
        out,
        RunSettings(precision=config.precision, accelerator=config.accelerator, devices=1),
        OptimizerSettings(
            config.learning_rate, warmup_ratio=config.warmup_ratio, total_steps=config.max_steps
        ),
        seed=config.seed,
        max_steps=config.max_steps,
        max_grad_norm=1.0,
        evaluation=evaluation,
        checkpoints=False,
        seeded_steps=False,
    )
    return trained.best


def finetune_answer_selection(
    model: CrossThoughtModel,
    train: Sequence[As2Record],
    dev: Sequence[As2Record],
    out: str | Path,
    config: CrossThoughtFineTuneConfig | None = None,
) -> dict:
    """Fine-tune with Eq. 10, keep the best dev-MAP ranker in ``OUT/model``; returns its metrics."""
    config = config or CrossThoughtFineTuneConfig()
    out = Path(out)
    torch.manual_seed(config.seed)
    groups = [g for g in group_by_question(train).values() if any(r.label for r in g)]
    if not groups:
        raise InputError("no training question has a positive candidate", field="train")
    dev = clean(dev)
    if not dev:
        raise InputError("no dev question has both positive and negative candidates", field="dev")
    ranker = CrossThoughtRanker(model)
    objective = AnswerSelectionObjective(
        model, groups, config.batch_size, config.negatives, config.seed
    )

    def keep_best(metrics: dict, step: int) -> None:
        ranker.save_pretrained(out / "model")

    evaluation = Evaluation(
        As2Evaluator(dev), ranker, config.eval_every, on_best=keep_best, at_start=True
    )
    found = _optimise(objective, config, out, evaluation)
    best = {**found["metrics"], "step": found["step"]}
    summary = {"best_dev": best, "train": asdict(config)}
    with atomic_write(out / "best.json") as handle:
        json.dump(summary, handle, indent=2)
    write_model_card(out / "model", {"step": best["step"], "dev": best, "train": asdict(config)})
    return summary


def finetune_pair_classifier(
    model: CrossThoughtModel,
    train: Pairs,
    dev: Pairs,
    test: Pairs,
    classes: int,
    out: Path,
    config: CrossThoughtFineTuneConfig | None = None,
) -> dict:
    """Train Eq. 11 on ``train``, pick the step with the best dev accuracy, score ``test``;
    the training log goes to ``out/logs``."""
    config = config or CrossThoughtFineTuneConfig(learning_rate=2e-5, batch_size=32)
    torch.manual_seed(config.seed)
    classifier = PairClassifier(model, classes)
    best_state: dict = {}

    def keep_best(metrics: dict, step: int) -> None:
        best_state.update(copy.deepcopy(classifier.state_dict()))

    evaluation = Evaluation(PairAccuracy(dev), classifier, config.eval_every, on_best=keep_best)
    objective = PairClassificationObjective(classifier, train, config.batch_size, config.seed)
    found = _optimise(objective, config, out, evaluation)
    classifier.load_state_dict(best_state)
    test = pair_metrics(test.labels, classifier.predict(test))
    return {"step": found["step"], "dev": found["metrics"], "test": test, "train": asdict(config)}


def finetune_cross_thought(
    task: str,
    init: str,
    out: Path,
    data: str,
    config: CrossThoughtFineTuneConfig,
    backbone: str,
    overwrite: bool = False,
) -> dict:
    """Fine-tune the Cross-Thought model ``init`` names (:func:`model_to_finetune`) on
    ``task``: ``as2`` (Eq. 10; the best ranker goes to ``out/model`` and is scored on the
    clean test split) or ``sick-e`` / ``mrpc`` (Eq. 11); the metrics also go to
    ``out/metrics.json``. ``out`` is a run folder (:mod:`~ctxsent.training.runs`); a rerun
    starts again, and with other settings needs ``overwrite``."""
    check_choice(task, ("as2", "sick-e", "mrpc"), "task")
    out = Path(out)
    check_run_folder(out, overwrite)
    model = model_to_finetune(init, backbone)
    settings = {"task": task, "init": init, "data": data, "backbone": backbone, **asdict(config)}
    with run_folder(out, settings, state=("model", "logs"), overwrite=overwrite):
        result = (
            _finetune_as2(model, data, out, config)
            if task == "as2"
            else _finetune_pairs(model, task, data, out, config)
        )
        with atomic_write(out / "metrics.json") as handle:
            json.dump(result, handle, indent=2)
        finish_run(out, result)
    return result


def model_to_finetune(init: str, backbone: str):
    """The model ``--init`` names: a saved Cross-Thought folder, or ``backbone``.

    ``backbone`` is the MLM-1 architecture (one special token, no cross-sequence layers)
    built from the backbone's weights with no pre-training: the special token starts as the
    backbone's ``[CLS]``, so Eq. 10 fine-tunes the backbone as a bi-encoder with a listwise
    softmax over cosine similarities (:data:`~ctxsent.models.cross_thought.COSINE_TEMPERATURE`).
    """
    if init == "backbone":
        return CrossThoughtModel.build(CrossThoughtConfig(backbone=backbone, cross_sequence=False))
    return CrossThoughtModel.from_pretrained(init)


def _finetune_as2(model, data: str, out: Path, config: CrossThoughtFineTuneConfig) -> dict:
    from ctxsent.evaluation.as2_evaluation import score_as2
    from ctxsent.tasks.as2_load import load_as2

    summary = finetune_answer_selection(
        model, load_as2(data, "train"), load_as2(data, "dev"), out, config
    )
    ranker = CrossThoughtRanker.from_pretrained(out / "model")
    summary["test_clean"] = score_as2(ranker, clean(load_as2(data, "test")))
    return summary


def _finetune_pairs(
    model, task: str, data: str, out: Path, config: CrossThoughtFineTuneConfig
) -> dict:
    from ctxsent.tasks.senteval import get_task, load_task

    task_data = load_task(get_task(task), data)
    splits = task_data.splits
    train, test = splits["train"], splits["test"]
    if "dev" in splits:
        dev = splits["dev"]
    else:
        train, dev = split_off_dev(train, seed=config.seed)
    classes = len(task_data.task.classes)
    return finetune_pair_classifier(model, train, dev, test, classes, out, config)


def split_off_dev(pairs: Pairs, fraction: float = 0.1, seed: int = 0) -> tuple[Pairs, Pairs]:
    """A deterministic random ``fraction`` of ``pairs`` as dev (MRPC ships no dev split)."""
    order = np.random.default_rng(seed).permutation(len(pairs))
    cut = max(1, int(round(fraction * len(pairs))))

    def take(rows: np.ndarray) -> Pairs:
        return Pairs(
            [pairs.first[i] for i in rows], [pairs.second[i] for i in rows], pairs.labels[rows]
        )

    return take(order[cut:]), take(order[:cut])
