"""What a model can do, asked by name: ``isinstance(model, StagedRanker)``, not ``hasattr``.

These are structural types (:class:`typing.Protocol`): a class qualifies by having the
methods and attributes, whether or not it inherits from anything here, so a user's own
ranker or encoder works wherever ctxsent's do. The commands, the service, evaluation and
export dispatch on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    """Texts to one vector each: ``encode(texts, **kwargs) -> (n, dim)``."""

    def encode(self, texts: Sequence[str], **kwargs: Any) -> np.ndarray: ...


@runtime_checkable
class Ranker(Protocol):
    """Scores AS2 records (:class:`~ctxsent.tasks.as2_records.As2Record`); higher first.

    :class:`~ctxsent.models.ranker_base.As2Ranker` implements ``rank`` and
    ``rank_document`` on top of ``predict``.
    """

    contextual: bool

    def predict(self, records: Sequence[Any], **kwargs: Any) -> np.ndarray: ...

    def rank(self, question: str, candidates: Sequence[str], **kwargs: Any) -> list: ...

    def rank_document(self, question: str, document: str, top_k: int | None = 5) -> list: ...


@runtime_checkable
class StagedRanker(Ranker, Protocol):
    """A ranker that prunes candidates in stages (:mod:`ctxsent.models.staged`):
    ``predict(..., alpha=...)`` takes drop rates, ``alphas`` are its defaults and
    ``last_cost`` the :class:`~ctxsent.models.staged.CascadeCost` of its latest call."""

    alphas: list[float]
    last_cost: Any

    @property
    def num_stages(self) -> int: ...


@runtime_checkable
class Evaluator(Protocol):
    """Scores a model on held-out data: ``evaluator(model) -> metrics``, of which
    ``primary_metric`` names the one to report and to stop early on."""

    primary_metric: str

    def __call__(self, model: Any) -> dict[str, float]: ...
