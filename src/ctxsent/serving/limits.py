"""Request limits of the HTTP service and the errors that enforce them.

A request that is well-formed but too large (too many candidates, a text too
long, a body too big) is refused with 413; a malformed one (bad JSON, wrong
types, an empty question, alpha for a model without exits) with 422. Both
answer ``{"error": MESSAGE}`` and the server carries on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ctxsent.errors import InputError, check_unicode


@dataclass(frozen=True)
class ServeLimits:
    """What one request may ask for, and how many candidates one model call may batch."""

    #: Candidates (or document sentences, or texts to encode) in one request.
    max_candidates: int = 1000
    #: Characters in any one text: question, candidate, context sentence, text to encode.
    max_chars: int = 5000
    #: Characters in a document to split into sentences.
    max_document_chars: int = 200_000
    #: Most candidates the micro-batcher puts in one model call; a larger request runs alone.
    max_batch: int = 256
    #: Bytes in a request body (checked from Content-Length before it is read).
    max_body_bytes: int = 8_000_000

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")


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
