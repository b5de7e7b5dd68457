"""Request limits of the HTTP service and the errors that enforce them: a well-formed request
over a limit gets 413, a malformed one 422, one whose head or body arrives too slowly 408,
one not answered in time 504; all answer ``{"error": MESSAGE}`` and the server carries on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

from ctxsent.errors import InputError, check_unicode


@dataclass(frozen=True)
class ServeLimits:
    """What one request may ask for and how long it may take, and how many candidates one
    model call may batch."""

    #: Candidates (or document sentences, or texts to encode) in one request.
    max_candidates: int = 1000
    #: Characters in any one text: question, candidate, context sentence, text to encode.
    max_chars: int = 5000
    #: Characters in a document to split into sentences.
    max_document_chars: int = 200_000
    #: Most candidates the micro-batcher puts in one model call; a larger request is split
    #: into chunks of this size (or runs alone whole, for models that cannot split it).
    max_batch: int = 256
    #: Most characters (question, candidate and context) in one chunk of a split request,
    #: at least one candidate: how long another request may wait behind it.
    chunk_chars: int = 10_000
    #: Bytes in a request body (counted as it is read; more: 413).
    max_body_bytes: int = 8_000_000
    #: Seconds from a request's submission to the model until its answer (more: 504).
    timeout_s: float = 120.0
    #: Seconds a client has to send a request's head, and again its body (more: 408).
    read_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            kind = int if spec.type == "int" else int | float
            if (
                isinstance(value, bool)
                or not isinstance(value, kind)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(
                    f"{spec.name} must be a positive finite {spec.type}, got {value!r}"
                )


class RequestTimeout(Exception):
    """A request not answered within :attr:`ServeLimits.timeout_s`; the service answers 504."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"no answer within the service's timeout of {seconds:g} s; the request was dropped"
        )


class RequestTooLarge(InputError):
    """A request beyond a :class:`ServeLimits` limit; the service answers 413."""


def check_count(count: int, limit: int, what: str, field: str) -> None:
    if count > limit:
        raise RequestTooLarge(f"{count} {what}, more than the limit of {limit}", field=field)


def check_texts(texts: Iterable[tuple[str, str]], limit: int) -> None:
    """Raise for the first ``(field, text)`` longer than ``limit`` (:class:`RequestTooLarge`)
    or not valid Unicode (:class:`InputError`, see :func:`ctxsent.errors.check_unicode`)."""
    for field, text in texts:
        check_unicode(text, field)
        if len(text) > limit:
            raise RequestTooLarge(
                f"{len(text)} characters, more than the limit of {limit}", field=field
            )
