"""One grammar for naming a model, used by every command, the service, evaluation and export.

``ctxsent.load(spec)`` returns the object a spec names:

=========================  ==========================================================
spec                       model
=========================  ==========================================================
``FOLDER``                 a saved ctxsent model (any kind; its manifest says which)
                           or an ONNX export (:mod:`ctxsent.onnx_runtime`, no torch)
``bm25``                   Okapi BM25 ranker (no training)
``bi-encoder[:BACKBONE]``  zero-shot bi-encoder: mean-pooled embeddings, cosine; BACKBONE
                           is a HF model folder, a cached hub id or all-MiniLM-L6-v2
                           (the default)
``st:PATH``                a sentence-transformers ``SentenceTransformer`` (ranks by cosine)
``ce:PATH``                a sentence-transformers ``CrossEncoder`` (ranks by its score)
``glove-bow``              mean of GloVe 6B 50-d word vectors (encoder)
``bow:PATH``               the same with any word-vector file or folder (encoder)
``random``                 a MiniLM-shaped transformer with untrained weights, seed 0
                           (the random-encoder control)
``minilm``                 the built-in backbone's name: the same as ``bi-encoder``
=========================  ==========================================================

What a model can do is asked of it by :mod:`ctxsent.protocols`: :func:`load_as` refuses a
model that is not, say, a :class:`~ctxsent.protocols.Ranker`, naming what it is instead.
Anything else is read as a model folder; what is not one gets a one-line
:class:`~ctxsent.errors.ModelFolderError` saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxsent.errors import InputError, ModelFolderError

NAMES = "bm25, bi-encoder[:BACKBONE], st:PATH, ce:PATH, glove-bow, bow:PATH, random, minilm"


def load(spec: str | Path) -> Any:
    """The model ``spec`` names (see the module docstring)."""
    from ctxsent.models.backbones import is_builtin_backbone
    from ctxsent.saving import is_model_folder
    from ctxsent.saving import load as load_folder

    spec = str(spec)
    prefix, _, rest = spec.partition(":")
    if spec == "bm25":
        from ctxsent.models.baseline_rankers import BM25Ranker

        return BM25Ranker()
    if spec in ("glove-bow", "random") or (prefix == "bow" and rest):
        return _word_or_random_encoder(spec, rest)
    if prefix in ("st", "ce") and rest:
        from ctxsent.models.st_adapters import CrossEncoderAdapter, SentenceTransformerAdapter

        adapter = SentenceTransformerAdapter if prefix == "st" else CrossEncoderAdapter
        return adapter.from_pretrained(rest)
    if spec == "bi-encoder" or (prefix == "bi-encoder" and rest) or is_builtin_backbone(spec):
        from ctxsent.models.backbones import DEFAULT_BACKBONE
        from ctxsent.models.baseline_rankers import BiEncoderRanker

        return BiEncoderRanker(spec if is_builtin_backbone(spec) else rest or DEFAULT_BACKBONE)
    path = Path(spec)
    if not path.exists():
        raise ModelFolderError(f"not a folder, nor a model name ({NAMES})", path=path)
    from ctxsent.onnx_runtime import is_onnx_folder, load_onnx

    if is_onnx_folder(path):
        return load_onnx(path)
    if (path / "config.json").is_file() and not is_model_folder(path):
        raise ModelFolderError(
            "not a ctxsent model folder but a Hugging Face one: pass bi-encoder:PATH "
            "(mean-pooled embeddings, cosine), or st:PATH / ce:PATH for a sentence-transformers "
            "bi-encoder / CrossEncoder",
            path=path,
        )
    return load_folder(path)


def load_as(spec: str | Path, protocol: type, what: str) -> Any:
    """:func:`load`, refusing a model that is not a ``protocol`` (``what`` it must do)."""
    model = load(spec)
    if not isinstance(model, protocol):
        raise InputError(f"a {type(model).__name__} cannot {what}", path=str(spec))
    return model


def load_ranker(spec: str | Path, precision: str = "auto", accelerator: str = "cpu") -> Any:
    """A :class:`~ctxsent.protocols.Ranker` named by ``spec``, inferring in ``precision``
    (:func:`~ctxsent.models.precision.set_precision`) on ``accelerator`` (``auto``: a GPU
    if one is visible)."""
    from ctxsent.models.precision import on_accelerator, set_precision
    from ctxsent.protocols import Ranker

    model = set_precision(load_as(spec, Ranker, "rank answers"), precision)
    return on_accelerator(model, accelerator)


def load_encoder(spec: str | Path) -> Any:
    """An :class:`~ctxsent.protocols.Encoder` named by ``spec``."""
    from ctxsent.protocols import Encoder

    return load_as(spec, Encoder, "embed sentences (it has no encode())")


def _word_or_random_encoder(spec: str, path: str) -> Any:
    if spec == "random":
        from ctxsent.models.backbones import DEFAULT_BACKBONE
        from ctxsent.models.bi_encoder import BiEncoder

        return BiEncoder.random_init(DEFAULT_BACKBONE, seed=0)
    from ctxsent.models.bag_of_words import BagOfWordsEncoder, WordVectors

    return (
        BagOfWordsEncoder.glove()
        if spec == "glove-bow"
        else BagOfWordsEncoder(WordVectors.load(path))
    )
