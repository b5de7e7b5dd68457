"""Cross-encoder AS2 ranker over any HF encoder, pairwise or contextual.

Pairwise input is ``[CLS] q [SEP] a [SEP]``; contextual input appends the
previous and next sentence of the candidate as a third segment with its own
segment id (SSP paper, section 3 and appendix D; Lauriola & Moschitti 2021).
The head is the backbone's sequence-classification head with one logit: the
score, trained with pointwise binary cross-entropy (its sigmoid is
p(correct | q, a)).

Backbones with two segment embeddings (BERT, MiniLM) get a third row for the
context. The papers initialise the extended segment embeddings from scratch
for RoBERTa/ELECTRA; for BERT-style backbones we keep the two pretrained rows
and initialise the new one as a copy of the candidate row, so that before any
training the context reads like more candidate text rather than noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ctxsent.errors import InputError, ModelFolderError
from ctxsent.io import atomic_path
from ctxsent.models.backbones import DEFAULT_BACKBONE, resolve_backbone
from ctxsent.models.precision import autocast_context, quantize_int8, resolve_precision
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.models.segments import encode_segments, pad_batch
from ctxsent.saving import read_manifest, register_model, write_manifest
from ctxsent.tasks.as2_records import As2Record

CONTEXT_SEGMENTS = 3
_TOKENIZE_CHUNK = 4096  # records tokenised and length-sorted together in predict()


@dataclass
class CrossEncoderConfig:
    backbone: str = DEFAULT_BACKBONE
    contextual: bool = False
    max_length: int = 256


def extend_segment_embeddings(model: nn.Module, num_segments: int) -> None:
    """Grow the backbone's token-type embedding table to ``num_segments`` rows (in place)."""
    embeddings = getattr(model.base_model, "embeddings", None)
    table = getattr(embeddings, "token_type_embeddings", None)
    if table is None:
        raise InputError(
            f"backbone {model.config.name_or_path!r} has no segment (token-type) embeddings, "
            "which contextual input needs",
            field="backbone",
        )
    old = table.weight.data
    if old.shape[0] >= num_segments:
        return
    grown = nn.Embedding(num_segments, old.shape[1])
    grown.weight.data[: old.shape[0]] = old
    grown.weight.data[old.shape[0] :] = old[-1]
    embeddings.token_type_embeddings = grown
    model.config.type_vocab_size = num_segments
    if hasattr(embeddings, "token_type_ids"):  # BERT caches an all-zero buffer of ids
        embeddings.token_type_ids = torch.zeros_like(embeddings.token_type_ids)


def _quiet_transformers() -> None:
    """Silence load-time progress bars and the expected "newly initialized head" notice."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


@register_model("cross-encoder")
class CrossEncoderRanker(As2Ranker, nn.Module):
    """A transformer cross-encoder that scores (question, candidate[, context]) records."""

    def __init__(self, model: nn.Module, tokenizer, config: CrossEncoderConfig) -> None:
        nn.Module.__init__(self)
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.contextual = config.contextual
        self.precision = "auto"  # see ctxsent.models.precision
        self._int8: tuple[int, nn.Module] | None = None  # (weights version, quantised copy)

    # -- construction and persistence -------------------------------------------------
    @classmethod
    def from_backbone(
        cls, backbone: str = DEFAULT_BACKBONE, contextual: bool = False, max_length: int = 256
    ) -> CrossEncoderRanker:
        """A fresh ranker: pretrained encoder, new one-logit head."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path = resolve_backbone(backbone)
        _quiet_transformers()
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
        tokenizer = AutoTokenizer.from_pretrained(path)
        config = CrossEncoderConfig(backbone, contextual, max_length)
        if contextual:
            extend_segment_embeddings(model, CONTEXT_SEGMENTS)
        return cls(model, tokenizer, config)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> CrossEncoderRanker:
        """Load a saved ranker folder (safetensors only)."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        manifest = read_manifest(path)
        _quiet_transformers()
        if manifest["kind"] != "cross-encoder":
            raise ModelFolderError(f"holds a {manifest['kind']!r}, not a cross-encoder", path=path)
        try:
            model = AutoModelForSequenceClassification.from_pretrained(path, use_safetensors=True)
            tokenizer = AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError) as err:
            raise ModelFolderError(f"cannot load weights or tokenizer: {err}", path=path) from None
        return cls(model, tokenizer, CrossEncoderConfig(**manifest["config"]))

    def with_context(self, contextual: bool) -> CrossEncoderRanker:
        """Switch between pairwise and contextual input (e.g. TANDA from a pairwise transfer)."""
        if contextual:
            extend_segment_embeddings(self.model, CONTEXT_SEGMENTS)
        self.config.contextual = self.contextual = contextual
        return self

    def save_pretrained(self, path: str | Path) -> Path:
        """Write weights (safetensors), tokenizer and manifest atomically to ``path``."""
        with atomic_path(path) as staged:
            staged.mkdir()
            self.model.save_pretrained(staged, safe_serialization=True)
            self.tokenizer.save_pretrained(staged)
            write_manifest(staged, self.kind, asdict(self.config))
        return Path(path)

    # -- features and scoring ----------------------------------------------------------
    def segments(self, records: Sequence[As2Record]) -> list[list[str]]:
        """The text columns fed to the encoder: questions, candidates[, contexts]."""
        columns = [[r.question for r in records], [r.candidate for r in records]]
        if self.contextual:
            columns.append([" ".join(filter(None, (r.previous, r.next))) for r in records])
        return columns

    def features(self, records: Sequence[As2Record]) -> dict[str, torch.Tensor]:
        """A padded batch of model inputs for ``records`` (training collate)."""
        encoded = encode_segments(self.tokenizer, self.segments(records), self.config.max_length)
        return pad_batch(encoded, self.tokenizer.pad_token_id)

    def forward(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits, one per example."""
        return self.model(**features).logits[:, 0]

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _int8_model(self) -> nn.Module:
        """The int8 copy of the model, re-made whenever the weights have changed."""
        version = sum(p._version for p in self.model.parameters())
        if self._int8 is None or self._int8[0] != version:
            self._int8 = (version, quantize_int8(self.model))
        return self._int8[1]

    @torch.inference_mode()
    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Logit per record (higher = more likely correct), in input order.

        Records are tokenised in chunks, sorted by token length within a chunk
        and padded per batch to the longest item; ``self.precision`` selects the
        autocast dtype.
        """
        from tqdm.auto import tqdm

        self.model.eval()
        scores = np.empty(len(records), dtype=np.float32)
        device = self.device
        precision = resolve_precision(self.precision, device)
        model = self.model
        if precision == "int8":  # fbgemm kernels: the quantised copy runs on the CPU
            model, device = self._int8_model(), torch.device("cpu")
        progress = tqdm(total=len(records), disable=not show_progress, desc="scoring", unit="pair")
        with autocast_context(device, precision), progress:
            for chunk_start in range(0, len(records), _TOKENIZE_CHUNK):
                chunk = records[chunk_start : chunk_start + _TOKENIZE_CHUNK]
                encoded = encode_segments(
                    self.tokenizer, self.segments(chunk), self.config.max_length
                )
                order = np.argsort([-len(ids) for ids, _ in encoded], kind="stable")
                for start in range(0, len(order), batch_size):
                    rows = order[start : start + batch_size]
                    batch = pad_batch([encoded[i] for i in rows], self.tokenizer.pad_token_id)
                    logits = model(**{k: v.to(device) for k, v in batch.items()}).logits[:, 0]
                    scores[chunk_start + rows] = logits.float().cpu().numpy()
                    progress.update(len(rows))
        return scores
