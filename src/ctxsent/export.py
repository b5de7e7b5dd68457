"""Export models for other runtimes: sentence-transformers folders and ONNX.

* :func:`export_sentence_transformer`: a :class:`~ctxsent.models.bi_encoder.BiEncoder` as a
  sentence-transformers folder (Transformer, mean Pooling, Normalize), the layout
  all-MiniLM-L6-v2 itself ships in; ``SentenceTransformer(folder).encode`` gives the
  embeddings of ``BiEncoder.encode``.
* :func:`export_cross_encoder`: a pairwise :class:`CrossEncoderRanker` as a
  sentence-transformers ``CrossEncoder`` folder whose ``predict`` returns our logits
  (identity activation). Texts longer than ``max_length`` are truncated by HF's
  longest-first rule there, by :mod:`ctxsent.models.segments` here.
* :func:`export_onnx`: a transformer ranker's scoring network as ``model.onnx`` (dynamic
  batch and sequence axes) with its tokenizer; :class:`OnnxRanker` scores records with
  onnxruntime exactly as the ranker does (same segments, same truncation).

All folders are written atomically: a crash never leaves one that looks complete.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from ctxsent.errors import InputError, ModelFolderError
from ctxsent.io import atomic_path
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.tasks.as2_records import As2Record

ONNX_CONFIG = "onnx_ranker.json"
ONNX_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def _write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")


def export_sentence_transformer(encoder, out: str | Path) -> Path:
    """Write ``encoder`` (a BiEncoder) as a sentence-transformers folder at ``out``."""
    with atomic_path(out) as staged:
        staged.mkdir()
        encoder.transformer.save_pretrained(staged, safe_serialization=True)
        encoder.tokenizer.save_pretrained(staged)
        modules = [
            ("", "Transformer"),
            ("1_Pooling", "Pooling"),
            ("2_Normalize", "Normalize"),
        ]
        _write_json(
            staged / "modules.json",
            [
                {
                    "idx": i,
                    "name": str(i),
                    "path": path,
                    "type": f"sentence_transformers.models.{t}",
                }
                for i, (path, t) in enumerate(modules)
            ],
        )
        _write_json(
            staged / "sentence_bert_config.json",
            {"max_seq_length": encoder.max_length, "do_lower_case": False},
        )
        (staged / "1_Pooling").mkdir()
        _write_json(
            staged / "1_Pooling" / "config.json",
            {
                "word_embedding_dimension": encoder.dim,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
        )
        (staged / "2_Normalize").mkdir()
        _write_json(staged / "config_sentence_transformers.json", {"similarity_fn_name": "cosine"})
    return Path(out)


def export_cross_encoder(ranker, out: str | Path) -> Path:
    """Write a pairwise cross-encoder ranker as a sentence-transformers CrossEncoder folder."""
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    if not isinstance(ranker, CrossEncoderRanker):
        raise InputError(f"needs a cross-encoder ranker, got {type(ranker).__name__}")
    if ranker.contextual:
        raise InputError(
            "a CrossEncoder reads (question, candidate) pairs; this model is contextual"
        )
    with atomic_path(out) as staged:
        staged.mkdir()
        config = ranker.model.config
        config.sentence_transformers = {"activation_fn": "torch.nn.modules.linear.Identity"}
        try:
            ranker.model.save_pretrained(staged, safe_serialization=True)
        finally:
            del config.sentence_transformers
        max_length = ranker.tokenizer.model_max_length
        ranker.tokenizer.model_max_length = ranker.config.max_length
        try:
            ranker.tokenizer.save_pretrained(staged)
        finally:
            ranker.tokenizer.model_max_length = max_length
    return Path(out)


@dataclass
class OnnxConfig:
    kind: str
    contextual: bool
    max_length: int


def export_onnx(ranker, out: str | Path, opset: int = 17) -> Path:
    """Write a transformer ranker's scoring network to ``out/model.onnx`` with its tokenizer."""
    import torch

    from ctxsent.models.segments import pad_batch
    from ctxsent.models.transformer_ranker import TransformerRanker

    if not isinstance(ranker, TransformerRanker):
        raise InputError(f"needs a transformer ranker, got {type(ranker).__name__}")

    class Scorer(torch.nn.Module):
        """The ranker as a function of the three input tensors, as the exporter wants it."""

        def __init__(self) -> None:
            super().__init__()
            self.ranker = ranker

        def forward(self, input_ids, token_type_ids, attention_mask):
            names = dict(zip(ONNX_INPUTS, (input_ids, token_type_ids, attention_mask), strict=True))
            return self.ranker(names)

    was_training = ranker.training
    ranker.eval()
    sample = [As2Record("q", "what is exported?", "an onnx graph of the ranker.", 0, "a", "b")] * 2
    encoded = ranker.encoded_chunks(sample)
    batch = pad_batch(next(encoded)[1], ranker.tokenizer.pad_token_id)
    axes = {name: {0: "batch", 1: "sequence"} for name in ONNX_INPUTS}
    try:
        with atomic_path(out) as staged, torch.inference_mode():
            staged.mkdir()
            torch.onnx.export(
                Scorer(),
                tuple(batch[name] for name in ONNX_INPUTS),
                str(staged / "model.onnx"),
                input_names=list(ONNX_INPUTS),
                output_names=["score"],
                dynamic_axes={**axes, "score": {0: "batch"}},
                opset_version=opset,
                dynamo=False,
            )
            ranker.tokenizer.save_pretrained(staged)
            config = OnnxConfig(ranker.kind, ranker.contextual, ranker.config.max_length)
            _write_json(staged / ONNX_CONFIG, asdict(config))
    finally:
        ranker.train(was_training)
    return Path(out)


class OnnxRanker(As2Ranker):
    """Scores AS2 records with an exported ``model.onnx`` on onnxruntime (CPU)."""

    def __init__(self, session, tokenizer, config: OnnxConfig) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.config = config
        self.contextual = config.contextual

    @classmethod
    def from_folder(cls, path: str | Path, threads: int | None = None) -> OnnxRanker:
        import onnxruntime
        from transformers import AutoTokenizer

        path = Path(path)
        if not (path / "model.onnx").is_file() or not (path / ONNX_CONFIG).is_file():
            raise ModelFolderError(
                f"not an exported ONNX ranker (model.onnx, {ONNX_CONFIG})", path=path
            )
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            str(path / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        config = OnnxConfig(**json.loads((path / ONNX_CONFIG).read_text()))
        return cls(session, AutoTokenizer.from_pretrained(path), config)

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """One score per record, in input order; batches of similar length, padded per batch."""
        from ctxsent.models.segments import encode_segments, pad_batch

        columns = [[r.question for r in records], [r.candidate for r in records]]
        if self.contextual:
            columns.append([" ".join(filter(None, (r.previous, r.next))) for r in records])
        encoded = encode_segments(self.tokenizer, columns, self.config.max_length)
        order = np.argsort([-len(ids) for ids, _ in encoded], kind="stable")
        scores = np.empty(len(records), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = pad_batch([encoded[i] for i in rows], self.tokenizer.pad_token_id)
            feeds = {name: batch[name].numpy() for name in ONNX_INPUTS}
            scores[rows] = self.session.run(["score"], feeds)[0]
        return scores


FORMATS = ("sentence-transformers", "cross-encoder", "onnx")


def export_command(
    model: Annotated[
        str,
        typer.Argument(help="a saved ctxsent ranker folder, or bi-encoder[:BACKBONE] / HF folder"),
    ],
    out: Annotated[Path, typer.Option(help="folder to write")],
    to: Annotated[str, typer.Option(help=" | ".join(FORMATS))] = "onnx",
) -> None:
    """Export a model: an encoder to sentence-transformers, a ranker to a CrossEncoder or ONNX."""
    if to not in FORMATS:
        raise InputError(f"expected one of {', '.join(FORMATS)}, got {to!r}", field="to")
    if to == "sentence-transformers":
        from ctxsent.models.backbones import DEFAULT_BACKBONE
        from ctxsent.models.bi_encoder import BiEncoder

        backbone = model.partition(":")[2] if model.startswith("bi-encoder") else model
        export_sentence_transformer(BiEncoder.from_pretrained(backbone or DEFAULT_BACKBONE), out)
    else:
        from ctxsent.saving import load

        ranker = load(model)
        (export_cross_encoder if to == "cross-encoder" else export_onnx)(ranker, out)
    typer.echo(json.dumps({"model": model, "format": to, "out": str(out)}))
