"""AS2 fine-tuning objectives (SSP paper, appendix D; Cross-Thought Eq. 10): pointwise
binary cross-entropy per (question, candidate[, context]) pair, or the listwise softmax over
each question's candidates; a bi-encoder scores ``cos(q, a) / temperature``
(:func:`bi_encoder_loss`). :class:`As2Objective` is what the training engine runs
(:mod:`~ctxsent.training.engine`); :mod:`~ctxsent.training.as2_finetune` builds its batches.
Losses are means over the step's global batch (pairs, or questions for the listwise loss;
:func:`~ctxsent.objectives.global_batch.global_mean`), so DDP ranks holding unequal shares
train as one process.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import nn

from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.objectives.global_batch import global_mean


class As2LossSettings(Protocol):
    """What the AS2 losses read of a run's settings (an ``As2TrainConfig``)."""

    loss: str
    temperature: float
    in_batch_negatives: bool
    distill_weight: float


def listwise_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    extra_negatives: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean over the step's questions (under DDP every rank's: ``global_mean``) of -log(softmax
    mass on the question's correct candidates).

    The softmax runs over each question's candidates in the batch (``groups``: one question
    number per row): Cross-Thought's Eq. 10 on cross-encoder scores, every correct candidate
    counted; unlike pointwise cross-entropy it is not swamped by hundreds of negatives (ASNQ,
    SQuAD-AS2). Every question needs a correct candidate in the batch. ``extra_negatives``
    ``(questions, K)``, rows in ``torch.unique(groups)`` order, adds more wrong candidates'
    logits to each softmax (``-inf`` padding): :func:`in_batch_negative_logits`."""
    losses = []
    for index, group in enumerate(torch.unique(groups)):
        rows = groups == group
        positives = rows & (labels > 0)
        if not positives.any():
            raise ValueError(f"question {int(group)} has no correct candidate in the batch")
        candidates = logits[rows]
        if extra_negatives is not None:
            candidates = torch.cat([candidates, extra_negatives[index].to(candidates.dtype)])
        losses.append(torch.logsumexp(candidates, 0) - torch.logsumexp(logits[positives], 0))
    return global_mean(torch.stack(losses).sum(), len(losses))


def distillation_loss(
    logits: torch.Tensor, teacher_logits: torch.Tensor, groups: torch.Tensor
) -> torch.Tensor:
    """Mean over the step's questions (``global_mean``) of KL(teacher || student) between the
    softmaxes of each question's candidates in the batch (knowledge distillation, Hinton et
    al. 2015, on a listwise ranking): 0 when the student's distribution is the teacher's."""
    losses = []
    for group in torch.unique(groups):
        rows = groups == group
        teacher = torch.log_softmax(teacher_logits[rows].float(), 0)
        student = torch.log_softmax(logits[rows].float(), 0)
        losses.append((teacher.exp() * (teacher - student)).sum())
    return global_mean(torch.stack(losses).sum(), len(losses))


def pointwise_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of each pair's logit, averaged over the step's pairs (under
    DDP, over every rank's pairs: ``global_mean``)."""
    total = nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="sum")
    return global_mean(total, len(labels))


def in_batch_negative_logits(
    embeddings: torch.Tensor,
    question_rows: torch.Tensor,
    candidate_rows: torch.Tensor,
    groups: torch.Tensor,
) -> torch.Tensor:
    """Cosines of each question with the other questions' candidates in its batch.

    ``embeddings`` ``(texts, dim)`` are the batch's L2-normalised distinct texts; record ``i``
    asks text ``question_rows[i]`` about text ``candidate_rows[i]`` for question ``groups[i]``.
    Returns ``(questions, candidate texts)`` in ``torch.unique(groups)`` order, ``-inf`` where a
    text is among the question's own candidates (counted once, with their label): the
    ``extra_negatives`` of :func:`listwise_loss`, once divided by the temperature. Another
    question's candidate may answer this one too; such false negatives are the known price
    of in-batch negatives."""
    questions, inverse = torch.unique(groups, return_inverse=True)
    positions = torch.arange(len(groups), device=groups.device)
    first = torch.full_like(questions, len(groups)).scatter_reduce(0, inverse, positions, "amin")
    candidates = torch.unique(candidate_rows)
    cosine = embeddings[question_rows[first]] @ embeddings[candidates].T
    own = torch.zeros(cosine.shape, dtype=torch.bool, device=cosine.device)
    own[inverse, torch.searchsorted(candidates, candidate_rows)] = True
    return cosine.masked_fill(own, -math.inf)


def bi_encoder_logits(
    embeddings: torch.Tensor,
    question_rows: torch.Tensor,
    candidate_rows: torch.Tensor,
    config: As2LossSettings,
) -> torch.Tensor:
    """``cos(q_i, a_i) / config.temperature`` of every record (L2-normalised embeddings)."""
    q, a = embeddings[question_rows], embeddings[candidate_rows]
    return (q * a).sum(dim=-1) / config.temperature


def bi_encoder_loss(
    embeddings: torch.Tensor,
    question_rows: torch.Tensor,
    candidate_rows: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor | None,
    config: As2LossSettings,
) -> torch.Tensor:
    """A bi-encoder's loss on a batch (see :func:`in_batch_negative_logits` for the inputs).

    The logit of record ``i`` is ``cos(q_i, a_i) / config.temperature``. Pointwise: binary
    cross-entropy of the logits. Listwise: :func:`listwise_loss` over each question's
    candidates (Eq. 10 with cosine similarities), with :func:`in_batch_negative_logits`
    as extra negatives when ``config.in_batch_negatives``.
    """
    logits = bi_encoder_logits(embeddings, question_rows, candidate_rows, config)
    if config.loss == "pointwise":
        return pointwise_loss(logits, labels)
    extra = None
    if config.in_batch_negatives:
        cosine = in_batch_negative_logits(embeddings, question_rows, candidate_rows, groups)
        extra = cosine / config.temperature
    return listwise_loss(logits, labels, groups, extra)


class As2Objective(nn.Module):
    """A ranker's AS2 loss on a batch ``(features, labels, record indices)``:
    ``config.loss`` pointwise or listwise (``questions``: each training record's question
    number), with a bi-encoder's cosine logits (:func:`bi_encoder_loss`). With
    ``teacher_logits`` (one per training record, listwise only) the loss is
    ``(1 - w) * label loss + w * distillation_loss``, ``w`` = ``config.distill_weight``."""

    def __init__(
        self,
        ranker: nn.Module,
        config: As2LossSettings,
        questions: torch.Tensor | None = None,
        teacher_logits: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.model, self.config, self.questions = ranker, config, questions
        self.teacher_logits = teacher_logits

    def forward(self, batch, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        features, labels, indices = batch
        questions = None
        if self.config.loss == "listwise":
            questions = self.questions[indices.cpu()].to(labels.device)
        if isinstance(self.model, BiEncoderRanker):
            embeddings = self.model.embed_features(features)
            rows = features["question_rows"], features["candidate_rows"]
            loss = bi_encoder_loss(embeddings, *rows, labels, questions, self.config)
            logits = None if self.teacher_logits is None else bi_encoder_logits(
                embeddings, *rows, self.config
            )  # fmt: skip
        elif questions is not None:
            logits = self.model(features)
            loss = listwise_loss(logits, labels, questions)
        else:
            loss = pointwise_loss(self.model(features), labels)
        if self.teacher_logits is None:
            return {"loss": loss}
        teacher = self.teacher_logits[indices.cpu()].to(labels.device)
        distilled = distillation_loss(logits, teacher, questions)
        weight = self.config.distill_weight
        return {"loss": (1 - weight) * loss + weight * distilled, "distillation": distilled}
