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
  to ``OUT/model``; ``OUT/run.json`` holds the steps, tokens and seconds.
* :func:`finetune_answer_selection`: Eq. 10, ``-log alpha[0][m]`` with ``alpha`` the mean of
  the first-layer attention weights of all heads of all cross-sequence Transformers, for
  a question against its positive and sampled negatives (several positives: their losses
  are averaged). Best dev MAP is kept as a ``cross-thought-ranker`` folder.
* :func:`finetune_pair_classifier`: Eq. 11, a linear softmax classifier on the flattened
  cross-sequence outputs ``[C_0; ...; C_{N-1}]`` of the two sentences (SICK-E, MRPC).
  MLM baselines have no cross-sequence Transformers and use the flattened ``E`` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from ctxsent.errors import InputError
from ctxsent.evaluation.as2_evaluation import As2Evaluator
from ctxsent.evaluation.senteval import PairAccuracy, pair_metrics
from ctxsent.evaluation.specs import evaluator_from_spec
from ctxsent.io import atomic_write
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
from ctxsent.objectives.pretrain_data import (
    ArrowChunks,
    check_cross_thought_data,
    data_identity,
    load_pretrain_data,
)
from ctxsent.presets import get_preset
from ctxsent.tasks.as2_records import As2Record, clean, group_by_question
from ctxsent.tasks.senteval import Pairs
from ctxsent.training.cross_thought_presets import (
    CrossThoughtFineTuneConfig,
    CrossThoughtPretrainConfig,
)
from ctxsent.training.engine import (
    Evaluation,
    OptimizerSettings,
    Trained,
    pretraining_evaluation,
    train_objective,
)
from ctxsent.training.runs import TrainingRun
from ctxsent.training.sampling import stream_loader


# ---- pre-training ------------------------------------------------------------------------------
def pretrain_cross_thought(
    data: str | Path, out: str | Path, config: CrossThoughtPretrainConfig, overwrite: bool = False
) -> dict:
    """Pre-train per ``config`` (a preset's, :mod:`~ctxsent.training.cross_thought_presets`)
    on the data folder ``data`` (``ctxsent pretrain-data cross-thought``, built with the
    run's backbone for a preset of the same sequence length).

    Stops at ``max_steps`` or after ``max_minutes``, whichever comes first;
    returns the run's record (``OUT/run.json``). A rerun with the same ``OUT`` resumes only
    with the same config and data (the budget and steps may change); ``overwrite`` starts it
    again (:class:`~ctxsent.training.runs.TrainingRun`).
    """
    data = Path(data)
    run = TrainingRun(out, config, CrossThoughtModel.kind, overwrite=overwrite)
    dataset, data_summary = load_pretrain_data(data, "cross-thought")
    run.settings["data"] = data_identity(data_summary)
    model = CrossThoughtModel.build(config.model_config(), seed=config.seed)
    check_cross_thought_data(data_summary, data, config.sequence_length, model.tokenizer)
    evaluator = config.eval and evaluator_from_spec(config.eval) or None
    with run.started():  # the model's weights depend on its own seed
        chunks = ArrowChunks(dataset, config.sequence_length, model.tokenizer.pad_token_id or 0)
        samples = ConsecutiveSequences(chunks, config.sequences_per_sample)
        if config.batch_size < config.accumulate:
            raise InputError(
                f"the batch of {config.batch_size} cannot be split in {config.accumulate}",
                field="accumulate",
            )
        collator = collator_for(model, config, config.seed)
        loader = stream_loader(samples, config, config.max_steps, "samples", collator.stack)
        evaluated = CrossThoughtRanker(model) if (config.eval or "").startswith("as2:") else model

        def save() -> None:
            model.save_pretrained(run.model_dir)

        evaluation = pretraining_evaluation(config, evaluator, evaluated, run.keep_best(save))
        trained = run.train(
            CrossThoughtObjective(model, collator),
            loader,
            OptimizerSettings(  # RoBERTa's AdamW
                config.learning_rate,
                weight_decay=0.01,
                betas=(0.9, 0.98),
                eps=1e-6,
                warmup_steps=config.warmup_steps,
                total_steps=config.max_steps,
            ),
            max_steps=config.max_steps,
            max_minutes=config.max_minutes,
            max_grad_norm=1.0,
            checkpoint_every=config.checkpoint_every,
            evaluation=evaluation,
        )
        if trained.is_global_zero and evaluation is None:  # else OUT/model is the best's
            save()
        described = {"folder": str(data), "sequences": data_summary["sequences"]}
        return run.finish(trained, data={**described, "tokens": data_summary["tokens"]})


# ---- fine-tuning ---------------------------------------------------------------------------------
def _optimise(
    objective: nn.Module, config: CrossThoughtFineTuneConfig, out: Path, evaluation: Evaluation
) -> Trained:
    """Train ``objective`` (Eq. 10 or Eq. 11) for ``config.max_steps`` steps on the engine
    (:mod:`~ctxsent.training.engine`): AdamW without weight decay, the triangular schedule,
    gradients clipped at 1.0, the run's placement, logs in ``out/logs``, a checkpoint with
    every evaluation (a rerun resumes from it); ``evaluation`` every ``eval_every`` steps and
    after the last."""
    return train_objective(
        objective,
        DataLoader(range(config.max_steps), batch_size=None),
        out,
        config,
        OptimizerSettings(
            config.learning_rate, warmup_ratio=config.warmup_ratio, total_steps=config.max_steps
        ),
        seed=config.seed,
        max_steps=config.max_steps,
        max_grad_norm=1.0,
        evaluation=evaluation,
    )


def finetune_answer_selection(
    model: CrossThoughtModel,
    train: Sequence[As2Record],
    dev: Sequence[As2Record],
    out: str | Path,
    config: CrossThoughtFineTuneConfig | None = None,
) -> Trained:
    """Fine-tune with Eq. 10, keep the best dev-MAP ranker in ``OUT/model``; returns what
    the engine did (its ``best``: step and dev metrics)."""
    config = config or get_preset("cross-thought-as2").config
    out = Path(out)
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
    return _optimise(objective, config, out, evaluation)


def finetune_pair_classifier(
    model: CrossThoughtModel,
    train: Pairs,
    dev: Pairs,
    test: Pairs,
    classes: int,
    out: Path,
    config: CrossThoughtFineTuneConfig | None = None,
) -> tuple[Trained, dict]:
    """Train Eq. 11 on ``train``, pick the step with the best dev accuracy (its classifier
    kept in ``out/checkpoints`` while the run goes on), score ``test``; returns what the
    engine did and the test metrics."""
    config = config or get_preset("cross-thought-pairs").config
    classifier = PairClassifier(model, classes)
    best_file = Path(out) / "checkpoints" / "best-classifier.pt"

    def keep_best(metrics: dict, step: int) -> None:
        best_file.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(best_file, "wb") as handle:
            torch.save(classifier.state_dict(), handle)

    evaluation = Evaluation(PairAccuracy(dev), classifier, config.eval_every, on_best=keep_best)
    objective = PairClassificationObjective(classifier, train, config.batch_size, config.seed)
    trained = _optimise(objective, config, out, evaluation)
    classifier.load_state_dict(torch.load(best_file, map_location="cpu", weights_only=True))
    return trained, pair_metrics(test.labels, classifier.predict(test))


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
    clean test split) or ``sick-e`` / ``mrpc`` (Eq. 11); returns the run's record
    (``OUT/run.json``, the test metrics in its ``metrics``). ``out`` is a run folder
    (:class:`~ctxsent.training.runs.TrainingRun`): a rerun resumes, and with other settings
    needs ``overwrite``."""
    if task not in ("as2", "sick-e", "mrpc"):
        raise InputError(f"expected as2, sick-e or mrpc, got {task!r}", field="task")
    model_info = {"init": init, "backbone": backbone}
    run = TrainingRun(
        out, config, CrossThoughtRanker.kind, model=model_info, data={"task": task, "data": data},
        overwrite=overwrite,
    )  # fmt: skip
    with run.started(lambda: model_to_finetune(init, backbone)) as model:
        if task == "as2":
            trained, test = _finetune_as2(model, data, run.out, config)
        else:
            trained, test = _finetune_pairs(model, task, data, run.out, config)
        return run.finish(trained, {"test": test}, {"task": task, "data": data})


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


def _finetune_as2(model, data: str, out: Path, config: CrossThoughtFineTuneConfig):
    from ctxsent.evaluation.as2_evaluation import score_as2
    from ctxsent.tasks.as2_load import load_as2

    trained = finetune_answer_selection(
        model, load_as2(data, "train"), load_as2(data, "dev"), out, config
    )
    ranker = CrossThoughtRanker.from_pretrained(out / "model")
    return trained, score_as2(ranker, clean(load_as2(data, "test")))


def _finetune_pairs(model, task: str, data: str, out: Path, config: CrossThoughtFineTuneConfig):
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
