"""Cross-Thought pre-training (section 4.2) and fine-tuning (section 3.3).

* :func:`pretrain_cross_thought`: Lightning; Adam (AdamW, betas 0.9/0.98, eps 1e-6, weight
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
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import lightning as L
import numpy as np
import torch
from lightning.fabric.utilities.rank_zero import rank_zero_only
from torch import nn
from torch.utils.data import DataLoader

from ctxsent.errors import InputError, check_choice, check_range
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.io import atomic_write, check_output
from ctxsent.models.backbones import DEFAULT_BACKBONE
from ctxsent.models.cross_thought import (
    CrossThoughtConfig,
    CrossThoughtModel,
    CrossThoughtRanker,
    selection_log_probs,
)
from ctxsent.objectives.cross_thought import (
    ConsecutiveSequences,
    CrossThoughtCollator,
    CrossThoughtObjective,
    collator_for,
)
from ctxsent.objectives.cross_thought_presets import CrossThoughtPreset
from ctxsent.objectives.global_batch import share_of
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
from ctxsent.training.engine import Placement, build_trainer, fit, last_checkpoint
from ctxsent.training.optim import decay_groups, triangular_schedule
from ctxsent.training.runs import finish_run, start_run
from ctxsent.training.sampling import FollowTrainer, StreamBatches
from ctxsent.training.settings import ACCELERATORS, PRECISIONS, STRATEGIES


# ---- pre-training ------------------------------------------------------------------------------
@dataclass
class CrossThoughtPretrainConfig:
    """A pre-training run: a preset plus what this machine and budget change."""

    preset: str
    backbone: str = DEFAULT_BACKBONE
    from_backbone: bool | None = None
    """Start the encoder from ``backbone``'s weights; ``None`` keeps the preset's choice."""
    max_steps: int | None = None
    max_minutes: float | None = None
    checkpoint_every: int = 200
    precision: str = "auto"
    accelerator: str = "auto"
    devices: int | str = "auto"
    strategy: str = "auto"
    num_nodes: int = 1
    seed: int = 0
    overrides: list[str] | None = None
    """``key=value`` settings of the preset (:func:`~ctxsent.presets.apply_overrides`),
    kept as given so a resumed run compares them; ``None``: the preset as registered."""

    def __post_init__(self) -> None:
        check_range(self, "max_steps checkpoint_every num_nodes", 1)
        check_range(self, "max_minutes", 0, above=True)
        check_range(self, "seed", 0)
        check_choice(self, "precision", PRECISIONS)
        check_choice(self, "accelerator", ACCELERATORS)
        check_choice(self, "strategy", STRATEGIES)

    def resolved_preset(self) -> CrossThoughtPreset:
        """The preset, then ``max_steps`` and ``from_backbone`` when set, then ``overrides``
        (the order of the CLI: preset, the command's options, ``--set``)."""
        preset = get_preset(self.preset, "cross-thought").config
        if self.max_steps is not None:
            preset = replace(preset, max_steps=self.max_steps)
        if self.from_backbone is not None:
            preset = replace(preset, from_backbone=self.from_backbone)
        return apply_overrides(preset, self.overrides or ())


class CrossThoughtPretrainModule(L.LightningModule):
    """Minimises Eq. 9 of :class:`CrossThoughtObjective`; counts the real tokens it sees.

    The loader stacks samples (:meth:`CrossThoughtCollator.stack`); the step masks them with
    a generator seeded by ``(seed, step)``, drawing for the step's global batch
    (:mod:`~ctxsent.objectives.global_batch`: DDP ranks mask as one process would), and
    seeds dropout by ``(seed, step, rank)``.
    """

    def __init__(
        self,
        objective: CrossThoughtObjective,
        preset: CrossThoughtPreset,
        collator: CrossThoughtCollator,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.objective, self.preset, self.collator, self.seed = objective, preset, collator, seed
        self.tokens_seen = 0
        self.start_step = 0
        self.last_loss = math.nan

    def on_train_start(self) -> None:
        self.start_step = self.global_step  # after a resume, the restored step

    def training_step(self, batch, batch_idx):
        step_seed = (self.seed * 1_000_003 + self.global_step) * 1_009
        torch.manual_seed(step_seed + self.global_rank)  # dropout: the same after a resume
        generator = torch.Generator(device=self.device).manual_seed(step_seed)
        share = share_of(batch["input_ids"].shape, self.device)
        loss = self.objective(self.collator.mask(batch, generator, share))
        self.tokens_seen += int(batch["attention_mask"].sum())
        self.last_loss = float(loss.detach())
        self.log("train_loss", loss, prog_bar=True, batch_size=len(batch["input_ids"]))
        return loss

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["tokens_seen"] = self.tokens_seen

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self.tokens_seen = checkpoint.get("tokens_seen", 0)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(
            decay_groups(self.objective.named_parameters(), weight_decay=0.01),
            lr=self.preset.learning_rate,
            betas=(0.9, 0.98),
            eps=1e-6,
        )
        schedule = triangular_schedule(optimizer, self.preset.warmup_steps, self.preset.max_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


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
    dataset, data_summary = load_pretrain_data(data, "cross-thought")
    check_output(out / "model", CrossThoughtModel.kind, overwrite)
    L.seed_everything(config.seed, verbose=False)
    model = CrossThoughtModel.build(preset.model_config(config.backbone), seed=config.seed)
    check_cross_thought_data(data_summary, data, preset.sequence_length, model.tokenizer)
    if rank_zero_only.rank == 0:
        start_run(
            out,
            {**asdict(config), "data": data_identity(data_summary)},
            state=("checkpoints", "model"),
            may_change=("max_minutes", "max_steps"),
            overwrite=overwrite,
        )
    chunks = ArrowChunks(dataset, preset.sequence_length, model.tokenizer.pad_token_id or 0)
    samples = ConsecutiveSequences(chunks, preset.sequences_per_sample)
    batches = StreamBatches(len(samples), preset.batch_size, config.seed, preset.max_steps)
    collator = collator_for(model, preset, config.seed)
    loader = DataLoader(samples, batch_sampler=batches, collate_fn=collator.stack)
    module = CrossThoughtPretrainModule(CrossThoughtObjective(model), preset, collator, config.seed)
    trainer = build_trainer(
        out,
        config,
        max_steps=preset.max_steps,
        max_minutes=config.max_minutes,
        gradient_clip_val=1.0,
        checkpoint_every=config.checkpoint_every,
        callbacks=[FollowTrainer(batches)],
    )
    model.train()
    start = time.perf_counter()
    fit(trainer, module, out, loader)
    seconds = time.perf_counter() - start
    trainer.save_checkpoint(last_checkpoint(out))
    summary = {
        "preset": asdict(preset),
        "config": asdict(config),
        "data": str(data),
        "steps": trainer.global_step,
        "steps_this_run": trainer.global_step - module.start_step,
        "tokens_seen": module.tokens_seen,
        "corpus_sequences": data_summary["sequences"],
        "corpus_tokens": data_summary["tokens"],
        "seconds_this_run": round(seconds, 1),
        "last_loss": module.last_loss,
    }
    if trainer.is_global_zero:
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


#: Texts per forward chunk when a step embeds a question batch's texts (memory bound; the
#: loss is the same as one padded batch).
EMBED_CHUNK = 32


class _StepLossModule(L.LightningModule):
    """Cross-Thought fine-tuning on the one trainer: step ``k``'s loss is ``step_loss(k, rng)``
    (the step draws its own questions or pairs from ``rng``), AdamW without weight decay and
    the triangular schedule; ``evaluate(step)`` (the dev score, logged as ``dev``) runs every
    ``eval_every`` steps and after the last."""

    def __init__(
        self,
        network: nn.Module,
        config: CrossThoughtFineTuneConfig,
        step_loss: Callable[[int, np.random.Generator], torch.Tensor],
        evaluate: Callable[[int], float],
    ) -> None:
        super().__init__()
        self.network, self.config = network, config
        self.step_loss, self.evaluate = step_loss, evaluate
        self.rng = np.random.default_rng(config.seed)

    def training_step(self, step, batch_idx):
        loss = self.step_loss(int(step), self.rng)
        self.log("train_loss", loss, prog_bar=True, batch_size=1)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx) -> None:
        step = self.global_step
        if step % self.config.eval_every == 0 or step == self.config.max_steps:
            self.log("dev", self.evaluate(step), prog_bar=True)

    def configure_optimizers(self):
        config = self.config
        optimizer = torch.optim.AdamW(
            self.network.parameters(), lr=config.learning_rate, weight_decay=0.0
        )
        warmup = int(config.warmup_ratio * config.max_steps)
        schedule = triangular_schedule(optimizer, warmup, config.max_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


def _optimise(
    network: nn.Module,
    config: CrossThoughtFineTuneConfig,
    out: Path,
    step_loss: Callable[[int, np.random.Generator], torch.Tensor],
    evaluate: Callable[[int], float],
) -> None:
    """Train ``network`` for ``config.max_steps`` steps (:class:`_StepLossModule`) on one
    device of the one trainer (:mod:`~ctxsent.training.engine`): the run's precision,
    gradients clipped at 1.0, logs in ``out/logs``. The step draws its batch from one
    generator, so several processes would train on the same batches: one device, and a
    rerun starts again (the runs are minutes long) rather than resuming."""
    placement = Placement(config.precision, config.accelerator)
    trainer = build_trainer(
        out, placement, max_steps=config.max_steps, gradient_clip_val=1.0, checkpoints=False
    )
    steps = DataLoader(range(1, config.max_steps + 1), batch_size=None)
    trainer.fit(_StepLossModule(network, config, step_loss, evaluate), steps)


def answer_selection_loss(
    model: CrossThoughtModel, question: torch.Tensor, candidates: torch.Tensor, positives: list[int]
) -> torch.Tensor:
    """Eq. 10 for one question: mean over its positives of ``-log alpha[0][m]``."""
    log_alpha = selection_log_probs(model, question[None], candidates)[0]
    return -log_alpha[positives].mean()


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
    best: dict = {"map": -math.inf}

    def step_loss(step: int, rng: np.random.Generator) -> torch.Tensor:
        model.train()
        chosen = rng.choice(len(groups), min(config.batch_size, len(groups)), replace=False)
        questions, candidate_lists = [], []
        for index in chosen:
            group = groups[index]
            positives = [r.candidate for r in group if r.label]
            negatives = [r.candidate for r in group if not r.label]
            if len(negatives) > config.negatives:
                negatives = [
                    negatives[i]
                    for i in rng.choice(len(negatives), config.negatives, replace=False)
                ]
            questions.append(group[0].question)
            candidate_lists.append((positives, negatives))
        texts = list(dict.fromkeys(questions + [c for p, n in candidate_lists for c in p + n]))
        row = {text: i for i, text in enumerate(texts)}
        embeddings = model.embed(texts, batch_size=EMBED_CHUNK)
        losses = []
        for question, (positives, negatives) in zip(questions, candidate_lists, strict=True):
            candidates = embeddings[[row[c] for c in positives + negatives]]
            losses.append(
                answer_selection_loss(
                    model, embeddings[row[question]], candidates, list(range(len(positives)))
                )
            )
        return torch.stack(losses).mean()

    def evaluate(step: int) -> float:
        ranker.clear_cache()
        scores = ranker.predict(dev)
        metrics = as2_metrics([r.question_id for r in dev], [r.label for r in dev], scores)
        if metrics["map"] > best["map"]:
            best.update(metrics, step=step)
            ranker.save_pretrained(out / "model")
        return metrics["map"]

    evaluate(0)
    _optimise(model, config, out, step_loss, evaluate)
    ranker.clear_cache()
    summary = {"best_dev": best, "train": asdict(config)}
    with atomic_write(out / "best.json") as handle:
        json.dump(summary, handle, indent=2)
    write_model_card(out / "model", {"step": best["step"], "dev": best, "train": asdict(config)})
    return summary


class PairClassifier(nn.Module):
    """Eq. 11: ``softmax(W^c flatten([C_0; ...; C_{N-1}]))`` for a pair ``(X_0, X_1)``."""

    def __init__(self, model: CrossThoughtModel, classes: int) -> None:
        super().__init__()
        self.model = model
        self.classifier = nn.Linear(2 * model.embedding_dim, classes)

    def forward(self, first: list[str], second: list[str]) -> torch.Tensor:
        embeddings = torch.stack([self.model.embed(first), self.model.embed(second)], dim=1)
        if self.model.config.cross_sequence:
            embeddings, _ = self.model.cross_sequence(embeddings)  # (B, 2, N, d): C
        return self.classifier(embeddings.flatten(1))

    @torch.inference_mode()
    def predict(self, pairs: Pairs, batch_size: int = 64) -> np.ndarray:
        was_training = self.training
        self.eval()
        try:
            logits = [
                self(pairs.first[i : i + batch_size], pairs.second[i : i + batch_size])
                for i in range(0, len(pairs), batch_size)
            ]
        finally:
            self.train(was_training)
        return torch.cat(logits).argmax(dim=-1).numpy()


def pair_metrics(labels: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Accuracy (%) and, for two classes, F1 (%) of the positive class, as in SentEval."""
    metrics = {"acc": 100.0 * float(np.mean(labels == predicted))}
    if len(np.unique(labels)) == 2:
        tp = int(np.sum((predicted == 1) & (labels == 1)))
        denominator = int(np.sum(predicted == 1) + np.sum(labels == 1))
        metrics["f1"] = 100.0 * 2 * tp / denominator if denominator else 0.0
    return metrics


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
    labels = torch.as_tensor(train.labels, dtype=torch.long)
    best: dict = {"dev": {"acc": -math.inf}}
    best_state: dict = {}

    def step_loss(step: int, rng: np.random.Generator) -> torch.Tensor:
        classifier.train()
        rows = rng.choice(len(train), min(config.batch_size, len(train)), replace=False)
        logits = classifier([train.first[i] for i in rows], [train.second[i] for i in rows])
        return nn.functional.cross_entropy(logits, labels[rows])

    def evaluate(step: int) -> float:
        dev_metrics = pair_metrics(dev.labels, classifier.predict(dev))
        if dev_metrics["acc"] > best["dev"]["acc"]:
            best.update(step=step, dev=dev_metrics)
            best_state.update(copy.deepcopy(classifier.state_dict()))
        return dev_metrics["acc"]

    _optimise(classifier, config, out, step_loss, evaluate)
    classifier.load_state_dict(best_state)
    best["test"] = pair_metrics(test.labels, classifier.predict(test))
    return {**best, "train": asdict(config)}


def finetune_cross_thought(
    task: str, init: str, out: Path, data: str, config: CrossThoughtFineTuneConfig, backbone: str
) -> dict:
    """Fine-tune the Cross-Thought model ``init`` names (:func:`model_to_finetune`) on
    ``task``: ``as2`` (Eq. 10; the best ranker goes to ``out/model`` and is scored on the
    clean test split) or ``sick-e`` / ``mrpc`` (Eq. 11); the metrics also go to
    ``out/metrics.json``."""
    check_choice(task, ("as2", "sick-e", "mrpc"), "task")
    model = model_to_finetune(init, backbone)
    out.mkdir(parents=True, exist_ok=True)
    result = (
        _finetune_as2(model, data, out, config)
        if task == "as2"
        else _finetune_pairs(model, task, data, out, config)
    )
    with atomic_write(out / "metrics.json") as handle:
        json.dump(result, handle, indent=2)
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
