"""What transformer AS2 rankers share: input segments, segment embeddings, saving.

Pairwise input is ``[CLS] q [SEP] a [SEP]``; contextual input adds the candidate's previous
and next sentence as a third segment with its own segment id (SSP paper, section 3 and
appendix D; Lauriola & Moschitti 2021). Backbones with two segment embeddings (BERT,
MiniLM) get a third row, a copy of the candidate's (the papers start it from scratch for
RoBERTa/ELECTRA), so before training the context reads like more candidate text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ctxsent.errors import InputError
from ctxsent.models.backbones import DEFAULT_BACKBONE, check_max_length
from ctxsent.models.inference import inference
from ctxsent.models.precision import resolve_precision
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.models.segments import encode_segments, pad_batch
from ctxsent.saving import load_network, load_tokenizer, model_folder, read_manifest
from ctxsent.tasks.as2_records import As2Record

CONTEXT_SEGMENTS = 3
_TOKENIZE_CHUNK = 4096  # records tokenised and length-sorted together at inference


@dataclass
class RankerConfig:
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


def quiet_transformers() -> None:
    """Silence load-time progress bars and the expected "newly initialized head" notice."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def load_folder(
    path: str | Path, kind: str, model_class, **options
) -> tuple[dict, nn.Module, object]:
    """Manifest, network (``model_class`` from safetensors) and tokenizer of a ``kind`` folder.

    Strict: a missing or unexpected tensor, or a missing tokenizer file, is a
    :class:`ModelFolderError` (:func:`~ctxsent.saving.load_network`).
    """
    manifest = read_manifest(path, kind)
    quiet_transformers()
    tokenizer = load_tokenizer(path)
    return manifest, load_network(model_class, path, use_safetensors=True, **options), tokenizer


class TransformerRanker(As2Ranker, nn.Module):
    """Base of the transformer rankers: ``model`` is the HF network, ``config`` a RankerConfig."""

    kind: str

    def __init__(self, model: nn.Module, tokenizer, config: RankerConfig) -> None:
        nn.Module.__init__(self)
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        check_max_length(model, config.max_length)
        self.with_context(config.contextual)

    def with_context(self, contextual: bool) -> TransformerRanker:
        """Switch between pairwise and contextual input (e.g. TANDA from a pairwise transfer)."""
        if contextual:
            extend_segment_embeddings(self.model, CONTEXT_SEGMENTS)
        self.config.contextual = self.contextual = contextual
        return self

    @property
    def max_length(self) -> int:
        """Tokens kept per input, all segments and special tokens included."""
        return self.config.max_length

    @max_length.setter
    def max_length(self, value: int) -> None:
        self.config.max_length = check_max_length(self.model, value)

    #: Parameter-name prefix of the scoring head (HF sequence-classification head by default).
    head_prefix = "model.classifier."

    #: Whether every training step gives every parameter a gradient (DDP needs to know).
    trains_all_parameters_each_step = True

    def head_parameter_names(self) -> list[str]:
        """Names (as in ``named_parameters``) of the freshly initialised scoring head."""
        return [name for name, _ in self.named_parameters() if name.startswith(self.head_prefix)]

    def reset_head(self) -> None:
        """Re-draw the scoring head from torch's global RNG as a new ranker's would be: a
        head inside the backbone (``model.``) as BERT initialises one (linear weights from
        N(0, ``initializer_range``), zero biases), any other (the cascade's exit
        classifiers) by each layer's default."""
        head = self.get_submodule(self.head_prefix.rstrip("."))
        bert_style = self.head_prefix.startswith("model.")
        with torch.no_grad():
            for module in head.modules():
                if bert_style and isinstance(module, nn.Linear):
                    module.weight.normal_(0.0, self.model.config.initializer_range)
                    if module.bias is not None:
                        module.bias.zero_()
                elif hasattr(module, "reset_parameters"):
                    module.reset_parameters()

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def num_layers(self) -> int:
        """Layers a candidate goes through (:class:`~ctxsent.protocols.LayeredRanker`)."""
        return self.model.config.num_hidden_layers

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

    # -- the one inference path ---------------------------------------------------------
    #: Inference precision (:mod:`ctxsent.models.precision`): ``auto`` (bf16 where the
    #: hardware has it natively; the scoring heads stay fp32) unless set; ``int8`` where
    #: the model supports it (:attr:`supports_int8`).
    precision = "auto"
    supports_int8 = False

    def inference(self, total: int, show_progress: bool = False):
        """:func:`~ctxsent.models.inference.inference` in :attr:`precision`, over ``total``
        records; ``int8`` only where :attr:`supports_int8`."""
        if resolve_precision(self.precision, self.device) == "int8" and not self.supports_int8:
            raise InputError(f"{self.kind}: int8 is for cross-encoders", field="precision")
        return inference(self, self.device, self.precision, total, show_progress, unit="pair")

    def sorted_batches(
        self, records: Sequence[As2Record], batch_size: int, device: torch.device | None = None
    ) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
        """``(rows, features)`` batches over ``records`` for inference: tokenised in chunks,
        longest first within a chunk, each batch padded to its longest item and moved to
        ``device`` (default: the model's)."""
        device = self.device if device is None else device
        pad = self.tokenizer.pad_token_id
        for offset in range(0, len(records), _TOKENIZE_CHUNK):
            chunk = records[offset : offset + _TOKENIZE_CHUNK]
            encoded = encode_segments(self.tokenizer, self.segments(chunk), self.config.max_length)
            order = np.argsort([-len(ids) for ids, _ in encoded], kind="stable")
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                batch = pad_batch([encoded[i] for i in rows], pad)
                yield offset + rows, {k: v.to(device) for k, v in batch.items()}

    def save_pretrained(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write weights (safetensors), tokenizer and manifest atomically to ``path``.

        An existing folder is replaced if it holds this kind of model or ``overwrite`` is
        given (:func:`~ctxsent.io.check_output`).
        """
        with model_folder(path, self.kind, asdict(self.config), overwrite) as staged:
            self.save_weights(staged)
            self.tokenizer.save_pretrained(staged)
        return Path(path)

    def save_weights(self, folder: Path) -> None:
        self.model.save_pretrained(folder, safe_serialization=True)
