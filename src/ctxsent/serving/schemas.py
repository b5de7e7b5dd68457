"""Request and response bodies of the HTTP service; they are also its OpenAPI declaration.

ctxsent's own routes (``/rank``, ``/encode``) take no field but their own: a misspelt
option is a 422. The routes shaped as other services' (TEI, OpenAI, Cohere/Jina), which
clients and RAG frameworks call unchanged, accept fields they do not use and name them in
the ``X-Ctxsent-Ignored-Fields`` answer header (:meth:`Compatible.ignored`).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Requests take no fields but their own: a misspelt option is an error (422), not ignored;
#: values are of their declared JSON type (``true`` is no number).
STRICT = ConfigDict(extra="forbid", strict=True)
#: One text, or a non-empty list of them.
Texts = str | Annotated[list[str], Field(min_length=1)]


class Problem(BaseModel):
    field: str
    problem: str


class ErrorBody(BaseModel):
    """Every error answer: one line saying what is wrong and where."""

    error: str
    problems: list[Problem] | None = Field(None, description="each invalid field (422)")


#: The error answers any route can give, declared on every route.
ERRORS = {
    status: {"model": ErrorBody, "description": description}
    for status, description in {
        400: "unreadable body",
        401: "missing or wrong API key (when the service has one)",
        408: "request head or body sent too slowly",
        413: "request over a limit (body, texts, characters)",
        422: "malformed request (problems lists each field)",
        500: "internal error",
        504: "no answer within the service's timeout",
    }.items()
}


#: The answer header naming the fields of a request that had no effect.
IGNORED_HEADER = "X-Ctxsent-Ignored-Fields"
#: Its declaration, on the routes in other services' shapes.
IGNORING = {
    200: {
        "headers": {
            IGNORED_HEADER: {
                "description": "the request's fields that had no effect (comma-separated, "
                "percent-encoded)",
                "schema": {"type": "string"},
            }
        }
    }
}


class Compatible(BaseModel):
    """A request in another service's shape: unknown fields are accepted and ignored."""

    model_config = ConfigDict(extra="allow", strict=True)
    #: Declared fields that are accepted for compatibility but have no effect.
    IGNORED: ClassVar[tuple[str, ...]] = ()

    def ignored(self) -> list[str]:
        """The fields of this request that had no effect: unknown or in :attr:`IGNORED`."""
        return [*(self.model_extra or {}), *(f for f in self.IGNORED if f in self.model_fields_set)]


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
    model_config = ConfigDict(strict=True)
    text: str


class CohereRerank(Compatible):
    """Cohere's and Jina's rerank request, which RAG frameworks send."""

    IGNORED = ("model", "rank_fields", "max_chunks_per_doc")
    query: str
    documents: list[str | RerankDocument] = Field(min_length=1)
    top_n: int | None = Field(None, ge=1, description="results to return (default: all)")
    return_documents: bool = False
    model: str | None = Field(None, description="ignored: the served model answers")
    rank_fields: list[str] | None = Field(None, description="ignored: documents' text is ranked")
    max_chunks_per_doc: int | None = Field(None, description="ignored: documents are not split")

    @property
    def texts(self) -> list[str]:
        return [d if isinstance(d, str) else d.text for d in self.documents]


class RerankRequest(CohereRerank):
    """Cohere's request (``documents``) or TEI's (``texts``, ``raw_scores``, ``return_text``);
    ``truncate``: texts are always truncated to the model's ``max_input_length``."""

    IGNORED = (*CohereRerank.IGNORED, "truncate", "truncation_direction")
    documents: list[str | RerankDocument] | None = Field(None, min_length=1)
    texts_: list[str] | None = Field(None, alias="texts", min_length=1)
    raw_scores: bool = Field(False, description="TEI: the model's scores, not 0-1 relevance")
    return_text: bool = False
    truncate: bool | None = None
    truncation_direction: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> RerankRequest:
        if (self.documents is None) == (self.texts_ is None):
            raise ValueError("give exactly one of 'documents' (Cohere) and 'texts' (TEI)")
        return self

    @property
    def texts(self) -> list[str]:
        return self.texts_ if self.documents is None else super().texts


class RerankResult(BaseModel):
    index: int
    relevance_score: float = Field(ge=0, le=1)
    document: RerankDocument | None = None


class RerankResponse(BaseModel):
    """Cohere's (and Jina's) answer, best first."""

    results: list[RerankResult]


class TeiRank(BaseModel):
    """One text of TEI's rerank answer (a list, best first)."""

    index: int
    score: float
    text: str | None = None


class EncodeRequest(BaseModel):
    model_config = STRICT
    texts: list[str] = Field(min_length=1)
    normalize: bool = True


class EncodeResponse(BaseModel):
    embeddings: list[list[float]]
    dim: int


class EmbedRequest(Compatible):
    """TEI's embed request: its answer is a list of vectors, one per input."""

    IGNORED = ("truncate", "truncation_direction", "prompt_name")
    inputs: Texts
    normalize: bool = True
    truncate: bool | None = Field(None, description="ignored: texts are always truncated")
    truncation_direction: str | None = None
    prompt_name: str | None = None


class OpenAIEmbeddingsRequest(Compatible):
    """OpenAI's embeddings request; embeddings are L2-normalised, as OpenAI's are."""

    IGNORED = ("model", "user")
    input: Texts
    model: str | None = Field(None, description="ignored: the served model answers")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1, description="must be the model's dimension")
    user: str | None = None


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str = Field(description="floats, or base64 of float32 bytes")


class Usage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class OpenAIEmbeddings(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


class Info(BaseModel):
    """What TEI's ``/info`` tells that applies here."""

    model_config = ConfigDict(protected_namespaces=())
    model_id: str
    model_dtype: str | None
    model_type: dict[str, dict] = Field(description="'embedding' and/or 'reranker'")
    max_input_length: int | None = Field(description="tokens per text; longer are truncated")
    max_client_batch_size: int
    max_batch_requests: int | None = None
    auto_truncate: bool = True
    version: str
