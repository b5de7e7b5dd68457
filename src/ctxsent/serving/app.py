"""The HTTP service: ctxsent's routes and the shapes RAG stacks already call.

* ctxsent's own: ``POST /rank`` (candidates with context, or a document), ``/encode``;
* text-embeddings-inference (TEI): ``POST /rerank``, ``/embed`` (and ``/``), ``GET /info``;
* OpenAI: ``POST /v1/embeddings``; Cohere and Jina: ``POST /v1/rerank``, ``/v2/rerank``
  (and ``/rerank``);
* ``GET /health``, Prometheus ``GET /metrics``, docs at ``/docs``, ``/openapi.json``.

A model serves the routes it can (a ranker the rank routes, an encoder the embedding
routes, a bi-encoder both); any other path answers 404 naming the routes. Bodies and error
answers are declared in :mod:`ctxsent.serving.schemas`.

Concurrent requests are scored together by a :class:`~ctxsent.serving.batching.MicroBatcher`
and large ones split into chunks (``max_batch`` candidates, ``chunk_chars`` characters) that
take turns with other requests; each request's candidates carry their own question id, so
a request gets the scores it would get alone (up to float rounding from padding). Models
whose scores depend on the other records of a call or request are never split
(:func:`grouping`). A request is answered within ``timeout_s`` or gets 504, and its model
work is dropped when its client disconnects. Optional: a bearer key on every endpoint but
``/health`` and the docs, and CORS origins.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from base64 import b64encode
from collections.abc import Awaitable, Hashable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, is_dataclass
from itertools import count
from typing import Any, TypeVar
from urllib.parse import quote

import numpy as np
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect

from ctxsent import __version__
from ctxsent.errors import InputError, check_range
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
from ctxsent.serving.middleware import (
    BearerAuth,
    BodyGuard,
    RequestMetrics,
    ServiceMetrics,
    error_response,
)
from ctxsent.serving.schemas import (
    ERRORS,
    IGNORED_HEADER,
    IGNORING,
    Answer,
    Candidate,
    CohereRerank,
    Compatible,
    Embedding,
    EmbedRequest,
    EncodeRequest,
    EncodeResponse,
    Info,
    OpenAIEmbeddings,
    OpenAIEmbeddingsRequest,
    RankRequest,
    RankResponse,
    RerankDocument,
    RerankRequest,
    RerankResponse,
    RerankResult,
    TeiRank,
    Usage,
)
from ctxsent.tasks.as2_records import As2Record

T = TypeVar("T")


@dataclass(frozen=True)
class BatchConfig:
    #: Milliseconds the batcher waits for more requests after the oldest waiting one.
    max_wait_ms: float = 5.0
    #: Records per forward pass inside one model call.
    model_batch_size: int = 64

    def __post_init__(self) -> None:
        check_range(self, "max_wait_ms", 0)
        check_range(self, "model_batch_size", 1)


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
        from ctxsent.models.bi_encoder import BiEncoderRanker

        self.cosine = isinstance(model, BiEncoderRanker)
        config = getattr(model, "config", None)
        self.max_length = getattr(model, "max_length", None) or getattr(config, "max_length", None)

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

    def relevance(self, scores: Sequence[float]) -> np.ndarray:
        """Scores mapped monotonically into [0, 1] (Cohere's ``relevance_score``): the sigmoid
        (of a cross-encoder's or cascade's logit), or ``(1 + cos) / 2`` for a bi-encoder."""
        scores = np.asarray(scores, np.float64)
        return np.clip((1 + scores) / 2, 0, 1) if self.cosine else (1 + np.tanh(scores / 2)) / 2

    def tokens(self, texts: list[str]) -> int:
        """How many tokens of ``texts`` the encoder reads (words for one without a tokenizer)."""
        tokenizer = getattr(self.encoder, "tokenizer", None)
        if tokenizer is None:
            return sum(len(text.split()) for text in texts)
        ids = tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        return sum(map(len, ids))

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

    Cross-encoders, bi-encoders and encoders score each record or text on its own: requests
    share calls and large ones are split. A cascade prunes a request's candidates together:
    requests share calls but are not split (it runs in steps, so a large request takes
    turns). Other rankers (BM25's IDF, Cross-Thought's attention over a call's candidates, a
    sequential ranker) score each request alone and whole."""
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
        "config": asdict(config) if is_dataclass(config) else None,
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
    metrics = ServiceMetrics()

    def run(key: Hashable, items: list[Any]) -> Sequence[Any]:
        metrics.batch_size.observe(len(items))
        return runner(key, items)

    batcher = MicroBatcher(
        run,
        limits.max_batch,
        batching.max_wait_ms,
        grouping(model),
        cost=characters,
        max_chunk_cost=limits.chunk_chars,
    )
    metrics.queue_depth.set_function(lambda: batcher.waiting)
    request_ids = count()

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        await batcher.close()

    app = FastAPI(
        title="ctxsent",
        summary="Answer sentence selection: rank candidate answers for a question.",
        lifespan=lifespan,
        responses=ERRORS,
    )
    app.state.model, app.state.batcher, app.state.limits = model, batcher, limits
    # the last added is the outermost: metrics, CORS answers preflights, keys, body limits
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

    def answering(status: int):
        async def handler(_: Request, err: Exception):
            return error_response(status, str(err))

        return handler

    for error, status in {RequestTooLarge: 413, InputError: 422, RequestTimeout: 504}.items():
        app.add_exception_handler(error, answering(status))

    @app.exception_handler(ClientDisconnect)
    async def client_gone(_: Request, err: ClientDisconnect):
        return error_response(499, "the client closed the connection")  # read by no one

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):
        message = str(err.detail)
        if err.status_code == 404:  # the routes depend on what the model can do
            served = ", ".join(sorted(r.path for r in app.routes if isinstance(r, APIRoute)))
            message = f"no route {request.url.path}: this model ({name}) serves {served}"
        return error_response(err.status_code, message, err.headers)

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

    @app.get("/info", response_model=Info)
    async def info() -> Info:
        """TEI's service description: model, kind, input length and batch limits."""
        parameter = next(iter(getattr(model, "parameters", list)()), None)
        return Info(
            model_id=name,
            model_dtype=None if parameter is None else str(parameter.dtype).removeprefix("torch."),
            model_type={
                **({"embedding": {"pooling": "mean"}} if runner.encoder is not None else {}),
                **({"reranker": {}} if runner.can_rank else {}),
            },
            max_input_length=runner.max_length,
            max_client_batch_size=limits.max_candidates,
            max_batch_requests=limits.max_batch,
            version=__version__,
        )

    @app.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    async def prometheus() -> Response:
        """Prometheus metrics: requests by route and status, latency, batch sizes, queue."""
        return metrics.response()

    def report_ignored(response: Response, request: Compatible) -> None:
        """Name the request's fields that had no effect in the :data:`IGNORED_HEADER`."""
        if ignored := request.ignored():
            response.headers[IGNORED_HEADER] = ",".join(quote(field) for field in ignored)

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

    async def reranked(request: CohereRerank, http: Request, response: Response):
        """The ranked documents (or TEI texts) of a rerank request, with their relevance."""
        report_ignored(response, request)
        texts, field = request.texts, "documents" if request.documents else "texts"
        check_count(len(texts), limits.max_candidates, field, field)
        check_texts(((f"{field}.{i}", t) for i, t in enumerate(texts)), limits.max_chars)
        answers = await ranked(http, request.query, texts, None, None, request.top_n, "query")
        return answers, runner.relevance([a.score for a in answers])

    def cohere_results(request: CohereRerank, answers, relevance) -> RerankResponse:
        return RerankResponse(
            results=[
                RerankResult(
                    index=a.index,
                    relevance_score=r,
                    document=RerankDocument(text=a.candidate) if request.return_documents else None,
                )
                for a, r in zip(answers, relevance, strict=True)
            ]
        )

    if runner.can_rank:

        @app.post("/rank", response_model=RankResponse)
        async def rank(request: RankRequest, http: Request) -> RankResponse:
            """Score the candidates (or the document's sentences) for the question, best first."""
            alpha = runner.check_alpha(request.alpha)
            texts, context = _candidates(request, limits)
            answers = await ranked(http, request.question, texts, context, alpha, request.top_k)
            answers = [Answer(**vars(a)) for a in answers]
            return RankResponse(question=request.question, answers=answers)

        @app.post(
            "/rerank",
            response_model=RerankResponse | list[TeiRank],
            response_model_exclude_none=True,
            responses=IGNORING,
        )
        async def rerank(request: RerankRequest, http: Request, response: Response):
            """TEI's rerank (``texts`` -> a list of ``{index, score, text}``) or Cohere's
            (``documents`` -> ``{results}``, as ``/v1/rerank``), best first; each text is one
            candidate without context. Scores are 0-1 relevance unless ``raw_scores``."""
            answers, relevance = await reranked(request, http, response)
            if request.documents is not None:
                return cohere_results(request, answers, relevance)
            scores = [a.score for a in answers] if request.raw_scores else relevance
            return [
                TeiRank(index=a.index, score=s, text=a.candidate if request.return_text else None)
                for a, s in zip(answers, scores, strict=True)
            ]

        cohere = {"response_model": RerankResponse, "response_model_exclude_none": True}

        @app.post("/v1/rerank", responses=IGNORING, **cohere)
        async def rerank_v1(request: CohereRerank, http: Request, response: Response):
            """Cohere's and Jina's rerank: ``results`` with ``index`` and 0-1
            ``relevance_score`` (the sigmoid of a cross-encoder's or cascade's logit,
            ``(1 + cos) / 2`` for a bi-encoder), best first."""
            return cohere_results(request, *await reranked(request, http, response))

        app.post("/v2/rerank", summary="Rerank (Cohere's v2 path)", responses=IGNORING, **cohere)(
            rerank_v1
        )

    async def embedded(http: Request, texts: list[str], normalize: bool, field: str) -> np.ndarray:
        """The embeddings of ``texts`` (L2-normalised when ``normalize``), one row each."""
        check_count(len(texts), limits.max_candidates, "texts", field)
        check_texts(((field, t) for t in texts), limits.max_chars)
        return np.stack(await answer(http, batcher.submit(("encode", normalize), texts)))

    if runner.encoder is not None:

        @app.post("/encode", response_model=EncodeResponse)
        async def encode(request: EncodeRequest, http: Request) -> EncodeResponse:
            """Sentence embeddings (L2-normalised unless ``normalize`` is false)."""
            rows = await embedded(http, request.texts, request.normalize, "texts")
            return EncodeResponse(embeddings=rows.tolist(), dim=rows.shape[1])

        @app.post("/embed", response_model=list[list[float]], responses=IGNORING)
        async def embed(request: EmbedRequest, http: Request, response: Response):
            """TEI's embed: one vector per input (L2-normalised unless ``normalize`` is false)."""
            report_ignored(response, request)
            texts = _listed(request.inputs)
            return (await embedded(http, texts, request.normalize, "inputs")).tolist()

        # TEI's root route, which huggingface_hub's InferenceClient(model=URL) calls
        root = {"summary": "Embed (TEI's root)", "responses": IGNORING}
        app.post("/", response_model=list[list[float]], **root)(embed)

        @app.post("/v1/embeddings", response_model=OpenAIEmbeddings, responses=IGNORING)
        async def embeddings(
            request: OpenAIEmbeddingsRequest, http: Request, response: Response
        ) -> OpenAIEmbeddings:
            """OpenAI's embeddings: L2-normalised vectors, as floats or base64 float32 bytes."""
            report_ignored(response, request)
            texts = _listed(request.input)
            rows = await embedded(http, texts, True, "input")
            if request.dimensions not in (None, rows.shape[1]):
                raise InputError(
                    f"{request.dimensions} dimensions asked, but this model's embeddings have "
                    f"{rows.shape[1]} and cannot be shortened",
                    field="dimensions",
                )
            base64 = request.encoding_format == "base64"
            data = [
                Embedding(index=i, embedding=_base64(row) if base64 else row.tolist())
                for i, row in enumerate(rows)
            ]
            tokens = runner.tokens(texts)
            return OpenAIEmbeddings(
                data=data, model=name, usage=Usage(prompt_tokens=tokens, total_tokens=tokens)
            )

    app.add_middleware(RequestMetrics, metrics=metrics, paths={route.path for route in app.routes})
    return app


def _listed(texts: str | list[str]) -> list[str]:
    return [texts] if isinstance(texts, str) else texts


def _base64(row: np.ndarray) -> str:
    """OpenAI's ``encoding_format="base64"``: the little-endian float32 bytes in base64."""
    return b64encode(row.astype("<f4").tobytes()).decode()


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
