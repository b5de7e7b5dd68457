"""Staged pruning (Cascade paper, section 4.3.2): drop rates, the drop rule and its cost.

After stage i, per question, floor(alpha_i * k) of its k remaining candidates with the
lowest scores leave. The cascade, the Sequential Ranker and the exact simulation of
drop-rate tuning (:mod:`ctxsent.evaluation.cascade_tuning`) use this module, the CLI
(``--alpha``) and the service (``"alpha"``) its :func:`set_alphas` / :func:`resolve_alphas`.
Cost is counted in layer-candidate evaluations, relative to the monolithic model running
every layer of its deepest stage on every candidate (paper, section 5.5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ctxsent.errors import InputError
from ctxsent.protocols import StagedRanker

T = TypeVar("T")


@dataclass
class CascadeCost:
    """Layer-candidate evaluations of a run, relative to the monolithic model."""

    layer_evaluations: int
    monolithic_evaluations: int
    candidates_per_exit: list[int]

    @property
    def relative(self) -> float:
        return self.layer_evaluations / max(1, self.monolithic_evaluations)


def resolve_alphas(alpha: float | str | Sequence[float], stages: int) -> list[float]:
    """One drop rate in [0, 1) per stage but the last, from one rate, a list, or the text
    ``"0.3"`` / ``"0.3,0.2,0.1,0.1"`` (``--alpha``); an :class:`InputError` otherwise."""
    if isinstance(alpha, str):
        try:
            alpha = [float(part) for part in alpha.split(",")]
        except ValueError:
            message = f"expected numbers separated by commas, got {alpha!r}"
            raise InputError(message, field="alpha") from None
        alpha = alpha[0] if len(alpha) == 1 else alpha
    rates = [float(alpha)] * (stages - 1) if isinstance(alpha, int | float) else list(alpha)
    if len(rates) != stages - 1 or not all(0.0 <= a < 1.0 for a in rates):
        raise InputError(
            f"need {stages - 1} drop rates in [0, 1) (one per non-final exit), got {rates}",
            field="alpha",
        )
    return rates


def set_alphas(ranker, alpha: float | str | Sequence[float] | None) -> None:
    """Give a :class:`~ctxsent.protocols.StagedRanker` the drop rates ``alpha``
    (:func:`resolve_alphas`); None leaves its own; an :class:`InputError` for other rankers."""
    if alpha is None:
        return
    if not isinstance(ranker, StagedRanker):
        raise InputError("alpha applies to cascade and sequential models only", field="alpha")
    ranker.alphas = resolve_alphas(alpha, ranker.num_stages)


def exit_costs(exits: Sequence[int]) -> list[int]:
    """Layers each stage of one encoder with exits at ``exits`` adds per candidate (a
    cascade resumes from the previous exit's states)."""
    return np.diff([0, *exits]).tolist()


def prune_in_stages(
    question_of: np.ndarray,
    alphas: Sequence[float],
    stage_costs: Sequence[int],
    score_stage: Callable[[int, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, list[int], int]:
    """The drop rule: stage i scores the ``active`` candidates (``score_stage(i, active)``),
    then per question the floor(alpha_i * k) lowest of its k survivors leave.

    Returns the ranking scores (:func:`stage_scores`), the candidates each stage saw, and
    the layer-candidate evaluations (stage i costs ``stage_costs[i]`` per candidate).
    """

    def at_once(index: int, active: np.ndarray) -> Generator[float, None, np.ndarray]:
        return score_stage(index, active)
        yield  # a generator with no steps

    return finish(pruning_steps(question_of, alphas, stage_costs, at_once))


def pruning_steps(
    question_of: np.ndarray,
    alphas: Sequence[float],
    stage_costs: Sequence[int],
    score_stage: Callable[[int, np.ndarray], Generator[float, None, np.ndarray]],
) -> Generator[float, None, tuple[np.ndarray, list[int], int]]:
    """:func:`prune_in_stages` in steps: ``score_stage`` yields the cost of each piece of
    its work and returns the logits; the steps are yielded on, the result returned."""
    scores = np.zeros(len(question_of), dtype=np.float64)
    active = np.arange(len(question_of))
    counts, evaluations = [], 0
    for index, cost in enumerate(stage_costs):
        counts.append(len(active))
        evaluations += cost * len(active)
        logits = np.asarray((yield from score_stage(index, active)), dtype=np.float64)
        scores[active] = stage_scores(index, logits)
        if index < len(alphas):
            active = survivors(active, logits, question_of[active], alphas[index])
    return scores, counts, evaluations


def pieces(
    order: np.ndarray, chars: Sequence[int], max_items: int, max_chars: float
) -> Iterator[np.ndarray]:
    """``order`` cut into consecutive pieces of at most ``max_items`` rows and ``max_chars``
    characters (``chars[i]`` of ``order[i]``; one row at least): the steps of a
    ``predict_steps`` (a cascade's forward passes, BM25's tokenisation)."""
    start = 0
    while start < len(order):
        stop, total = start + 1, chars[start]
        while stop < min(len(order), start + max_items) and total + chars[stop] <= max_chars:
            total, stop = total + chars[stop], stop + 1
        yield order[start:stop]
        start = stop


def finish(steps: Generator[Any, None, T]) -> T:
    """Run ``steps`` to the end; their result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def stage_scores(stage: int, logits: np.ndarray) -> np.ndarray:
    """Ranking scores of candidates last scored at ``stage``: stage index + sigmoid(logit).

    Candidates that reached a later stage always outrank those dropped earlier.
    """
    return stage + 1 / (1 + np.exp(-np.asarray(logits, dtype=np.float64)))


def survivors(
    active: np.ndarray, logits: np.ndarray, questions: np.ndarray, alpha: float
) -> np.ndarray:
    """Per question, drop floor(alpha * k) of its k candidates with the lowest logits."""
    keep = []
    for question in np.unique(questions):
        members = np.flatnonzero(questions == question)
        dropped = math.floor(alpha * len(members))
        ranked = members[np.argsort(-logits[members], kind="stable")]
        keep.extend(active[ranked[: len(members) - dropped]])
    return np.sort(np.array(keep, dtype=np.int64))


def question_index(question_ids: Sequence[str]) -> np.ndarray:
    """Each candidate's question as an integer (for :func:`prune_in_stages`)."""
    return np.unique(np.asarray(question_ids), return_inverse=True)[1]
