"""Fine-tuning AS2 rankers with Lightning (SSP paper, appendix D): cross-encoders,
cascades and bi-encoders (:class:`As2RankerSpec` ``arch``).

Pointwise binary cross-entropy on (question, candidate[, context]) records (or,
as an option, :func:`listwise_loss` over batches of whole questions); AdamW
without weight decay, a triangular schedule (linear warm-up, then linear decay
to zero), gradients clipped at 1.0, dev MAP measured every
``eval_every`` steps with early stopping after ``patience`` evaluations
without improvement (the paper: 5). The best model so far is always saved as
a ctxsent folder ``OUT/model``; ``OUT/checkpoints/last.ckpt`` lets an
interrupted run resume where it stopped, and ``OUT/run.json`` holds the run's
settings, progress, best step and metrics (:class:`ctxsent.training.runs.TrainingRun`).

TANDA (Garg et al. 2020; Cascade paper, section 5.2) is two calls: transfer on
a large AS2 set, then adapt the saved model on the target set.

A bi-encoder's logits are ``cos(q, a) / temperature`` (:func:`bi_encoder_loss`): pointwise,
``sigmoid`` of that is p(correct); listwise is Cross-Thought's Eq. 10 with cosine
similarities, optionally with the batch's other questions' candidates as extra negatives.
With ``distill_from`` any ranker is a teacher: its scores on the sampled training
candidates, computed once, are soft targets mixed into the listwise loss
(:func:`~ctxsent.objectives.as2.distillation_loss`).
The recipes are presets (:mod:`~ctxsent.training.as2_presets`, ``ctxsent presets --family
as2``); :func:`run_as2` is ``ctxsent finetune as2``: a preset, changes to it, data to load.

A run is reproducible from ``seed`` (same weights for the same seed and thread
count) when the ranker is given as an :class:`As2RankerSpec`: it is built after
seeding, so its new heads depend on the seed only.
"""

from __future__ import annotations

import ctypes
import functools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import Callback
from torch.utils.data import DataLoader

from ctxsent.errors import InputError
from ctxsent.evaluation.as2_evaluation import As2Evaluator, score_as2
from ctxsent.models.backbones import DEFAULT_BACKBONE, backbone_depth
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.registry import load_model_folder
from ctxsent.models.transformer_ranker import TransformerRanker
from ctxsent.objectives.as2 import As2Objective
from ctxsent.resolver import load_ranker
from ctxsent.saving import UnfinishedRunWarning
from ctxsent.tasks.as2_records import As2Record, clean, group_by_question
from ctxsent.training.as2_presets import (
    DEFAULT_AS2_PRESET,
    LAST_LAYER,
    As2Data,
    As2RankerSpec,
    As2TrainConfig,
)
from ctxsent.training.engine import Evaluation, OptimizerSettings
from ctxsent.training.runs import TrainingRun, records_digest
from ctxsent.training.sampling import LengthGroupedBatches, QuestionBatches
from ctxsent.training.settings import warn_uneven_accumulation
from ctxsent.training.weight_averaging import copy_state, mix_weights

#: The rankers :func:`finetune_as2` trains.
TrainableRanker = TransformerRanker | BiEncoderRanker


def sample_negatives(
    records: Sequence[As2Record],
    max_negatives: int | None,
    seed: int,
    scores: Sequence[float] | None = None,
) -> list[As2Record]:
    """Keep every positive and at most ``max_negatives`` negatives per question: random
    ones, or with ``scores`` (one per record) the highest-scored (hard negatives).

    Large transfer sets (ASNQ, the SQuAD-derived set: ~220 candidates per
    question, ~1-2% positive) are subsampled this way to fit a CPU budget.
    """
    if max_negatives is None:
        return list(records)
    rng = np.random.default_rng(seed)
    questions: dict[str, list[int]] = {}
    for row, record in enumerate(records):
        questions.setdefault(record.question_id, []).append(row)
    kept = []
    for rows in questions.values():
        negatives = [row for row in rows if not records[row].label]
        if len(negatives) > max_negatives:
            if scores is None:
                picked = rng.choice(len(negatives), max_negatives, replace=False)
            else:
                picked = np.argsort([-scores[row] for row in negatives], kind="stable")
            chosen = set(picked[:max_negatives].tolist())
            negatives = [row for i, row in enumerate(negatives) if i in chosen]
        kept += [records[row] for row in rows if records[row].label]
        kept += [records[row] for row in negatives]
    return kept


class ReleaseFreeHeap(Callback):
    """:func:`release_free_heap` after every training step and evaluation."""

    def on_train_batch_end(self, *args) -> None:
        release_free_heap()

    def on_validation_end(self, *args) -> None:
        release_free_heap()  # before the checkpoint and the best model are written


def release_free_heap() -> None:
    """Give the C heap's free pages back to the operating system (glibc; elsewhere a no-op).

    glibc keeps what a process frees in its heap, resident, and serves allocations above its
    mmap threshold (which grows up to 32 MB) from fresh mappings, not from that free heap. A
    CPU training step allocates and frees its activations, so after a few steps a bi-encoder
    run on WikiQA held 1-1.4 GB of free heap for 0.8 GB of live tensors, and the large
    tensors of a step of long texts came on top of it (3.3 GB peak). ``malloc_trim`` after
    each step and evaluation keeps the resident memory near that of the live tensors; the
    next step faults its pages in again, about 4% more CPU time (system time) in a 30-step
    WikiQA run. Results do not change.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):  # not glibc (musl, macOS, Windows)
        return None


def _loader(ranker: TrainableRanker, records: Sequence[As2Record], batch_sampler) -> DataLoader:
    def collate(indices: list[int]):
        batch = [records[i] for i in indices]
        labels = torch.tensor([float(r.label) for r in batch])
        return ranker.features(batch), labels, torch.tensor(indices)

    # Its own generator: creating a loader iterator draws a seed, which must not shift
    # the global RNG that dropout uses (a resumed run creates iterators at other times).
    return DataLoader(
        range(len(records)),
        batch_sampler=batch_sampler,
        collate_fn=collate,
        generator=torch.Generator(),
    )


def _char_lengths(records: Sequence[As2Record]) -> list[int]:
    """Cheap proxy of token length for grouping: characters of question, candidate, context."""
    return [len(r.question) + len(r.candidate) + len(r.previous) + len(r.next) for r in records]


def _train_batches(
    train: Sequence[As2Record], config: As2TrainConfig
) -> tuple[LengthGroupedBatches | QuestionBatches, torch.Tensor | None]:
    """The batch sampler for ``config.loss``, and each record's question number (listwise).

    Listwise batches hold whole questions, as many as make ``batch_size`` pairs on
    average; questions without a correct candidate carry no listwise signal and are left out.
    With ``accumulate`` k, a batch is a k-th of that (k batches make one optimizer step).
    """
    if config.loss == "pointwise":
        warn_uneven_accumulation(config.batch_size, config.accumulate, "pairs")
        part = config.batch_size // config.accumulate
        return LengthGroupedBatches(_char_lengths(train), part, config.seed), None
    groups: dict[str, list[int]] = {}
    for index, record in enumerate(train):
        groups.setdefault(record.question_id, []).append(index)
    questions = torch.empty(len(train), dtype=torch.long)
    for number, rows in enumerate(groups.values()):
        questions[rows] = number
    answered = [rows for rows in groups.values() if any(train[i].label for i in rows)]
    if not answered:
        raise InputError("listwise training needs a question with a correct candidate")
    per_batch = config.questions_per_batch or max(
        1, round(config.batch_size * len(answered) / sum(map(len, answered)))
    )
    warn_uneven_accumulation(per_batch, config.accumulate, "questions")
    return QuestionBatches(answered, max(1, per_batch // config.accumulate), config.seed), questions


#: Lightning's DDP launchers; each has a ``..._find_unused_parameters_true`` variant.
_DDP_STRATEGIES = ("ddp", "ddp_spawn", "ddp_fork", "ddp_notebook")


def _strategy(config: As2TrainConfig, ranker: TrainableRanker) -> str:
    """``config.strategy``, with DDP told to expect parameters without gradient where a
    training step of ``ranker`` may leave some unused.

    A cascade step trains one sampled exit (Cascade paper, 4.3.1): the other exits'
    classifiers and the layers above the sampled exit get no gradient, which PyTorch DDP
    refuses at the next step unless it searches for unused parameters (an autograd-graph
    walk per step). Running every exit each step instead would cost the full depth. As
    every rank samples the same exit, those parameters are unused on all ranks, keep no
    gradient, and the optimizer skips them as in a one-process run. ``"auto"`` becomes
    DDP where Lightning would start several processes.
    """
    from lightning.pytorch.strategies import DDPStrategy

    if ranker.trains_all_parameters_each_step:
        return config.strategy
    if config.strategy in _DDP_STRATEGIES:
        return f"{config.strategy}_find_unused_parameters_true"
    if config.strategy == "auto":
        probe = L.Trainer(
            accelerator=config.accelerator,
            devices=config.devices,
            num_nodes=config.num_nodes,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        if isinstance(probe.strategy, DDPStrategy):
            return "ddp_find_unused_parameters_true"
    return config.strategy


def optimizer_settings(ranker: TrainableRanker, config: As2TrainConfig) -> OptimizerSettings:
    """AdamW, the triangular schedule over the run's steps, new heads at ``head_lr_scale``."""
    return OptimizerSettings(
        config.learning_rate,
        config.weight_decay,
        warmup_ratio=config.warmup_ratio,
        heads=frozenset(f"model.{name}" for name in ranker.head_parameter_names()),
        head_lr_scale=config.head_lr_scale,
    )


def finetune_as2(
    ranker: TrainableRanker | As2RankerSpec,
    train: Sequence[As2Record],
    dev: Sequence[As2Record],
    out_dir: str | Path,
    config: As2TrainConfig | None = None,
    overwrite: bool = False,
    test: Sequence[As2Record] = (),
) -> dict:
    """Train ``ranker`` on ``train``, choose on ``dev`` MAP, save the best to ``OUT/model``
    and score it on the clean ``test`` records when given.

    ``OUT`` is a run folder (:class:`~ctxsent.training.runs.TrainingRun`): an existing
    ``OUT/model`` is replaced if it holds a model of the same kind (a re-run) or
    ``overwrite`` is given, else refused before training; a rerun resumes only with the
    same settings and data; ``overwrite`` starts it again instead.

    An :class:`As2RankerSpec` is built after seeding with ``config.seed``, so the run is
    reproducible from the seed; a ranker built beforehand keeps the initialisation the
    global RNG gave it then. Resumes from ``OUT/checkpoints/last.ckpt`` when it exists.
    Returns the run's record (``OUT/run.json``): its ``best`` holds the best dev metrics and
    the step they were reached at, its ``metrics`` the test metrics. With ``wise_alpha`` below
    1 the saved model is the best step mixed with the start (WiSE-FT), and ``metrics`` also
    holds its ``dev`` metrics.
    """
    config = config or As2TrainConfig()
    if isinstance(ranker, As2RankerSpec):
        model = asdict(ranker)
    else:
        model = {"kind": ranker.kind, **asdict(ranker.config)}
    data = {"train": records_digest(train), "dev": records_digest(dev)}
    run = TrainingRun(out_dir, config, ranker.kind, model=model, data=data, overwrite=overwrite)
    if config.hard_negatives and ranker.kind != BiEncoderRanker.kind:
        raise InputError(
            f"hard negatives are mined by the model's zero-shot start, which only a "
            f"bi-encoder has; this is a {ranker.kind}",
            field="hard_negatives",
        )
    if config.in_batch_negatives and ranker.kind != BiEncoderRanker.kind:
        raise InputError(
            f"in-batch negatives need a bi-encoder, which scores any question against any "
            f"candidate; this is a {ranker.kind}",
            field="in_batch_negatives",
        )
    teacher = None
    if config.distill_from is not None:  # a name that loads no ranker stops here
        teacher = load_ranker(config.distill_from, accelerator=config.accelerator)
    build = ranker.build if isinstance(ranker, As2RankerSpec) else lambda: ranker
    with run.started(build) as ranker:  # a bad spec (a max_length too long) stops here
        start = None if config.wise_alpha == 1 else copy_state(ranker)
        mined = ranker.predict(train) if config.hard_negatives else None
        train = sample_negatives(train, config.max_negatives_per_question, config.seed, mined)
        train_batches, train_questions = _train_batches(train, config)
        teacher_logits = None
        if teacher is not None:
            scores = teacher.predict(train, batch_size=config.eval_batch_size)
            teacher_logits = (
                torch.as_tensor(scores, dtype=torch.float32) / config.distill_temperature
            )
            del teacher  # its scores are all training needs
        steps_per_epoch = -(-len(train_batches) // config.accumulate)

        def save() -> None:
            ranker.save_pretrained(run.model_dir)

        trained = run.train(
            As2Objective(ranker, config, train_questions, teacher_logits),
            _loader(ranker, train, train_batches),
            optimizer_settings(ranker, config),
            max_epochs=config.epochs,
            max_steps=config.max_steps or -1,
            max_grad_norm=config.max_grad_norm,
            evaluation=Evaluation(
                As2Evaluator(dev, config.eval_batch_size),
                ranker,
                every=min(config.eval_every, steps_per_epoch * config.epochs),
                patience=config.patience,
                on_best=run.keep_best(save),
            ),
            callbacks=[ReleaseFreeHeap()],
            seeded_steps=False,
            strategy=_strategy(config, ranker),
        )
        sizes = {name: _data_size(records) for name, records in (("train", train), ("dev", dev))}
        metrics = {}
        if (test or start) and trained.is_global_zero:
            with warnings.catch_warnings():  # the run's own model, before it finishes
                warnings.simplefilter("ignore", UnfinishedRunWarning)
                best = load_model_folder(run.model_dir)
            if start:
                mix_weights(best, start, config.wise_alpha).save_pretrained(run.model_dir)
                metrics["dev"] = score_as2(best, clean(dev), config.eval_batch_size)
            if test:
                metrics["test"] = score_as2(best, clean(test), config.eval_batch_size)
        return run.finish(trained, metrics, data=sizes)


def as2_recipe(
    preset: str | None = None,
    init: str = DEFAULT_BACKBONE,
    model: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> tuple[As2RankerSpec, As2TrainConfig]:
    """The ranker and the config of a run: the AS2 preset ``preset`` (default: ``as2-ARCH``
    for the ``arch`` in ``model`` or the kind of a saved ``init`` model, else
    :func:`_implied_preset`), then ``model``
    (:class:`As2RankerSpec` fields) and ``settings`` (:class:`As2TrainConfig` fields,
    :meth:`~ctxsent.training.as2_presets.As2TrainConfig.with_changes`) over it."""
    from ctxsent.presets import get_preset
    from ctxsent.saving import is_model_folder, read_manifest

    model, settings = dict(model or {}), dict(settings or {})
    saved = read_manifest(init)["kind"] if is_model_folder(init) else None
    arch = model.get("arch") or saved
    chosen = get_preset(preset or (f"as2-{arch}" if arch else _implied_preset(model)), "as2")
    preset_model = {k: v for k, v in chosen.model.items() if not (saved and k in ("arch", "exits"))}
    if preset_model.get("exits") == LAST_LAYER:  # one exit on the backbone's last layer
        preset_model["exits"] = (model.get("layers") or backbone_depth(init),)
    spec = As2RankerSpec(init, **{**preset_model, **model})
    if spec.kind != BiEncoderRanker.kind:
        for name in ("temperature", "in_batch_negatives"):
            if settings.get(name) not in (None, False):
                option = "--" + name.replace("_", "-")
                raise InputError(f"{option} applies to --arch bi-encoder only", field="arch")
    return spec, chosen.config.with_changes(**settings)


def _implied_preset(model: Mapping[str, Any]) -> str:
    """The preset of a run that names no architecture: the default, unless it asks for what
    only cross-encoders and cascades have (exits, context, a layer count)."""
    if model.get("exits"):
        return "as2-cascade"
    if model.get("contextual"):
        return "as2-contextual"
    return "as2-cross-encoder" if model.get("layers") else DEFAULT_AS2_PRESET


def run_as2(
    out: str | Path,
    data: As2Data,
    preset: str | None = None,
    init: str = DEFAULT_BACKBONE,
    model: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> dict:
    """``ctxsent finetune as2``: the run :func:`as2_recipe` makes, on ``data`` (loaded once
    ``OUT`` is checked), by :func:`finetune_as2`; returns the run's record."""
    from ctxsent.model_card import update_model_card

    spec, config = as2_recipe(preset, init, model, settings)
    TrainingRun.check(out, spec.kind, overwrite)  # before the data loads
    train, dev, test = data.load(config.seed)
    record = finetune_as2(spec, train, dev, out, config, overwrite, test)
    update_model_card(Path(out) / "model", None, data.names)
    return record


def _data_size(records: Sequence[As2Record]) -> str:
    questions = len(group_by_question(records))
    positives = sum(1 for r in records if r.label)
    return f"{questions} questions, {len(records)} pairs, {positives} correct"
