"""Cross-encoder AS2 ranker over any HF encoder, pairwise or contextual.

The head is the backbone's sequence-classification head with one logit: the
score, trained with pointwise binary cross-entropy (its sigmoid is
p(correct | q, a)). Input segments and saving: :mod:`transformer_ranker`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ctxsent.models.backbones import DEFAULT_BACKBONE, depth_options, resolve_backbone
from ctxsent.models.layerwise import cls_logits, reads_cls_only
from ctxsent.models.precision import keep_fp32, quantize_int8, resolve_precision
from ctxsent.models.transformer_ranker import (
    RankerConfig,
    TransformerRanker,
    load_folder,
    quiet_transformers,
)
from ctxsent.saving import config_from, register_model
from ctxsent.tasks.as2_records import As2Record


@register_model("cross-encoder")
class CrossEncoderRanker(TransformerRanker):
    """A transformer cross-encoder that scores (question, candidate[, context]) records."""

    supports_int8 = True

    def __init__(self, model: nn.Module, tokenizer, config: RankerConfig) -> None:
        super().__init__(model, tokenizer, config)
        for head in _scoring_head(model):
            keep_fp32(head)
        self._int8: tuple[int, nn.Module] | None = None  # (weights version, quantised copy)

    @classmethod
    def from_backbone(
        cls,
        backbone: str = DEFAULT_BACKBONE,
        contextual: bool = False,
        max_length: int = 256,
        layers: int | None = None,
    ) -> CrossEncoderRanker:
        """A fresh ranker: pretrained encoder, new one-logit head.

        ``layers`` keeps only the first ``layers`` transformer layers (the
        truncated monolithic models of the Cascade paper, section 4.2).
        """
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path = resolve_backbone(backbone)
        quiet_transformers()
        options = {"num_labels": 1, **depth_options(path, layers)}
        model = AutoModelForSequenceClassification.from_pretrained(path, **options)
        tokenizer = AutoTokenizer.from_pretrained(path)
        return cls(model, tokenizer, RankerConfig(backbone, contextual, max_length))

    @classmethod
    def from_pretrained(cls, path: str | Path) -> CrossEncoderRanker:
        """Load a saved ranker folder (safetensors only)."""
        from transformers import AutoModelForSequenceClassification

        manifest, model, tokenizer = load_folder(
            path, "cross-encoder", AutoModelForSequenceClassification
        )
        return cls(model, tokenizer, config_from(RankerConfig, manifest, path))

    def forward(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits, one per example."""
        return _logits(self.model, features)

    def _int8_model(self) -> nn.Module:
        """The int8 copy of the model, re-made whenever the weights have changed."""
        version = sum(p._version for p in self.model.parameters())
        if self._int8 is None or self._int8[0] != version:
            self._int8 = (version, quantize_int8(self.model))
        return self._int8[1]

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Logit per record (higher = more likely correct), in input order, on the
        :meth:`~TransformerRanker.sorted_batches` path in :attr:`precision` (int8 runs a
        quantised copy of the model on the CPU)."""
        scores = np.empty(len(records), dtype=np.float32)
        model, device = self.model, self.device
        if resolve_precision(self.precision, device) == "int8":  # fbgemm kernels: CPU only
            model, device = self._int8_model(), torch.device("cpu")
        with self.inference(len(records), show_progress) as progress:
            for rows, features in self.sorted_batches(records, batch_size, device):
                scores[rows] = _logits(model, features).float().cpu().numpy()
                progress.update(len(rows))
        return scores


def _scoring_head(model: nn.Module) -> list[nn.Module]:
    """The modules between the encoder's last states and the logit: the backbone's pooler
    (BERT's [CLS] dense layer), if any, and the classifier. They run in fp32
    (:func:`~ctxsent.models.precision.keep_fp32`): a logit rounded to bf16 ties with its
    neighbours."""
    pooler = getattr(model.base_model, "pooler", None)
    return [m for m in (pooler, getattr(model, "classifier", None)) if isinstance(m, nn.Module)]


def _logits(model: nn.Module, features: dict[str, torch.Tensor]) -> torch.Tensor:
    """First logit per example; BERT heads skip the unread part of the last layer."""
    if reads_cls_only(model):
        return cls_logits(model, features)
    return model(**features).logits[:, 0]
