"""Did SSP pre-training learn its objective? Its head scored on examples it never saw.

Each positive comes with 4 negatives (SSP paper, section 4), so a head always answering
"not the same paragraph" scores accuracy 0.80 and log-loss 0.500 nats, and the training
log's one mini-batch of 16 every 50 steps is too noisy to tell a head that learned from
it. A run's batch stream depends only on its seed, batch size and step count
(:class:`~ctxsent.objectives.global_batch.StreamBatches`), so the examples it never drew
are known exactly; on them, unmasked as fine-tuning sees them, this module reports
accuracy, log-loss, the prior's log-loss and the ROC AUC (0.5: no skill), also as an
:class:`~ctxsent.protocols.Evaluator` (:class:`SspHeldoutEvaluator`, primary: AUC).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score

from ctxsent.errors import InputError
from ctxsent.models.inference import inference
from ctxsent.models.precision import on_accelerator
from ctxsent.objectives.global_batch import StreamBatches
from ctxsent.objectives.ssp_data import example_lengths, load_ssp_dataset, ssp_batch
from ctxsent.resolver import load
from ctxsent.saving import read_run

NO_HELDOUT = "no held-out examples: the run drew every example of its data"


def unseen_indices(
    lengths, batch_size: int, seed: int, steps: int, count: int, accumulate: int = 1
) -> list[int]:
    """Up to ``count`` examples (seeded sample, sorted) that ``steps`` training steps (of
    ``accumulate`` batches each) never draw."""
    seen: set[int] = set()
    stream = StreamBatches(len(lengths), batch_size, seed, steps, lengths, accumulate=accumulate)
    for batch in stream:
        seen.update(batch)
    unseen = [i for i in range(len(lengths)) if i not in seen]
    return sorted(random.Random(f"ssp-heldout:{seed}").sample(unseen, min(count, len(unseen))))


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """P(a random positive outscores a random negative), ties half; None without both."""
    return float(roc_auc_score(labels, scores)) if len(np.unique(labels)) == 2 else None


def ssp_heldout_metrics(ranker, dataset, indices: list[int], batch_size: int = 64) -> dict:
    """SSP accuracy, log-loss, prior log-loss and AUC of ``ranker``'s head on ``indices``,
    scored in eval mode; the ranker is left in the training mode it was in."""
    if not indices:
        raise InputError(NO_HELDOUT)
    pad_id = ranker.tokenizer.pad_token_id
    logits, labels = [], []
    with inference(ranker, ranker.device):
        for start in range(0, len(indices), batch_size):
            batch = ssp_batch(dataset, indices[start : start + batch_size], pad_id)
            features = {k: v.to(ranker.device) for k, v in batch["features"].items()}
            logits.append(ranker(features).float().cpu())
            labels.append(batch["labels"])
    logit, label = torch.cat(logits), torch.cat(labels)
    rate = float(label.mean())
    prior = -(rate * np.log(rate) + (1 - rate) * np.log(1 - rate)) if 0 < rate < 1 else 0.0
    return {
        "examples": len(indices),
        "positive_rate": round(rate, 4),
        "accuracy": round(float(((logit > 0) == (label > 0.5)).float().mean()), 4),
        "majority_accuracy": round(max(rate, 1 - rate), 4),
        "log_loss": round(float(F.binary_cross_entropy_with_logits(logit, label)), 4),
        "prior_log_loss": round(float(prior), 4),
        "auc": None if (auc := roc_auc(label.numpy(), logit.numpy())) is None else round(auc, 4),
    }


class SspHeldoutEvaluator:
    """The SSP :class:`~ctxsent.protocols.Evaluator`: ``evaluator(ranker)`` is
    :func:`ssp_heldout_metrics` on ``indices`` of ``dataset`` as floats (an undefined AUC,
    with one class only, is NaN). Primary: ROC AUC, which unlike accuracy does not sit at
    the 0.80 of always answering "no" (4 negatives per positive, SSP paper section 4)."""

    primary_metric = "auc"

    def __init__(self, dataset, indices: Sequence[int], batch_size: int = 64) -> None:
        if not indices:
            raise InputError(NO_HELDOUT)
        self.dataset = dataset
        self.indices = list(indices)
        self.batch_size = batch_size

    def __call__(self, ranker) -> dict[str, float]:
        metrics = ssp_heldout_metrics(ranker, self.dataset, self.indices, self.batch_size)
        return {
            name: math.nan if value is None else float(value) for name, value in metrics.items()
        }


def evaluate_run(
    run: str | Path, count: int = 1000, batch_size: int = 64, accelerator: str = "cpu"
) -> dict:
    """Held-out SSP metrics of the finished run folder ``run`` (its ``run.json``), its model
    on ``accelerator``."""
    run = Path(run)
    stored = read_run(run) or {}
    if stored.get("status") != "finished" or "heldout" not in stored.get("metrics", {}):
        raise InputError("is not a finished SSP run (see its run.json)", path=run)
    config, steps, data = stored["settings"]["config"], stored["progress"]["steps"], stored["data"]
    dataset, _ = load_ssp_dataset(data["folder"])
    indices = unseen_indices(
        example_lengths(dataset), config["batch_size"], config["seed"], steps, count,
        config.get("accumulate", 1),
    )  # fmt: skip
    ranker = on_accelerator(load(run / "model"), accelerator)
    return {"run": str(run), "steps": steps, "data": data["folder"]} | (
        ssp_heldout_metrics(ranker, dataset, indices, batch_size)
    )
