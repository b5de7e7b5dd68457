"""Masked-language-model pieces shared by SSP, Cross-Thought and the MLM baselines.

BERT's recipe (Devlin et al., section 3.1): pick ``probability`` of the maskable tokens;
80% of the picks become ``[MASK]``, 10% a random token, 10% stay. Only picked positions
carry a label, and the loss projects only those onto the vocabulary (~3x faster on CPU
than every position). Choice left open: a batch that would get no pick (very short texts)
gets one, so the loss is always defined. Under DDP the draws and the loss's mean are those
of the step's global batch (:mod:`~ctxsent.objectives.global_batch`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ctxsent.objectives.global_batch import Share, global_mean, randint, uniform

IGNORE = -100  # label of positions that carry no MLM target


def maskable_positions(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, special_ids: list[int]
) -> torch.Tensor:
    """Boolean mask of real, non-special tokens (the only ones that may be masked)."""
    special = torch.isin(input_ids, torch.tensor(special_ids, device=input_ids.device))
    return attention_mask.bool() & ~special


def mask_tokens(
    input_ids: torch.Tensor,
    maskable: torch.Tensor,
    mask_id: int,
    vocab_size: int,
    probability: float = 0.15,
    generator: torch.Generator | None = None,
    share: Share | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(masked_ids, labels)``; ``labels`` is :data:`IGNORE` except at picked positions.

    ``share``: the rows of the step's global batch that ``input_ids`` are (DDP).
    """
    if not 0.0 < probability < 1.0:
        raise ValueError(f"masking probability must be in (0, 1), got {probability}")
    device, shape = input_ids.device, tuple(input_ids.shape)
    draw = uniform(shape, generator, device, share)
    picked = (draw < probability) & maskable
    if not picked.any() and maskable.any():
        flat = maskable.flatten().nonzero().squeeze(1)
        choice = flat[torch.randint(len(flat), (1,), generator=generator, device=device)]
        picked.view(-1)[choice] = True
    labels = torch.where(picked, input_ids, torch.full_like(input_ids, IGNORE))
    action = uniform(shape, generator, device, share)
    masked = input_ids.clone()
    masked[picked & (action < 0.8)] = mask_id
    randomise = picked & (action >= 0.8) & (action < 0.9)
    random_ids = randint(vocab_size, shape, generator, device, share)
    masked[randomise] = random_ids[randomise]
    return masked, labels


def masked_lm_logits(
    hidden: torch.Tensor, labels: torch.Tensor, head
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logits, targets)`` of the picked positions only, in row-major order.

    ``head`` maps ``(k, width)`` to vocabulary logits.
    """
    picked = labels != IGNORE
    if not picked.any():
        raise ValueError("no masked positions in the batch; nothing to predict")
    return head(hidden[picked]), labels[picked]


def masked_lm_loss(hidden: torch.Tensor, labels: torch.Tensor, head) -> torch.Tensor:
    """Cross-entropy over picked positions only (see :func:`masked_lm_logits`), averaged
    over the picks of the step's global batch
    (:func:`~ctxsent.objectives.global_batch.global_mean`)."""
    logits, targets = masked_lm_logits(hidden, labels, head)
    total = F.cross_entropy(logits.float(), targets, reduction="sum")
    return global_mean(total, len(targets), part="mlm")


class MaskedWordHead(nn.Module):
    """BERT's MLM head; the decoder shares the encoder's word-embedding matrix."""

    def __init__(self, word_embeddings: nn.Embedding, eps: float = 1e-12) -> None:
        super().__init__()
        width = word_embeddings.embedding_dim
        self.transform = nn.Sequential(
            nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width, eps=eps)
        )
        self.word_embeddings = word_embeddings
        self.bias = nn.Parameter(torch.zeros(word_embeddings.num_embeddings))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(self.transform(hidden), self.word_embeddings.weight, self.bias)
