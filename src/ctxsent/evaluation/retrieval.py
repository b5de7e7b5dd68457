"""Passage retrieval with sentence embeddings: Recall@k and the scorers.

Cross-Thought section 4.4 ("HotpotQA(u)") ranks a question's candidate paragraphs by the
pre-trained model's cross-sequence attention weights. Every scorer gives *head scores*
``(Q, heads, P)``; a candidate set is ranked by the mean over heads of the softmax over the
set: for Cross-Thought the averaged ``alpha[0]`` of section 3.3, whose softmax also covers
the question itself (:meth:`PassageScorer.self_scores`,
:func:`~ctxsent.models.cross_thought.candidate_log_weights`); for single-head scorers (BM25,
cosine of MiniLM or of an MLM baseline's ``E``) simply the score order. Ties keep passage
order.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ctxsent.corpus.readers.squad import load_squad
from ctxsent.errors import InputError
from ctxsent.models.baseline_rankers import Bm25Index, BM25Ranker
from ctxsent.models.cross_thought import CrossThoughtModel, candidate_log_weights
from ctxsent.models.precision import on_accelerator
from ctxsent.resolver import load_retrieval_model

DEFAULT_KS = (1, 5, 20)


def recall_at_k(
    rankings: Sequence[np.ndarray], gold: Sequence[set[int]], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, float]:
    """Mean over questions of the share of their gold passages in the top ``k``, in percent."""
    if len(rankings) != len(gold):
        raise InputError(f"{len(rankings)} rankings for {len(gold)} questions", field="gold")
    if not gold or any(not g for g in gold):
        raise InputError("every question needs at least one gold passage", field="gold")
    pairs = list(zip(rankings, gold, strict=True))
    shares = {k: [len(g & set(r[:k].tolist())) / len(g) for r, g in pairs] for k in ks}
    return {f"recall@{k}": 100.0 * float(np.mean(share)) for k, share in shares.items()}


def rank_candidates(
    head_scores: np.ndarray,
    candidates: np.ndarray | None = None,
    self_scores: np.ndarray | None = None,
) -> np.ndarray:
    """Passage indices, best first, for one question's head scores ``(heads, P)``.

    ``candidates`` restricts the ranking (and the softmax) to those passages; ``self_scores``
    ``(heads,)``, the question's score against itself, joins each head's softmax.
    """
    if candidates is None:
        candidates = np.arange(head_scores.shape[1])
    scores = torch.from_numpy(head_scores[:, candidates]).double()
    if len(scores) > 1:
        own = None if self_scores is None else torch.from_numpy(self_scores).double()
        scores = candidate_log_weights(scores, own)[None]
    return candidates[np.argsort(-scores[0].numpy(), kind="stable")]


class PassageScorer(ABC):
    """Scores questions against a fixed, cached passage collection."""

    @abstractmethod
    def fit(self, passages: Sequence[str]) -> None:
        """Encode (or index) the passages once."""

    @abstractmethod
    def head_scores(self, questions: Sequence[str]) -> np.ndarray:
        """``(Q, heads, P)`` scores of every question against every fitted passage."""

    def self_scores(self, questions: Sequence[str]) -> np.ndarray | None:
        """``(Q, heads)`` scores of each question against itself, which join the softmax
        over the passages; ``None`` (the default) when the scorer has none."""
        return None


class BM25Scorer(PassageScorer):
    """Okapi BM25 (:class:`~ctxsent.models.baseline_rankers.Bm25Index`); IDF from the collection."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.index = None

    def fit(self, passages: Sequence[str]) -> None:
        self.index = Bm25Index(passages, self.k1, self.b)

    def head_scores(self, questions: Sequence[str]) -> np.ndarray:
        if self.index is None:
            raise InputError("fit() the passages first", field="passages")
        return np.stack(list(self.index.scores(questions)))[:, None, :].astype(np.float32)


class DenseScorer(PassageScorer):
    """Scores are dot products of per-head query and key vectors of sentence embeddings."""

    heads: int
    passage_vectors: np.ndarray | None = None

    @abstractmethod
    def vectors(self, texts: Sequence[str], role: str) -> np.ndarray:
        """``(n, heads, dim)`` float32 vectors; ``role`` is ``query`` or ``key``."""

    def fit(self, passages: Sequence[str]) -> None:
        self.passage_vectors = self.vectors(passages, "key")

    def head_scores(self, questions: Sequence[str]) -> np.ndarray:
        if self.passage_vectors is None:
            raise InputError("fit() the passages first", field="passages")
        return np.einsum("qhd,phd->qhp", self.vectors(questions, "query"), self.passage_vectors)


class CrossThoughtScorer(DenseScorer):
    """Cross-sequence attention logits (Eq. 5-7) of a pre-trained or fine-tuned Cross-Thought.

    As in the paper, a question's softmax covers the question itself
    (:meth:`self_scores`, which encodes the questions a second time);
    ``include_self=False`` leaves it out, a deviation kept only to reproduce numbers
    measured with it (``benchmarks/cross_thought_retrieval.py --candidates-only``).
    """

    def __init__(self, model, batch_size: int = 64, include_self: bool = True) -> None:
        self.model = model
        self.batch_size = batch_size
        self.include_self = include_self
        self.heads = model.config.num_special * model.heads

    def vectors(self, texts: Sequence[str], role: str) -> np.ndarray:
        embeddings = self.model.encode_special(list(texts), self.batch_size)
        with torch.inference_mode():
            return self.model.attention_vectors(embeddings, role).numpy()

    def self_scores(self, questions: Sequence[str]) -> np.ndarray | None:
        if not self.include_self:
            return None
        embeddings = self.model.encode_special(list(questions), self.batch_size)
        with torch.inference_mode():
            return self.model.self_attention_logits(embeddings).numpy()


class CosineScorer(DenseScorer):
    """Cosine similarity of any ``encode()`` sentence embeddings (MiniLM, MLM baselines)."""

    heads = 1

    def __init__(self, encoder, batch_size: int = 64) -> None:
        self.encoder = encoder
        self.batch_size = batch_size

    def vectors(self, texts: Sequence[str], role: str) -> np.ndarray:
        embedded = np.asarray(self.encoder.encode(list(texts), batch_size=self.batch_size))
        norms = np.linalg.norm(embedded, axis=1, keepdims=True).clip(min=1e-12)
        return (embedded / norms).astype(np.float32)[:, None, :]


def scorer_for_model(model, batch_size: int = 64) -> DenseScorer:
    """Attention scoring for Cross-Thought models with cross-sequence layers, else cosine."""
    if isinstance(model, CrossThoughtModel) and model.config.cross_sequence:
        return CrossThoughtScorer(model, batch_size)
    return CosineScorer(model, batch_size)


# ---- SQuAD paragraph ranking (the unsupervised "HotpotQA(u)" setting on SQuAD v1.1 dev) ----------
@dataclass(frozen=True)
class ParagraphRanking:
    """Questions, each with its gold paragraph, against all paragraphs of a SQuAD file."""

    paragraphs: list[str]
    article_of: np.ndarray
    questions: list[str]
    gold: list[int]


def squad_paragraph_ranking(
    path: str | Path, questions: int | None = None, seed: int = 0
) -> ParagraphRanking:
    """Read a SQuAD file; ``questions`` keeps a seeded random subset of the questions."""
    paragraphs, article_of, texts, gold = [], [], [], []
    for article_index, article in enumerate(load_squad(path)):
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                texts.append(str(qa["question"]))
                gold.append(len(paragraphs))
            paragraphs.append(str(paragraph["context"]))
            article_of.append(article_index)
    if not texts:
        raise InputError("no questions in the file", path=path)
    if questions is not None and questions < len(texts):
        keep = np.sort(np.random.default_rng(seed).choice(len(texts), questions, replace=False))
        texts, gold = [texts[i] for i in keep], [gold[i] for i in keep]
    return ParagraphRanking(paragraphs, np.array(article_of), texts, gold)


def evaluate_paragraph_ranking(
    scorer: PassageScorer,
    data: ParagraphRanking,
    ks: Sequence[int] = DEFAULT_KS,
    chunk: int = 256,
    gold_ranks: bool = False,
) -> dict:
    """Recall@k ranking all paragraphs, and ranking only the question's own article's;
    with ``gold_ranks`` also each question's 0-based rank of its gold paragraph in both
    rankings (for paired comparisons of two scorers on the same questions)."""
    start = time.perf_counter()
    scorer.fit(data.paragraphs)
    fitted = time.perf_counter()
    all_rankings, own_rankings = [], []
    for offset in range(0, len(data.questions), chunk):
        questions = data.questions[offset : offset + chunk]
        scores, selves = scorer.head_scores(questions), scorer.self_scores(questions)
        if selves is None:
            selves = [None] * len(scores)
        gold_chunk = data.gold[offset : offset + chunk]
        for row, self_row, gold in zip(scores, selves, gold_chunk, strict=True):
            own = np.flatnonzero(data.article_of == data.article_of[gold])
            all_rankings.append(rank_candidates(row, self_scores=self_row))
            own_rankings.append(rank_candidates(row, own, self_row))
    gold_sets = [{g} for g in data.gold]
    report = {
        "questions": len(data.questions),
        "paragraphs": len(data.paragraphs),
        "all_paragraphs": recall_at_k(all_rankings, gold_sets, ks),
        "own_article": recall_at_k(own_rankings, gold_sets, ks),
        "seconds_encode_paragraphs": round(fitted - start, 1),
        "seconds_questions": round(time.perf_counter() - fitted, 1),
    }
    if gold_ranks:
        report["gold_ranks"] = {
            name: [int(np.flatnonzero(r == g)[0]) for r, g in zip(rankings, data.gold, strict=True)]
            for name, rankings in (("all_paragraphs", all_rankings), ("own_article", own_rankings))
        }
    return report


class ParagraphRankingEvaluator:
    """The unsupervised paragraph-ranking :class:`~ctxsent.protocols.Evaluator` (Cross-Thought
    section 4.4, "HotpotQA(u)"): ``evaluator(model)`` ranks all of ``data``'s paragraphs
    for each question with :func:`scorer_for_model` (a :class:`PassageScorer` is used as
    is) and gives ``recall@k`` over all paragraphs and ``own_article_recall@k`` within the
    question's article, in percent, as :func:`evaluate_paragraph_ranking` reports them.

    Primary: recall at the largest ``k``, with the default ``ks`` Recall@20, the metric
    Cross-Thought Table 2 reports for HotpotQA(u): the ranking's job is a shortlist for a
    reader, and it is less noisy than Recall@1 on a small dev sample.
    """

    def __init__(
        self, data: ParagraphRanking, ks: Sequence[int] = DEFAULT_KS, batch_size: int = 64
    ) -> None:
        if not ks:
            raise ValueError("ks is empty")
        self.data = data
        self.ks = tuple(ks)
        self.batch_size = batch_size
        self.primary_metric = f"recall@{max(self.ks)}"

    def __call__(self, model) -> dict[str, float]:
        if isinstance(model, PassageScorer):
            scorer = model
        else:
            scorer = scorer_for_model(model, self.batch_size)
        report = evaluate_paragraph_ranking(scorer, self.data, self.ks)
        own = {f"own_article_{name}": value for name, value in report["own_article"].items()}
        return {**report["all_paragraphs"], **own}


def scorer_from_spec(spec: str, batch_size: int = 64, accelerator: str = "cpu") -> PassageScorer:
    """The scorer of a model spec (:func:`~ctxsent.resolver.load_retrieval_model`): ``bm25``
    (:class:`BM25Scorer`), any encoder (:func:`scorer_for_model`), or ``cosine:SPEC``
    (:class:`CosineScorer`, e.g. a Cross-Thought model by its special-token embeddings), its
    model on ``accelerator`` (:func:`~ctxsent.models.precision.on_accelerator`)."""
    model, cosine = load_retrieval_model(spec)
    model = on_accelerator(model, accelerator)
    if isinstance(model, BM25Ranker):
        return BM25Scorer()
    return CosineScorer(model, batch_size) if cosine else scorer_for_model(model, batch_size)


def squad_retrieval(
    models: Sequence[str],
    squad: str | Path,
    questions: int | None = None,
    seed: int = 0,
    batch_size: int = 64,
    accelerator: str = "cpu",
) -> dict:
    """What ``ctxsent eval retrieval`` prints: per model spec (:func:`scorer_from_spec`) its
    recalls (:func:`evaluate_paragraph_ranking`) on the paragraphs of the SQuAD file
    ``squad`` (:func:`squad_paragraph_ranking`)."""
    data = squad_paragraph_ranking(squad, questions, seed)
    return {
        spec: evaluate_paragraph_ranking(scorer_from_spec(spec, batch_size, accelerator), data)
        for spec in models
    }
