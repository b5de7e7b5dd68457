"""ELECTRA's generator and replaced-token detection, for SSP continuous pre-training.

ELECTRA (Clark et al., 2020, section 2): a small masked-LM *generator* fills the masked
positions with tokens sampled from its output, and the *discriminator* labels every token
of the corrupted input as original or replaced. The loss is Eq. 1,
``L_MLM(x, θ_G) + λ L_Disc(x, θ_D)`` with λ = 50 (appendix A); the SSP paper (appendix C)
adds its classification loss with weight 1 on the discriminator's [CLS] (the SSP head,
kept as the AS2 head). This module gives the generator MLM loss, the RTD loss and the SSP
logit; the weights are :mod:`ctxsent.training.ssp_pretrain`'s.

Following ELECTRA: the generator has the discriminator's depth and a fraction of its width
(1/4 Small, 1/3 Base; Table 6), feed-forward 4x, one head per 64 dimensions, as the
official ``get_generator_config``; generator and discriminator share the embeddings
(section 3.2) and the generator's output projection is tied to the token embeddings; no
gradient flows through sampling; the RTD loss covers all non-padding tokens, and a sampled
token equal to the original counts as original. Models are built from scratch (no ELECTRA
weights offline) with three segment ids (0, 1, 2) for the SSP triples and contextual AS2.

Choices of ours: masking is :func:`~ctxsent.objectives.masking.mask_tokens` (BERT's
80/10/10; ELECTRA uses 85% [MASK] / 15% unchanged), which only changes what the generator
sees; position embeddings cover 512 tokens, so the discriminator fine-tunes at AS2's 256
tokens (appendix D) although pre-training uses 128.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from ctxsent.models.transformer_ranker import CONTEXT_SEGMENTS
from ctxsent.objectives.electra_sizes import ElectraSize
from ctxsent.objectives.global_batch import Share, global_mean, uniform
from ctxsent.objectives.masking import IGNORE, masked_lm_logits

MAX_POSITIONS = 512


def discriminator_config(size: ElectraSize, tokenizer):
    from transformers import ElectraConfig

    return ElectraConfig(
        vocab_size=len(tokenizer),
        embedding_size=size.embedding,
        hidden_size=size.hidden,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        intermediate_size=size.intermediate,
        max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=CONTEXT_SEGMENTS,
        pad_token_id=tokenizer.pad_token_id,
        num_labels=1,
    )


def new_discriminator(size: ElectraSize, tokenizer):
    """A randomly initialised ELECTRA discriminator with a one-logit [CLS] head (the SSP head)."""
    from transformers import ElectraForSequenceClassification

    return ElectraForSequenceClassification(discriminator_config(size, tokenizer))


def generator_config(discriminator, fraction: float):
    config = copy.deepcopy(discriminator.config)
    config.hidden_size = max(1, round(config.hidden_size * fraction))
    config.intermediate_size = 4 * config.hidden_size
    config.num_attention_heads = max(1, config.hidden_size // 64)
    return config


def replaced_token_loss(
    logits: torch.Tensor,
    original: torch.Tensor,
    corrupted: torch.Tensor,
    attention_mask: torch.Tensor,
) -> torch.Tensor:
    """ELECTRA's ``L_Disc`` (section 2): binary cross-entropy of "replaced" per token, averaged
    over every non-padding token (special tokens included); a sampled token equal to the
    original counts as original."""
    active = attention_mask.bool()
    labels = (corrupted != original).float()
    total = F.binary_cross_entropy_with_logits(
        logits[active].float(), labels[active], reduction="sum"
    )
    return global_mean(total, int(active.sum()), part="rtd")


class ElectraObjective(nn.Module):
    """The generator and the RTD head around a discriminator passed at each call: the
    discriminator belongs to the saved ranker, this module is dropped after pre-training."""

    def __init__(self, discriminator, generator_fraction: float) -> None:
        from transformers import ElectraForMaskedLM
        from transformers.models.electra.modeling_electra import ElectraDiscriminatorPredictions

        super().__init__()
        self.generator = ElectraForMaskedLM(generator_config(discriminator, generator_fraction))
        shared = discriminator.electra.embeddings
        self.generator.electra.embeddings = shared
        self.generator.generator_lm_head.weight = shared.word_embeddings.weight
        self.rtd_head = ElectraDiscriminatorPredictions(discriminator.config)

    def generator_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.generator.generator_lm_head(self.generator.generator_predictions(hidden))

    def forward(
        self,
        discriminator,
        features: dict[str, torch.Tensor],
        masked: torch.Tensor,
        mlm_labels: torch.Tensor,
        rng: torch.Generator | None = None,
        share: Share | None = None,
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """``({"mlm": ..., "rtd": ...}, ssp_logits)`` for a batch masked by ``mask_tokens``.

        A picked position's replacement is sampled from the generator's softmax by inverse
        CDF on a uniform draw for the step's global batch (``share``,
        :mod:`~ctxsent.objectives.global_batch`), so DDP ranks sample as one process."""
        ids, types, attention = (
            features["input_ids"],
            features["token_type_ids"],
            features["attention_mask"],
        )
        hidden = self.generator.electra(
            input_ids=masked, token_type_ids=types, attention_mask=attention
        ).last_hidden_state
        logits, targets = masked_lm_logits(hidden, mlm_labels, self.generator_logits)
        total = F.cross_entropy(logits.float(), targets, reduction="sum")
        mlm = global_mean(total, len(targets), part="mlm")
        picked = mlm_labels != IGNORE
        with torch.no_grad():
            cumulative = torch.softmax(logits.float(), dim=-1).cumsum(-1)
            draws = uniform(tuple(ids.shape), rng, ids.device, share)[picked]
            sampled = torch.searchsorted(
                cumulative, draws[:, None] * cumulative[:, -1:], right=True
            )
        corrupted = ids.clone()
        corrupted[picked] = sampled.squeeze(1).clamp(max=cumulative.shape[1] - 1)
        hidden = discriminator.electra(
            input_ids=corrupted, token_type_ids=types, attention_mask=attention
        ).last_hidden_state
        rtd = replaced_token_loss(self.rtd_head(hidden), ids, corrupted, attention)
        return {"mlm": mlm, "rtd": rtd}, discriminator.classifier(hidden)[:, 0].float()
