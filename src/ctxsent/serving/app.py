"""The HTTP service: ``POST /rank``, ``/rerank``, ``/encode``, ``GET /health``, docs at ``/docs``.

``create_app(model)`` serves a saved ctxsent ranker folder, a built-in spec
accepted by :func:`ctxsent.resolver.load_ranker` (``bm25``,
``bi-encoder[:BACKBONE]``) or a model object. Concurrent requests are scored
together by a :class:`~ctxsent.serving.batching.MicroBatcher`, and large
requests are split into chunks (at most ``max_batch`` candidates and
``chunk_chars`` characters) that take turns with other requests; each
request's candidates carry their own question id, so a cascade prunes every
question on its own and a request gets the scores it would get alone (up to
float rounding from different padding). Models whose scores depend on the
other records of a call (BM25, Cross-Thought) or of the request (cascades)
are never split: see :func:`grouping`.

A request is answered within ``timeout_s`` or gets 504, and its model work
is dropped when its client disconnects. Optional: a bearer key on every
endpoint but ``/health`` and the docs, and CORS origins. Limits:
:mod:`ctxsent.serving.limits`; ASGI middleware: :mod:`ctxsent.serving.middleware`.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Hashable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from itertools import count
from typing import Any, TypeVar

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect

from ctxsent.errors import InputError
from ctxsent.models.ranker_base import document_candidates, question_records, ranking
from ctxsent.protocols import Encoder, Ranker, StagedRanker, SteppedRanker
from ctxsent.serving.batching import Grouping, MicroBatcher
from ctxsent.serving.limits import (
    RequestTimeout,
    RequestTooLarge,
    ServeLimits,
    check_count,
    check_texts,
)
from ctxsent.serving.middleware import BearerAuth, BodyGuard, error_response
from ctxsent.tasks.as2_records import As2Record

T = TypeVar("T")
#: Requests take no fields but their own: a misspelt option is an error (422), not ignored.
STRICT = ConfigDict(extra="forbid")


class Candidate(BaseModel):
    """A candidate answer sentence with the sentences around it (for contextual models)."""

    model_config = STRICT
    text: str
    previous: str = ""
    next: str = ""


class RankRequest(BaseModel):
    """A question with ``candidates`` (strings or objects with context) or a ``document``."""

    model_config = STRICT
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


class RerankDocument(BaseModel):
    model_config = STRICT
    text: str


class RerankRequest(BaseModel):
    """The rerank request shape of hosted rerank APIs (Cohere, Jina), which RAG frameworks
    send: ``model`` is accepted for compatibility and ignored (the service has one)."""

    model_config = STRICT
    query: str
    documents: list[str | RerankDocument] = Field(min_length=1)
    top_n: int | None = Field(None, ge=1, description="results to return (default: all)")
    return_documents: bool = False
    model: str | None = Field(None, description="ignored: the served model answers")


class RerankResult(BaseModel):
    index: int
    relevance_score: float
    document: RerankDocument | None = None


class RerankResponse(BaseModel):
    results: list[RerankResult]


class EncodeRequest(BaseModel):
    model_config = STRICT
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

    def __post_init__(self) -> None:
        if not 0 <= self.max_wait_ms < math.inf:  # NaN too
            raise ValueError(f"max_wait_ms must be finite and >= 0, got {self.max_wait_ms!r}")
        if self.model_batch_size < 1:
            raise ValueError(f"model_batch_size must be at least 1, got {self.model_batch_size!r}")


class ModelRunner:
    """Runs one batched model call: ``("rank", alpha)`` scores records, ``("encode", norm)``."""

    def __init__(self, model: Any, batch_size: int, chunk_chars: float = math.inf) -> None:
        self.model = model
        self.batch_size = batch_size
        self.chunk_chars = chunk_chars
        self.can_rank = isinstance(model, Ranker)
        self.encoder = model if isinstance(model, Encoder) else None
        self.staged = isinstance(model, StagedRanker)  # cascade or sequential: takes an alpha
        self.encode_options = _raw_encode_options(self.encoder, batch_size)

    def __call__(self, key: Hashable, items: list[Any]) -> Sequence[Any]:
        task, option = key
        if task == "encode":
            return self.embed(list(items), normalize=option)
        options = {"alpha": option} if self.staged else {}
        if isinstance(self.model, SteppedRanker):  # in steps: requests take turns
            return self.model.predict_steps(
                items, self.batch_size, max_chars=self.chunk_chars, **options
            )
        return self.model.predict(items, self.batch_size, **options)

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


def grouping(model: Any) -> Grouping:
    """How the batcher may group ``model``'s records across requests and within one.

    Cross-encoders and bi-encoders score each record on its own, and encoders embed each
    text on its own: small requests share calls and large ones are split. A cascade prunes
    each request's candidates together: requests share calls but are never split by items;
    a cascade and BM25 run in steps (:meth:`ModelRunner.__call__`), so a large request
    takes turns. Other
    rankers (BM25's IDF and Cross-Thought's attention over the candidates of a call, a
    sequential ranker) score each request alone and whole.
    """
    from ctxsent.models.bi_encoder import BiEncoderRanker
    from ctxsent.models.transformer_ranker import TransformerRanker

    if isinstance(model, Ranker) and not isinstance(model, TransformerRanker | BiEncoderRanker):
        return Grouping.ALONE
    return Grouping.WHOLE if isinstance(model, StagedRanker) else Grouping.SPLIT


def characters(item: As2Record | str) -> int:
    """The characters of a record (question, candidate and context) or a text to encode."""
    return len(item) if isinstance(item, str) else item.characters


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
    api_key: str | None = None,
    cors_origins: Sequence[str] = (),
    precision: str = "auto",
    accelerator: str = "cpu",
) -> FastAPI:
    """A FastAPI app serving ``model`` (a spec for ``load_ranker``, loaded in ``precision`` on
    ``accelerator``, or a loaded model).

    With ``api_key``, every endpoint but ``/health`` and the docs needs
    ``Authorization: Bearer API_KEY``; ``cors_origins`` are the web origins whose pages
    may call the service (none by default).
    """
    limits = limits or ServeLimits()
    batching = batching or BatchConfig()
    name = model if isinstance(model, str) else type(model).__name__
    if isinstance(model, str):
        from ctxsent.resolver import load_ranker

        model = load_ranker(model, precision, accelerator)
    runner = ModelRunner(model, batching.model_batch_size, limits.chunk_chars)
    batcher = MicroBatcher(
        runner,
        limits.max_batch,
        batching.max_wait_ms,
        grouping(model),
        cost=characters,
        max_chunk_cost=limits.chunk_chars,
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
    # the last added is the outermost: CORS answers preflights, then keys, then body limits
    app.add_middleware(BodyGuard, max_bytes=limits.max_body_bytes, timeout_s=limits.read_timeout_s)
    if api_key is not None:
        docs = [app.docs_url, app.swagger_ui_oauth2_redirect_url, app.redoc_url, app.openapi_url]
        app.add_middleware(BearerAuth, key=api_key, open_paths={"/health", *docs} - {None})
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
        )

    async def answer(request: Request, work: Awaitable[T]) -> T:
        """``work``'s result, cancelled when the client disconnects or the deadline passes."""
        task = asyncio.ensure_future(work)
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            done, _ = await asyncio.wait(
                {task, gone}, timeout=limits.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            task.cancel()  # no-op when it is done; else its queued model work is dropped
            gone.cancel()
        if task in done:
            return task.result()
        raise ClientDisconnect() if gone in done else RequestTimeout(limits.timeout_s)

    @app.exception_handler(RequestTooLarge)
    async def too_large(_: Request, err: RequestTooLarge):
        return error_response(413, str(err))

    @app.exception_handler(InputError)
    async def bad_input(_: Request, err: InputError):
        return error_response(422, str(err))

    @app.exception_handler(RequestTimeout)
    async def timed_out(_: Request, err: RequestTimeout):
        return error_response(504, str(err))

    @app.exception_handler(ClientDisconnect)
    async def client_gone(_: Request, err: ClientDisconnect):
        return error_response(499, "the client closed the connection")  # read by no one

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, err: HTTPException):
        return error_response(err.status_code, str(err.detail), err.headers)

    @app.exception_handler(RequestValidationError)
    async def malformed(_: Request, err: RequestValidationError):
        problems = [
            {"field": ".".join(str(part) for part in e["loc"]), "problem": e["msg"]}
            for e in err.errors()
        ]
        # the deepest problem names the field: in a candidate object rather than "not a str"
        deepest = max(problems, key=lambda p: p["field"].count("."), default=None)
        first = deepest or {"field": "body", "problem": "invalid"}
        message = f"invalid request: field '{first['field']}': {first['problem']}"
        return JSONResponse({"error": message, "problems": problems}, status_code=422)

    @app.exception_handler(Exception)
    async def internal(_: Request, err: Exception):
        return error_response(500, f"internal error ({type(err).__name__}): {err}")

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
            "batching": {**asdict(batcher.stats), "waiting": batcher.waiting},
        }

    async def ranked(
        http: Request, question: str, texts, context, alpha, top: int | None, field="question"
    ):
        """The candidates ``texts`` of ``question``, best first (the first ``top``); errors
        name the question by the request's ``field``."""
        check_texts([(field, question)], limits.max_chars)
        if not question.strip():
            raise InputError(f"the {field} is empty", field=field)
        records = question_records(f"request-{next(request_ids)}", question, texts, context)
        scores = await answer(http, batcher.submit(("rank", alpha), records))
        return ranking(records, scores, top)

    @app.post("/rank", response_model=RankResponse)
    async def rank(request: RankRequest, http: Request) -> RankResponse:
        """Score the candidates (or the document's sentences) for the question, best first."""
        if not runner.can_rank:
            raise InputError("this model cannot rank; use /encode", field="model")
        alpha = runner.check_alpha(request.alpha)
        texts, context = _candidates(request, limits)
        answers = await ranked(http, request.question, texts, context, alpha, request.top_k)
        return RankResponse(question=request.question, answers=[Answer(**vars(a)) for a in answers])

    @app.post("/rerank", response_model=RerankResponse, response_model_exclude_none=True)
    async def rerank(request: RerankRequest, http: Request) -> RerankResponse:
        """Hosted rerank APIs' shape: ``query`` + ``documents`` -> ``results`` with ``index``
        and ``relevance_score``, best first (each document is one candidate, no context)."""
        if not runner.can_rank:
            raise InputError("this model cannot rank; use /encode", field="model")
        texts = [d if isinstance(d, str) else d.text for d in request.documents]
        check_count(len(texts), limits.max_candidates, "documents", "documents")
        check_texts(((f"documents.{i}", t) for i, t in enumerate(texts)), limits.max_chars)
        answers = await ranked(http, request.query, texts, None, None, request.top_n, "query")
        return RerankResponse(
            results=[
                RerankResult(
                    index=a.index,
                    relevance_score=a.score,
                    document=RerankDocument(text=a.candidate) if request.return_documents else None,
                )
                for a in answers
            ]
        )

    @app.post("/encode", response_model=EncodeResponse)
    async def encode(request: EncodeRequest, http: Request) -> EncodeResponse:
        """Sentence embeddings (L2-normalised unless ``normalize`` is false)."""
        if runner.encoder is None:
            raise InputError("this model has no sentence encoder; use /rank", field="model")
        check_count(len(request.texts), limits.max_candidates, "texts", "texts")
        check_texts((("texts", t) for t in request.texts), limits.max_chars)
        rows = await answer(http, batcher.submit(("encode", request.normalize), request.texts))
        return EncodeResponse(embeddings=[r.tolist() for r in rows], dim=len(rows[0]))

    return app


async def _disconnected(request: Request) -> None:
    """Return when the client of ``request`` (whose body has been read) disconnects."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _candidates(
    request: RankRequest, limits: ServeLimits
) -> tuple[list[str], list[tuple[str, str]]]:
    """The request's candidate texts and their (previous, next) context, checked against
    ``limits``; a document is split as :meth:`As2Ranker.rank_document` splits it."""
    if request.document is not None:
        check_texts([("document", request.document)], limits.max_document_chars)
        sentences, context = document_candidates(request.document)
        check_count(len(sentences), limits.max_candidates, "sentences", "document")
        check_texts((("document", s) for s in sentences), limits.max_chars)
        return sentences, context
    check_count(len(request.candidates), limits.max_candidates, "candidates", "candidates")
    candidates = [c if isinstance(c, Candidate) else Candidate(text=c) for c in request.candidates]
    for i, c in enumerate(candidates):
        check_texts(
            [(f"candidates.{i}.{part}", getattr(c, part)) for part in ("text", "previous", "next")],
            limits.max_chars,
        )
    return [c.text for c in candidates], [(c.previous, c.next) for c in candidates]
