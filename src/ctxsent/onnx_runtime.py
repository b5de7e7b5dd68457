"""Scoring and embedding with an exported ONNX folder, without torch or transformers.

A folder of :func:`ctxsent.export.export_onnx` (``model.onnx``, ``tokenizer.json``,
``tokenizer_config.json``, :data:`ONNX_CONFIG`) is read with NumPy, onnxruntime and
``tokenizers`` only, so a service can rank on a machine without torch;
``ctxsent.load(FOLDER)`` returns :func:`load_onnx`'s model: an :class:`OnnxRanker` (a
cross-encoder's score per record, inputs built by
:func:`~ctxsent.models.segments.encode_segments` as the torch ranker builds them) or an
:class:`OnnxBiEncoder` (embeddings of texts tokenised as
:meth:`~ctxsent.models.bi_encoder.BiEncoder.tokenize` does, and their cosine per record).
Inputs are sorted by length and padded per batch, as in torch. onnxruntime is imported
when a folder loads, so importing this module needs neither it nor torch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ctxsent.errors import ModelFolderError
from ctxsent.models.ranker_base import As2Ranker, cosine_scores
from ctxsent.models.segments import encode_segments, pad_arrays
from ctxsent.protocols import encode_inputs
from ctxsent.tasks.as2_records import As2Record
from ctxsent.text.length_chunks import length_sorted_chunks

ONNX_CONFIG = "onnx_ranker.json"
ONNX_MODEL = "model.onnx"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
#: Weights of the exported graph: fp32 as trained, or int8 (onnxruntime dynamic quantisation).
Quantization = Literal["none", "int8"]


@dataclass
class OnnxConfig:
    """:data:`ONNX_CONFIG`: the exported model's kind (``cross-encoder``: ``model.onnx``
    gives one score per input; ``bi-encoder``: an embedding per text), whether it reads
    context, the tokens kept per input, and the quantisation of its weights."""

    kind: str
    contextual: bool
    max_length: int
    quantize: Quantization = "none"


def is_onnx_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`ctxsent.export.export_onnx`."""
    return (Path(path) / ONNX_CONFIG).is_file()


def load_onnx(path: str | Path, threads: int | None = None) -> OnnxRanker | OnnxBiEncoder:
    """The model of an exported ONNX folder: its config's kind picks the class."""
    config = read_config(path)
    cls = OnnxBiEncoder if config.kind == "bi-encoder" else OnnxRanker
    return cls.from_folder(path, threads)


def read_config(path: str | Path) -> OnnxConfig:
    """:data:`ONNX_CONFIG` of ``path``, checked for the files the runtime reads."""
    path = Path(path)
    missing = [n for n in (ONNX_MODEL, ONNX_CONFIG, *TOKENIZER_FILES) if not (path / n).is_file()]
    if missing:
        raise ModelFolderError(
            f"not an exported ONNX model (missing {', '.join(missing)})", path=path
        )
    try:
        return OnnxConfig(**json.loads((path / ONNX_CONFIG).read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as err:
        raise ModelFolderError(f"unreadable ONNX config ({err})", path=path / ONNX_CONFIG) from None


class FastTokenizer:
    """A folder's ``tokenizer.json`` on the ``tokenizers`` library, answering the calls
    ctxsent makes of a HF fast tokenizer (whose backend is this same object).

    The special tokens' ids come from ``tokenizer_config.json`` (``cls_token``, ``sep_token``,
    ``pad_token``), padding and truncation sides too; truncation and padding are set on
    every call, as HF sets them, since ``tokenizer.json`` stores the last call's.
    """

    def __init__(self, folder: str | Path) -> None:
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        tokens = {}
        for name in ("cls_token", "sep_token", "pad_token"):
            token = config.get(name)
            tokens[name] = token.get("content") if isinstance(token, dict) else token
        self.pad_token = tokens["pad_token"]
        self.cls_token_id, self.sep_token_id, self.pad_token_id = (
            None if token is None else self.backend.token_to_id(token) for token in tokens.values()
        )
        self.padding_side = config.get("padding_side", "right")
        self.truncation_side = config.get("truncation_side", "right")

    def __call__(self, texts: Sequence[str], add_special_tokens: bool = True) -> dict[str, list]:
        """``{"input_ids": ...}`` of each text, neither truncated nor padded (HF's
        ``tokenizer(texts, add_special_tokens=...)``, which
        :func:`~ctxsent.models.segments.encode_segments` calls)."""
        self.backend.no_truncation()
        self.backend.no_padding()
        encodings = self.backend.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        return {"input_ids": [encoding.ids for encoding in encodings]}

    def padded(self, texts: Sequence[str], max_length: int) -> dict[str, np.ndarray]:
        """``input_ids`` and ``attention_mask`` (int64) of HF's ``tokenizer(texts,
        padding=True, truncation=True, max_length=max_length)``: special tokens added, each
        text cut to ``max_length`` tokens, padded to the longest."""
        self.backend.enable_truncation(max_length, direction=self.truncation_side)
        self.backend.enable_padding(
            direction=self.padding_side, pad_id=self.pad_token_id, pad_token=self.pad_token
        )
        encodings = self.backend.encode_batch(list(texts))
        return {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }


class _OnnxModel(As2Ranker):
    """An onnxruntime session (CPU), the folder's tokenizer and its :class:`OnnxConfig`."""

    def __init__(self, session, tokenizer: FastTokenizer, config: OnnxConfig) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.config = config
        self.contextual = config.contextual
        self.input_names = [node.name for node in session.get_inputs()]

    @classmethod
    def from_folder(cls, path: str | Path, threads: int | None = None):
        """Load an exported folder; ``threads`` sets onnxruntime's intra-op threads."""
        try:
            import onnxruntime
        except ImportError:
            raise ModelFolderError(
                "an ONNX export needs onnxruntime: pip install 'ctxsent[onnx]'", path=path
            ) from None
        config = read_config(path)
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            str(Path(path) / ONNX_MODEL), options, providers=["CPUExecutionProvider"]
        )
        return cls(session, FastTokenizer(path), config)

    def run(self, output: str, batch: dict[str, np.ndarray]) -> np.ndarray:
        """The graph's ``output`` for a padded batch (the inputs it takes, by name)."""
        return self.session.run([output], {name: batch[name] for name in self.input_names})[0]


class OnnxRanker(_OnnxModel):
    """Scores AS2 records with an exported cross-encoder (pairwise or contextual)."""

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """One score per record, in input order, in batches of similar length; a contextual model
        reads ``previous`` and ``next`` joined by a space as its third segment, as in torch."""
        columns = [[r.question for r in records], [r.candidate for r in records]]
        if self.contextual:
            columns.append([" ".join(filter(None, (r.previous, r.next))) for r in records])
        encoded = encode_segments(self.tokenizer, columns, self.config.max_length)
        order = np.argsort([-len(ids) for ids, _ in encoded], kind="stable")
        scores = np.empty(len(records), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = pad_arrays([encoded[i] for i in rows], self.tokenizer.pad_token_id)
            scores[rows] = self.run("score", batch)
        return scores


class OnnxBiEncoder(_OnnxModel):
    """An exported bi-encoder: an :class:`~ctxsent.protocols.Encoder` (mean-pooled
    embeddings, L2-normalised by default) and a ranker by the cosine of a record's question
    and candidate embeddings, as :class:`~ctxsent.models.bi_encoder.BiEncoderRanker`."""

    @property
    def dim(self) -> int:
        return int(self.session.get_outputs()[0].shape[-1])

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        normalize: bool = True,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """Embeddings ``(len(texts), dim)`` float32 in input order: the graph's ``embedding``
        (normalised) or, with ``normalize=False``, its ``pooled`` output. ``texts`` may be
        MTEB 2's batches, and ``options`` MTEB's keyword arguments, which do not change the
        embeddings (:func:`~ctxsent.protocols.encode_inputs`); no progress bar is shown."""
        texts, _ = encode_inputs(texts, options)
        output = "embedding" if normalize else "pooled"
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for rows in length_sorted_chunks(texts, batch_size):
            batch = self.tokenizer.padded([texts[i] for i in rows], self.config.max_length)
            out[rows] = self.run(output, batch)
        return out

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Cosine of each record's question and candidate, in input order; each distinct
        text is embedded once."""
        return cosine_scores(records, lambda texts: self.encode(texts, batch_size))
