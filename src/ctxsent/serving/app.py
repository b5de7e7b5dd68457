"""The HTTP service: ``POST /rank``, ``POST /encode``, ``GET /health``, docs at ``/docs``.

``create_app(model)`` serves a saved ctxsent ranker folder, a built-in spec
accepted by :func:`ctxsent.models.baseline_rankers.load_ranker` (``bm25``,
``bi-encoder[:BACKBONE]``) or a model object. Concurrent requests are scored
together by a :class:`~ctxsent.serving.batching.MicroBatcher`; each request's
candidates carry their own question id, so a cascade prunes every question
on its own and a request gets the scores it would get alone (up to float
rounding from different padding). Limits: :mod:`ctxsent.serving.limits`.
"""

from __future__ import annotations

import inspect
from collections.abc import Hashable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from itertools import count
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, model_validator

from ctxsent.errors import InputError
from ctxsent.serving.batching import MicroBatcher
from ctxsent.serving.limits import RequestTooLarge, ServeLimits, check_count, check_texts
from ctxsent.tasks.as2_records import As2Record
from ctxsent.text import neighbours, split_sentences


class Candidate(BaseModel):
    """A candidate answer sentence with the sentences around it (for contextual models)."""

    text: str
    previous: str = ""
    next: str = ""


class RankRequest(BaseModel):
    """A question with ``candidates`` (strings or objects with context) or a ``document``."""

    question: str
    candidates: list[str | Candidate] | None = None
    document: str | None = Field(None, description="text split into sentences as candidates")
    top_k: int | None = Field(None, ge=1, description="answers to return (default: all)")
    alpha: float | list[float] | None = Field(
        None, description="cascade drop rate, or one per non-final exit"
    )

    @model_validator(mode="after")
    def _one_source(self) -> RankRequest:
        if (self.candidates is None) == (self.document is None):
            raise ValueError("give exactly one of 'candidates' and 'document'")
        return self


class Answer(BaseModel):
    index: int
    candidate: str
    score: float
    previous: str = ""
    next: str = ""


class RankResponse(BaseModel):
    question: str
    answers: list[Answer]


class EncodeRequest(BaseModel):
    texts: list[str] = Field(min_length=1)
    normalize: bool = True


class EncodeResponse(BaseModel):
    embeddings: list[list[float]]
    dim: int


@dataclass(frozen=True)
class BatchConfig:
    #: Milliseconds the batcher waits for more requests after the oldest waiting one.
    max_wait_ms: float = 5.0
    #: Records per forward pass inside one model call.
    model_batch_size: int = 64


class ModelRunner:
    """Runs one batched model call: ``("rank", alpha)`` scores records, ``("encode", norm)``."""

    def __init__(self, model: Any, batch_size: int) -> None:
        self.model = model
        self.batch_size = batch_size
        self.can_rank = callable(getattr(model, "predict", None))
        self.encoder = model if hasattr(model, "encode") else getattr(model, "encoder", None)
        self.staged = hasattr(model, "num_stages")  # cascade or sequential: takes an alpha
        self.encode_options = _raw_encode_options(self.encoder, batch_size)

    def __call__(self, key: Hashable, items: list[Any]) -> Sequence[Any]:
        task, option = key
        if task == "encode":
            return self.embed(list(items), normalize=option)
        if self.staged:
            return self.model.predict(items, self.batch_size, alpha=option)
        return self.model.predict(items, self.batch_size)

    def embed(self, texts: list[str], normalize: bool) -> np.ndarray:
        """The encoder's raw embeddings of ``texts``, L2-normalised here when ``normalize``."""
        embeddings = np.asarray(self.encoder.encode(texts, **self.encode_options), np.float32)
        if normalize:
            norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
            embeddings = embeddings / np.maximum(norms, np.finfo(np.float32).tiny)
        return embeddings

    def check_alpha(self, alpha: float | list[float] | None) -> Hashable:
        """The alpha as a hashable batching key; an :class:`InputError` if it cannot apply."""
        if alpha is None:
            return None
        if not self.staged:
            raise InputError("alpha applies to cascade models only", field="alpha")
        from ctxsent.models.staged import resolve_alphas

        return tuple(resolve_alphas(alpha, self.model.num_stages))


def _raw_encode_options(encoder: Any, batch_size: int) -> dict[str, Any]:
    """Keyword arguments for ``encoder.encode`` that ask for raw embeddings in batches.

    Encoders differ in their ``encode`` options (the bi-encoder normalises by default; the
    Cross-Thought and word-level encoders return raw vectors and take no ``normalize``), so
    the service asks each for its raw embeddings and normalises them in one place.
    """
    if encoder is None:
        return {}
    accepted = inspect.signature(encoder.encode).parameters
    options = {"batch_size": batch_size, "normalize": False}
    return {name: value for name, value in options.items() if name in accepted}


def merges_records(model: Any) -> bool:
    """Whether a record's score is independent of the other records in the call."""
    from ctxsent.models.baseline_rankers import BiEncoderRanker
    from ctxsent.models.transformer_ranker import TransformerRanker

    return isinstance(model, TransformerRanker | BiEncoderRanker) or not hasattr(model, "predict")


def _describe(model: Any) -> dict:
    config = getattr(model, "config", None)
    return {
        "model": type(model).__name__,
        "kind": getattr(model, "kind", None),
        "contextual": bool(getattr(model, "contextual", False)),
        "config": asdict(config)
        if config is not None and hasattr(config, "__dataclass_fields__")
        else None,
    }


def create_app(
    model: str | Any,
    limits: ServeLimits | None = None,
    batching: BatchConfig | None = None,
) -> FastAPI:
    """A FastAPI app serving ``model`` (a spec for ``load_ranker`` or a loaded model)."""
    limits = limits or ServeLimits()
    batching = batching or BatchConfig()
    name = model if isinstance(model, str) else type(model).__name__
    if isinstance(model, str):
        from ctxsent.models.baseline_rankers import load_ranker

        model = load_ranker(model)
    runner = ModelRunner(model, batching.model_batch_size)
    batcher = MicroBatcher(
        runner, limits.max_batch, batching.max_wait_ms, merge=merges_records(model)
    )
    request_ids = count()

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        await batcher.close()

    app = FastAPI(
        title="ctxsent",
        summary="Answer sentence selection: rank candidate answers for a question.",
        lifespan=lifespan,
    )
    app.state.model, app.state.batcher, app.state.limits = model, batcher, limits

    @app.middleware("http")
    async def body_limit(request: Request, call_next):
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > limits.max_body_bytes:
            message = f"request body of {length} bytes, more than {limits.max_body_bytes}"
            return JSONResponse({"error": message}, status_code=413)
        return await call_next(request)

    @app.exception_handler(RequestTooLarge)
    async def too_large(_: Request, err: RequestTooLarge):
        return JSONResponse({"error": str(err)}, status_code=413)

    @app.exception_handler(InputError)
    async def bad_input(_: Request, err: InputError):
        return JSONResponse({"error": str(err)}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def malformed(_: Request, err: RequestValidationError):
        problems = [
            {"field": ".".join(str(part) for part in e["loc"]), "problem": e["msg"]}
            for e in err.errors()
        ]
        first = problems[0] if problems else {"field": "body", "problem": "invalid"}
        message = f"invalid request: field '{first['field']}': {first['problem']}"
        return JSONResponse({"error": message, "problems": problems}, status_code=422)

    @app.exception_handler(Exception)
    async def internal(_: Request, err: Exception):
        return JSONResponse(
            {"error": f"internal error ({type(err).__name__}): {err}"}, status_code=500
        )

    @app.get("/health")
    async def health() -> dict:
        """Liveness, what is served, and batching counters."""
        return {
            "status": "ok",
            "name": name,
            **_describe(model),
            "rank": runner.can_rank,
            "encode": runner.encoder is not None,
            "limits": asdict(limits),
            "batching": asdict(batcher.stats),
        }

    @app.post("/rank", response_model=RankResponse)
    async def rank(request: RankRequest) -> RankResponse:
        """Score the candidates (or the document's sentences) for the question, best first."""
        if not runner.can_rank:
            raise InputError("this model cannot rank; use /encode", field="model")
        if not request.question.strip():
            raise InputError("the question is empty", field="question")
        alpha = runner.check_alpha(request.alpha)
        candidates = _candidates(request, limits)
        check_texts([("question", request.question)], limits.max_chars)
        question_id = f"request-{next(request_ids)}"
        records = [
            As2Record(question_id, request.question, c.text, 0, c.previous, c.next)
            for c in candidates
        ]
        scores = np.asarray(await batcher.submit(("rank", alpha), records), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[: request.top_k or len(records)]
        answers = [
            Answer(
                index=int(i),
                candidate=candidates[i].text,
                score=float(scores[i]),
                previous=candidates[i].previous,
                next=candidates[i].next,
            )
            for i in order
        ]
        return RankResponse(question=request.question, answers=answers)

    @app.post("/encode", response_model=EncodeResponse)
    async def encode(request: EncodeRequest) -> EncodeResponse:
        """Sentence embeddings (L2-normalised unless ``normalize`` is false)."""
        if runner.encoder is None:
            raise InputError("this model has no sentence encoder; use /rank", field="model")
        check_count(len(request.texts), limits.max_candidates, "texts", "texts")
        check_texts((("texts", t) for t in request.texts), limits.max_chars)
        rows = await batcher.submit(("encode", request.normalize), request.texts)
        return EncodeResponse(embeddings=[r.tolist() for r in rows], dim=len(rows[0]))

    return app


def _candidates(request: RankRequest, limits: ServeLimits) -> list[Candidate]:
    """The request's candidates with context, checked against ``limits``."""
    if request.document is not None:
        check_texts([("document", request.document)], limits.max_document_chars)
        sentences = split_sentences(request.document)
        if not sentences:
            raise InputError("the document contains no sentences", field="document")
        check_count(len(sentences), limits.max_candidates, "sentences", "document")
        check_texts((("document", s) for s in sentences), limits.max_chars)
        return [
            Candidate(text=s, previous=previous, next=following)
            for s, (previous, following) in zip(sentences, neighbours(sentences), strict=True)
        ]
    check_count(len(request.candidates), limits.max_candidates, "candidates", "candidates")
    candidates = [c if isinstance(c, Candidate) else Candidate(text=c) for c in request.candidates]
    for i, c in enumerate(candidates):
        check_texts(
            [(f"candidates.{i}.{part}", getattr(c, part)) for part in ("text", "previous", "next")],
            limits.max_chars,
        )
    return candidates
