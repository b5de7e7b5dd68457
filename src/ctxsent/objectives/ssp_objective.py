"""The SSP pre-training objective (SSP paper, section 6 and appendix C): ``mlm_weight * MLM +
ssp_weight * SSP`` on a contextual cross-encoder, or, with an ELECTRA discriminator,
``mlm_weight * generator MLM + rtd_weight * RTD + ssp_weight * SSP`` (1 / 50 / 1).

SSP is the binary cross-entropy of the ranker's logit; the MLM loss projects only the
masked positions of the same input, as BERT does for NSP; draws and means are the global
batch's (:mod:`~ctxsent.objectives.global_batch`). The MLM head (BERT's, tied to the word
embeddings; all-MiniLM-L6-v2 ships none) is dropped with the objective: only the ranker is
saved.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.objectives.electra import ElectraObjective
from ctxsent.objectives.global_batch import global_mean, share_of
from ctxsent.objectives.masking import (
    IGNORE,
    MaskedWordHead,
    mask_tokens,
    maskable_positions,
    masked_lm_loss,
)


class SspObjective(nn.Module):
    """MLM + SSP (or, with ``electra``, generator MLM + RTD + SSP) on ``ranker``;
    ``weights`` name each part's weight (``mlm``, ``ssp``, ``rtd``)."""

    def __init__(
        self,
        ranker: CrossEncoderRanker | CascadeRanker,
        weights: dict[str, float],
        mlm_probability: float,
        electra: ElectraObjective | None = None,
    ) -> None:
        super().__init__()
        self.model, self.electra, self.weights = ranker, electra, weights
        embeddings = ranker.model.get_input_embeddings()
        self.mlm_head = MaskedWordHead(embeddings) if electra is None else None
        self.mlm_probability = mlm_probability
        tokenizer = ranker.tokenizer
        self.special_ids = [tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id]
        self.mask_id = tokenizer.mask_token_id
        self.vocab_size = embeddings.weight.shape[0]

    def _mask(self, features: dict, generator: torch.Generator | None):
        ids, attention = features["input_ids"], features["attention_mask"]
        share = share_of(ids.shape, ids.device)
        maskable = maskable_positions(ids, attention, self.special_ids)
        masked, mlm_labels = mask_tokens(
            ids, maskable, self.mask_id, self.vocab_size, self.mlm_probability, generator, share
        )
        return masked, mlm_labels, share

    def step_counts(self, batch: dict, generator: torch.Generator | None = None) -> dict:
        """What each part averages over in ``batch`` with ``generator``'s draws: masked
        words (``mlm``), examples (``ssp``) and ELECTRA's real tokens (``rtd``)."""
        _, mlm_labels, _ = self._mask(batch["features"], generator)
        counts = {"mlm": int((mlm_labels != IGNORE).sum()), "ssp": len(batch["labels"])}
        if self.electra is not None:
            counts["rtd"] = int(batch["features"]["attention_mask"].bool().sum())
        return counts

    def forward(self, batch: dict, generator: torch.Generator | None = None) -> dict:
        """``loss``, its parts (``mlm``, ``ssp``, ELECTRA's ``rtd``) and the SSP ``accuracy``."""
        features, labels = batch["features"], batch["labels"]
        masked, mlm_labels, share = self._mask(features, generator)
        if self.electra is None:
            parts, logits = self._masked_lm(features, masked, mlm_labels)
        else:
            parts, logits = self.electra(
                self.model.model, features, masked, mlm_labels, generator, share
            )
        ssp = F.binary_cross_entropy_with_logits(logits, labels, reduction="sum")
        parts["ssp"] = global_mean(ssp, len(labels), part="ssp")
        return {
            "loss": sum(self.weights[name] * part for name, part in parts.items()),
            **{name: part.detach() for name, part in parts.items()},
            "accuracy": ((logits > 0) == (labels > 0.5)).float().mean(),
        }

    def _masked_lm(self, features: dict, masked: torch.Tensor, mlm_labels: torch.Tensor):
        """BERT-style: ``({"mlm": ...}, ssp_logits)`` from one pass over the masked input."""
        inputs = {
            "input_ids": masked,
            "token_type_ids": features["token_type_ids"],
            "attention_mask": features["attention_mask"],
        }
        if isinstance(self.model, CascadeRanker):  # readout "mean"
            hidden = self.model.model(**inputs).last_hidden_state
            logits = self.model.exit_logits(-1, hidden, features["attention_mask"])
        else:
            out = self.model.model(**inputs, output_hidden_states=True)
            hidden, logits = out.hidden_states[-1], out.logits[:, 0]
        return {"mlm": masked_lm_loss(hidden, mlm_labels, self.mlm_head)}, logits.float()
