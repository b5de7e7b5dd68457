"""Retrieve then rerank, saved as one model folder (model kind ``pipeline``).

A cheap first stage scores every candidate of a question; the ``top_k`` best go on to a
reranker (any :class:`~ctxsent.protocols.Ranker`), which scores only those. Decisions:

* **First stage**: one ranker, or a *hybrid* of several fused per question by reciprocal
  rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009): ``sum_r 1 / (rrf_k + rank_r)``,
  ``rank_r`` the 1-based rank among the question's candidates under first stage ``r``,
  ``rrf_k`` = 60 as in the paper; candidates tied in a stage share their average rank.
  A first stage sees every record of a ``predict`` call (BM25 takes its IDF from all).
* **Top K**: per question (``question_id``; a ``(question, candidate)`` pair's is its
  text) the ``top_k`` highest first-stage scores are kept, ties at the K-th score in input
  order, so the reranker never sees more than ``top_k`` per question.
* **Scores**: a kept candidate gets the reranker's score. One left out gets
  ``m - 1 - d / D``: ``m`` the lowest reranker score of its question's kept candidates,
  ``d`` the dense rank (0 = best) of its first-stage score among the question's left-out
  candidates, ``D`` their number of distinct first-stage scores; so every record has a
  score, below every kept one, in first-stage order, ties still tied.
* **Staged rerankers**: ``predict``'s other keyword arguments go to the reranker; with a
  cascade or Sequential Ranker the pipeline is a :class:`~ctxsent.protocols.StagedRanker`
  (:class:`StagedPipelineRanker`) whose ``alphas``, ``num_stages`` and ``last_cost`` (over
  the kept candidates) are the reranker's.

The folder holds ``retriever-0``, ... and ``reranker``, each a saved model folder, except
a BM25 stage, only named (``"bm25"``) in the manifest and rebuilt with default settings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ctxsent.errors import InputError, ModelFolderError, check_range
from ctxsent.models.baseline_rankers import BM25Ranker
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.models.staged import question_index
from ctxsent.protocols import InferencePrecision, Ranker, SavedModel, StagedRanker
from ctxsent.saving import config_from, model_folder, read_manifest, register_model
from ctxsent.tasks.as2_records import As2Record

#: A first stage only named in the manifest, rebuilt with its default settings.
BM25 = "bm25"
#: Model kinds a first stage may be: each scores a candidate without reading it together
#: with the question (BM25 terms, bi-encoder embeddings).
RETRIEVER_KINDS = (BM25, "bi-encoder")
#: Reciprocal rank fusion's constant (Cormack et al., 2009).
RRF_K = 60


@dataclass
class PipelineConfig:
    """A saved pipeline: candidates kept per question, the fusion constant and each stage's
    kind (``"bm25"``, or the kind of the model folder ``retriever-I`` / ``reranker``)."""

    top_k: int
    retrievers: list[str]
    reranker: str
    rrf_k: int = RRF_K

    def __post_init__(self) -> None:
        check_range(self, "top_k", 1)
        check_range(self, "rrf_k", 0)
        if not self.retrievers:
            raise InputError("a pipeline needs at least one first stage", field="retrievers")


@register_model("pipeline")
class PipelineRanker(As2Ranker):
    """A retrieve-then-rerank pipeline: a first stage keeps the top K, a reranker rescores them."""

    kind: str

    def __new__(cls, retrievers, reranker, *args, **kwargs):
        """A :class:`StagedPipelineRanker` when ``reranker`` prunes in stages."""
        if cls is PipelineRanker and isinstance(reranker, StagedRanker):
            cls = StagedPipelineRanker
        return super().__new__(cls)

    def __init__(
        self,
        retrievers: Ranker | Sequence[Ranker],
        reranker: Ranker,
        top_k: int,
        rrf_k: int = RRF_K,
    ) -> None:
        """``retrievers``: the first stage, or several fused by reciprocal rank fusion."""
        self.retrievers = [retrievers] if isinstance(retrievers, Ranker) else list(retrievers)
        self.reranker = reranker
        for index, stage in enumerate([*self.retrievers, reranker]):
            if not isinstance(stage, Ranker):
                name = "reranker" if stage is reranker else f"retrievers[{index}]"
                raise InputError(f"a {type(stage).__name__} cannot rank answers", field=name)
        self.config = PipelineConfig(
            top_k, [stage_kind(r) for r in self.retrievers], stage_kind(reranker), rrf_k
        )
        self.contextual = reranker.contextual

    @property
    def top_k(self) -> int:
        return self.config.top_k

    @property
    def precision(self) -> str:
        """The reranker's inference precision (``auto`` for one without a choice)."""
        return self.reranker.precision if isinstance(self.reranker, InferencePrecision) else "auto"

    @precision.setter
    def precision(self, value: str) -> None:
        """Every stage that has a choice (:class:`~ctxsent.protocols.InferencePrecision`)."""
        for stage in [*self.retrievers, self.reranker]:
            if isinstance(stage, InferencePrecision):
                stage.precision = value

    @classmethod
    def from_pretrained(cls, path: str | Path, load_stage: Callable[[Path], Any]) -> PipelineRanker:
        """Load a saved ``pipeline`` folder; ``load_stage`` loads each stage's folder
        (:func:`~ctxsent.models.registry.load_model_folder`), checked against its kind."""
        path = Path(path)
        manifest = read_manifest(path, "pipeline")
        config = config_from(PipelineConfig, manifest, path)
        retrievers = [
            _load_stage(path / f"retriever-{index}", kind, load_stage)
            for index, kind in enumerate(config.retrievers)
        ]
        reranker = _load_stage(path / "reranker", config.reranker, load_stage)
        return cls(retrievers, reranker, config.top_k, config.rrf_k)

    def save_pretrained(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write every stage (BM25 by name only) and the manifest atomically to ``path``.

        Refused (:class:`InputError`, nothing written): a stage that is not a saveable
        ctxsent model, and a pipeline with no weights one folder down (BM25 with a BM25 or
        composite reranker), which :func:`ctxsent.load` would not take for a model folder.
        """
        stages = {f"retriever-{i}": stage for i, stage in enumerate(self.retrievers)}
        stages["reranker"] = self.reranker
        for name, stage in stages.items():
            if not _saved_by_name(stage) and not isinstance(stage, SavedModel):
                raise InputError(f"a {type(stage).__name__} cannot be saved", field=name)
        with model_folder(path, self.kind, asdict(self.config), overwrite) as staged:
            for name, stage in stages.items():
                if not _saved_by_name(stage):
                    stage.save_pretrained(staged / name)
            if not any(staged.glob("*/*.safetensors")):
                raise InputError(
                    "no stage keeps weights at the top of its folder, as ctxsent.load needs "
                    "(BM25 with a BM25, sequential or pipeline reranker); add a model stage",
                    field="reranker",
                )
        return Path(path)

    def predict(
        self,
        records: Sequence[As2Record],
        batch_size: int = 64,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """One score per record (module docstring: kept candidates the reranker's score,
        the others below them); ``options`` (a cascade's ``alpha``) go to the reranker."""
        records = list(records)
        if not records:
            return np.empty(0, dtype=np.float64)
        groups = question_groups(question_index([r.question_id for r in records]))
        first = self.first_stage_scores(records, groups, batch_size)
        kept = top_k_rows(first, groups, self.top_k)
        reranked = self.reranker.predict(
            [records[i] for i in kept],
            batch_size=batch_size,
            show_progress=show_progress,
            **options,
        )
        return below_kept(first, kept, np.asarray(reranked, dtype=np.float64), groups)

    def first_stage_scores(
        self, records: list[As2Record], groups: list[np.ndarray], batch_size: int = 64
    ) -> np.ndarray:
        """The first stage's score of each record: its one ranker's, or the RRF of several."""
        scores = [
            np.asarray(r.predict(records, batch_size=batch_size), dtype=np.float64)
            for r in self.retrievers
        ]
        return (
            scores[0]
            if len(scores) == 1
            else reciprocal_rank_fusion(scores, groups, self.config.rrf_k)
        )


class StagedPipelineRanker(PipelineRanker):
    """A pipeline whose reranker prunes in stages: its drop rates and cost are the reranker's."""

    @property
    def alphas(self) -> list[float]:
        return self.reranker.alphas

    @alphas.setter
    def alphas(self, rates: Sequence[float]) -> None:
        self.reranker.alphas = rates

    @property
    def num_stages(self) -> int:
        return self.reranker.num_stages

    @property
    def last_cost(self):
        """The reranker's :class:`~ctxsent.models.staged.CascadeCost` over the kept candidates."""
        return self.reranker.last_cost


def question_groups(question_of: np.ndarray) -> list[np.ndarray]:
    """The rows of each question (``question_of``: :func:`~ctxsent.models.staged.question_index`),
    each in input order."""
    order = np.argsort(question_of, kind="stable")
    return np.split(order, np.cumsum(np.bincount(question_of))[:-1])


def reciprocal_rank_fusion(
    scores: Sequence[np.ndarray],
    groups: Sequence[np.ndarray],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> np.ndarray:
    """Per question, ``sum_r w_r / (k + rank_r)``: ``rank_r`` is the 1-based rank under
    ``scores[r]`` (highest first), tied candidates sharing their average rank; every
    weight ``w_r`` is 1 unless ``weights`` are given."""
    from scipy.stats import rankdata  # here: a torch-free process loads this module

    weights = weights or [1.0] * len(scores)
    fused = np.zeros(len(scores[0]), dtype=np.float64)
    for rows in groups:
        for column, weight in zip(scores, weights, strict=True):
            fused[rows] += weight / (k + rankdata(-column[rows]))  # ties: average rank
    return fused


def top_k_rows(first: np.ndarray, groups: Sequence[np.ndarray], top_k: int) -> np.ndarray:
    """The rows kept for the reranker, in input order: per question the ``top_k`` highest
    ``first`` scores, ties at the boundary in input order."""
    kept = [rows[np.argsort(-first[rows], kind="stable")[:top_k]] for rows in groups]
    return np.sort(np.concatenate(kept))


def below_kept(
    first: np.ndarray, kept: np.ndarray, reranked: np.ndarray, groups: Sequence[np.ndarray]
) -> np.ndarray:
    """Every record's score: ``reranked`` for the ``kept`` rows, ``m - 1 - d / D`` for the
    others (module docstring)."""
    scores = np.empty(len(first), dtype=np.float64)
    scores[kept] = reranked
    is_kept = np.zeros(len(first), dtype=bool)
    is_kept[kept] = True
    for rows in groups:
        dropped = rows[~is_kept[rows]]
        if dropped.size:
            lowest = scores[rows[is_kept[rows]]].min()
            distinct = np.unique(-first[dropped])  # ascending: the best first-stage score first
            rank = np.searchsorted(distinct, -first[dropped])
            scores[dropped] = lowest - 1.0 - rank / len(distinct)
    return scores


def stage_kind(stage: Any) -> str:
    """A stage's kind in the manifest: ``"bm25"`` or its saved model kind (else its class)."""
    if _saved_by_name(stage):
        return BM25
    return stage.kind if isinstance(stage, SavedModel) else type(stage).__name__


def _saved_by_name(stage: Any) -> bool:
    """Whether ``stage`` is the BM25 that ``"bm25"`` names (default settings)."""
    default = BM25Ranker()
    return type(stage) is BM25Ranker and (stage.k1, stage.b) == (default.k1, default.b)


def _load_stage(folder: Path, kind: str, load_stage: Callable[[Path], Any]) -> Any:
    """The stage the manifest names ``kind``: BM25, or the model saved in ``folder``."""
    if kind == BM25:
        return BM25Ranker()
    stage = load_stage(folder)
    found = stage_kind(stage)
    if found != kind or not isinstance(stage, Ranker):
        raise ModelFolderError(
            f"holds a {found!r}; the pipeline's manifest says {kind!r}", path=folder
        )
    return stage
