"""A mean-pooled HF transformer sentence encoder (the sentence-transformers recipe).

all-MiniLM-L6-v2 embeds a sentence as the attention-masked mean of its last hidden states,
L2-normalised (Reimers & Gurevych, 2019); :class:`BiEncoder` does the same with plain
``transformers``, so any HF encoder folder or hub id works. :class:`BiEncoderRanker` (kind
``bi-encoder``) is that encoder as an AS2 ranker scoring the cosine of question and
candidate embeddings: zero-shot from a backbone (``bi-encoder[:BACKBONE]``), or fine-tuned
(``--arch bi-encoder``, listwise: Cross-Thought's Eq. 10 on cosines). It is an
:class:`~ctxsent.protocols.Encoder` too, and exports exactly to sentence-transformers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel

from ctxsent.errors import InputError, check_range
from ctxsent.models.backbones import DEFAULT_BACKBONE, check_max_length, resolve_backbone
from ctxsent.models.inference import inference
from ctxsent.models.pooling import masked_mean
from ctxsent.models.precision import resolve_precision
from ctxsent.models.ranker_base import As2Ranker, cosine_scores
from ctxsent.models.transformer_ranker import load_folder
from ctxsent.protocols import encode_inputs
from ctxsent.saving import config_from, load_network, load_tokenizer, model_folder, register_model
from ctxsent.tasks.as2_records import As2Record
from ctxsent.text.length_chunks import length_sorted_chunks


class BiEncoder(nn.Module):
    """Transformer + masked mean pooling (+ L2 normalisation in :meth:`encode`)."""

    def __init__(
        self,
        transformer: PreTrainedModel,
        tokenizer,
        *,
        max_length: int = 256,
        precision: str = "auto",
    ) -> None:
        super().__init__()
        self.transformer = transformer
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.precision = precision  # of encode: see ctxsent.models.precision

    @property
    def max_length(self) -> int:
        """Tokens kept per text (checked against the transformer's positions)."""
        return self._max_length

    @max_length.setter
    def max_length(self, value: int) -> None:
        self._max_length = check_max_length(self.transformer, value)

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str = DEFAULT_BACKBONE,
        *,
        max_length: int | None = None,
        precision: str = "auto",
    ) -> BiEncoder:
        """Load a pretrained encoder; ``max_length`` defaults to the folder's sentence-transformers
        ``max_seq_length`` (256 for all-MiniLM-L6-v2), else the tokenizer's limit."""
        path = resolve_backbone(name_or_path)
        # strict: a local folder must hold its tokenizer files, the weights every tensor
        tokenizer = (
            load_tokenizer(path) if Path(path).is_dir() else AutoTokenizer.from_pretrained(path)
        )
        transformer = load_network(AutoModel, path, allow_unexpected=True)
        length = _default_max_length(path, tokenizer, transformer.config)
        length = length if max_length is None else max_length
        return cls(transformer.eval(), tokenizer, max_length=length, precision=precision)

    @classmethod
    def random_init(
        cls, name_or_path: str = DEFAULT_BACKBONE, *, seed: int = 0, **config_overrides
    ) -> BiEncoder:
        """The same architecture and tokenizer with freshly initialised weights: with the defaults
        the random-encoder control, isolating what pre-training adds (cf. Wieting & Kiela, 2019,
        "No Training Required"); ``config_overrides`` (``num_hidden_layers=2``, ...) make tiny
        test models."""
        path = resolve_backbone(name_or_path)
        config = AutoConfig.from_pretrained(path, **config_overrides)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            transformer = AutoModel.from_config(config)
        tokenizer = AutoTokenizer.from_pretrained(path)
        length = _default_max_length(path, tokenizer, config)
        return cls(transformer.eval(), tokenizer, max_length=length)

    @property
    def dim(self) -> int:
        return self.transformer.config.hidden_size

    @property
    def device(self) -> torch.device:
        return next(self.transformer.parameters()).device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Masked mean of the last hidden states: ``(batch, hidden)`` fp32, not normalised."""
        hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask)
        return masked_mean(hidden.last_hidden_state, attention_mask.bool())

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """``input_ids`` and ``attention_mask`` of ``texts``: special tokens added, each text
        truncated to ``max_length`` tokens, padded to the longest (as sentence-transformers)."""
        batch = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        normalize: bool = True,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), dim)`` float32 array, in input order.

        ``texts`` may be MTEB 2's batches, and ``options`` MTEB's keyword arguments, which do
        not change the embeddings (:func:`~ctxsent.protocols.encode_inputs`).
        """
        texts, show_progress = encode_inputs(texts, options, show_progress)
        if resolve_precision(self.precision, self.device) == "int8":
            raise InputError(
                "a bi-encoder infers in fp32, bf16 or fp16; int8 is for cross-encoders",
                field="precision",
            )
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with inference(self, self.device, self.precision, len(texts), show_progress) as progress:
            for rows in length_sorted_chunks(texts, batch_size):
                batch = self.tokenize([texts[i] for i in rows])
                pooled = self(**{k: v.to(self.device) for k, v in batch.items()}).float()
                if normalize:
                    pooled = nn.functional.normalize(pooled, p=2, dim=1)
                out[rows] = pooled.cpu().numpy()
                progress.update(len(rows))
        return out


#: Why a bi-encoder refuses contextual input (:class:`BiEncoderRanker`).
NOT_CONTEXTUAL = (
    "a bi-encoder embeds each candidate alone (its embedding must not depend on the "
    "document, to be indexed and exported); train a cross-encoder for contextual input"
)
#: Texts per forward pass when a training or dev batch is embedded: the batch's distinct
#: texts run in length-sorted chunks of this size, each padded to its longest (less padding,
#: activation memory bounded by the texts' own lengths; the embeddings are those of one
#: padded batch). On WikiQA batches of 8 questions, chunks of 16 pad to 1.5x the real tokens
#: where 32 pad to 1.9x, and a CPU training step takes 25% less time.
FORWARD_CHUNK = 16
#: Padded length above which a training chunk runs with per-layer activation checkpointing
#: (:func:`layer_checkpointing`). Attention activations grow with the square of the length:
#: 16 MiniLM texts of 256 tokens keep 1.5 GB for the backward pass, more than all the other
#: chunks of a WikiQA step together (about 0.8 GB), and set a run's peak memory; checkpointed
#: they keep 50 MB, and one layer at a time is recomputed in the backward pass. On WikiQA 2%
#: of the padded tokens lie in longer chunks: a second forward pass over them adds about 1% to
#: the training time (a step with such a chunk takes a third longer).
CHECKPOINT_LENGTH = 128


@dataclass
class BiEncoderConfig:
    """A saved bi-encoder ranker: its backbone's name and the tokens kept per text."""

    backbone: str = DEFAULT_BACKBONE
    max_length: int = 256

    def __post_init__(self) -> None:
        check_range(self, "max_length", 2)  # [CLS] and [SEP] at least


@register_model("bi-encoder")
class BiEncoderRanker(As2Ranker, nn.Module):
    """A bi-encoder AS2 ranker and sentence encoder: cosine of mean-pooled, normalised embeddings.

    Never contextual: each candidate is embedded alone, so its embedding can be indexed,
    ``encode`` gives exactly what ``rank`` compares, and the model exports to
    sentence-transformers unchanged (a vector depending on the candidate's document could not
    be reproduced by an ``encode`` of the sentence). For training, :meth:`features` and
    :meth:`embed_features` give a batch's embeddings with gradients and ``forward`` each
    record's cosine; the backbone's pooler, which mean pooling never reads, is frozen (DDP
    and the optimiser skip it) and saved unchanged."""

    kind: str
    contextual = False
    #: Whether every training step gives every trainable parameter a gradient (DDP).
    trains_all_parameters_each_step = True

    def __init__(
        self, encoder: BiEncoder | str = DEFAULT_BACKBONE, config: BiEncoderConfig | None = None
    ) -> None:
        """``encoder``: a :class:`BiEncoder`, or a backbone to load one from (the zero-shot
        ranker, as ``bi-encoder:BACKBONE``); ``config`` defaults to the encoder's."""
        nn.Module.__init__(self)
        backbone = None
        if isinstance(encoder, str):
            backbone = encoder
            encoder = BiEncoder.from_pretrained(backbone, max_length=config and config.max_length)
        self.encoder = encoder
        self.config = config or BiEncoderConfig(
            backbone or encoder.transformer.config.name_or_path, encoder.max_length
        )
        encoder.max_length = self.config.max_length
        pooler = getattr(encoder.transformer, "pooler", None)
        if isinstance(pooler, nn.Module):
            pooler.requires_grad_(False)

    # -- construction and persistence -------------------------------------------------
    @classmethod
    def from_backbone(
        cls, backbone: str = DEFAULT_BACKBONE, max_length: int | None = None
    ) -> BiEncoderRanker:
        """A ranker on a pretrained encoder (HF folder or id); ``max_length`` defaults to the
        folder's sentence-transformers ``max_seq_length`` (256 for all-MiniLM-L6-v2)."""
        encoder = BiEncoder.from_pretrained(backbone, max_length=max_length)
        return cls(encoder, BiEncoderConfig(backbone, encoder.max_length))

    @classmethod
    def from_pretrained(cls, path: str | Path) -> BiEncoderRanker:
        """Load a saved ``bi-encoder`` folder, strictly (every tensor, the tokenizer files)."""
        manifest, transformer, tokenizer = load_folder(path, "bi-encoder", AutoModel)
        config = config_from(BiEncoderConfig, manifest, path)
        return cls(BiEncoder(transformer.eval(), tokenizer, max_length=config.max_length), config)

    def save_pretrained(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the transformer (safetensors), tokenizer and manifest atomically to ``path``."""
        with model_folder(path, self.kind, asdict(self.config), overwrite) as staged:
            self.encoder.transformer.save_pretrained(staged, safe_serialization=True)
            self.encoder.tokenizer.save_pretrained(staged)
        return Path(path)

    @property
    def max_length(self) -> int:
        """Tokens kept per text (question or candidate), special tokens included."""
        return self.config.max_length

    @max_length.setter
    def max_length(self, value: int) -> None:
        self.config.max_length = self.encoder.max_length = value

    def with_context(self, contextual: bool) -> BiEncoderRanker:
        """Refuses contextual input (see the class docstring); returns itself otherwise."""
        if contextual:
            raise InputError(NOT_CONTEXTUAL, field="contextual")
        return self

    def head_parameter_names(self) -> list[str]:
        """No freshly initialised head: every parameter is the pretrained encoder's."""
        return []

    @property
    def tokenizer(self):
        return self.encoder.tokenizer

    @property
    def precision(self) -> str:
        """Inference precision of :meth:`encode` (:mod:`ctxsent.models.precision`)."""
        return self.encoder.precision

    @precision.setter
    def precision(self, value: str) -> None:
        self.encoder.precision = value

    @property
    def device(self) -> torch.device:
        return self.encoder.device

    # -- encoder ----------------------------------------------------------------------
    @property
    def sentence_encoder(self) -> BiEncoder:
        """The encoder it ranks with (:class:`~ctxsent.protocols.WrapsEncoder`)."""
        return self.encoder

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        normalize: bool = True,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """Embeddings ``(len(texts), dim)`` float32, L2-normalised unless ``normalize=False``
        (:meth:`BiEncoder.encode`, which takes MTEB's batches and keyword arguments too)."""
        return self.encoder.encode(texts, batch_size, normalize, show_progress, **options)

    # -- ranker -----------------------------------------------------------------------
    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Cosine of each record's question and candidate, in input order; each distinct
        text is embedded once (``batch_size`` texts per forward pass)."""
        return cosine_scores(
            records, lambda texts: self.encode(texts, batch_size, show_progress=show_progress)
        )

    # -- training ---------------------------------------------------------------------
    def features(self, records: Sequence[As2Record]) -> dict[str, Any]:
        """A batch of ``records`` as model inputs: the distinct question and candidate texts,
        tokenised in length-sorted chunks of :data:`FORWARD_CHUNK`; ``order`` holds the text
        of each embedding row as :meth:`embed_features` computes them, ``question_rows`` and
        ``candidate_rows`` each record's texts."""
        texts = list(dict.fromkeys([r.question for r in records] + [r.candidate for r in records]))
        row = {text: i for i, text in enumerate(texts)}
        chunks = length_sorted_chunks(texts, FORWARD_CHUNK)
        return {
            "chunks": [self.encoder.tokenize([texts[i] for i in rows]) for rows in chunks],
            "order": torch.tensor([i for rows in chunks for i in rows]),
            "question_rows": torch.tensor([row[r.question] for r in records]),
            "candidate_rows": torch.tensor([row[r.candidate] for r in records]),
        }

    def embed_features(self, features: dict[str, Any]) -> torch.Tensor:
        """L2-normalised embeddings ``(texts, dim)`` of a :meth:`features` batch's distinct
        texts, with gradients; in training, chunks longer than :data:`CHECKPOINT_LENGTH` run
        under :func:`layer_checkpointing`."""
        pooled = []
        for chunk in features["chunks"]:
            long = chunk["input_ids"].shape[1] > CHECKPOINT_LENGTH
            with layer_checkpointing(self.encoder.transformer, long and self.training):
                pooled.append(self.encoder(**chunk))
        pooled = torch.cat(pooled)
        return nn.functional.normalize(pooled[features["order"].argsort()], p=2, dim=-1)

    def forward(self, features: dict[str, Any]) -> torch.Tensor:
        """Cosine of each record's question and candidate embeddings, ``(records,)``."""
        embeddings = self.embed_features(features)
        q = embeddings[features["question_rows"]]
        return (q * embeddings[features["candidate_rows"]]).sum(dim=-1)


@contextmanager
def layer_checkpointing(transformer: PreTrainedModel, enabled: bool = True) -> Iterator[None]:
    """Per-layer activation checkpointing of ``transformer`` inside the block, when ``enabled``
    and gradients are on: each layer keeps only its input, and the backward pass recomputes it.

    Non-reentrant :func:`torch.utils.checkpoint.checkpoint` restores the RNG state for the
    recomputation, so dropout masks, gradients and the RNG stream are bit for bit those of a
    plain forward pass (tested). It sets the ``gradient_checkpointing`` flag of the modules
    that run layers as HF's ``gradient_checkpointing_enable`` does, but not on the model (where
    HF warns about the decoder cache) and without the input-embedding hook HF never removes."""
    if not (enabled and torch.is_grad_enabled()):
        yield
        return
    modules = [
        m
        for m in transformer.modules()
        if m is not transformer and hasattr(m, "gradient_checkpointing")
    ]
    for module in modules:
        module._gradient_checkpointing_func = partial(checkpoint, use_reentrant=False)
        module.gradient_checkpointing = True
    try:
        yield
    finally:
        for module in modules:
            module.gradient_checkpointing = False


def _default_max_length(path: str, tokenizer, config) -> int:
    st_config = Path(path) / "sentence_bert_config.json"
    if st_config.is_file():
        return int(json.loads(st_config.read_text())["max_seq_length"])
    return min(tokenizer.model_max_length, config.max_position_embeddings)
