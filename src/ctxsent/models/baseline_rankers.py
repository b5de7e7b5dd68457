"""Built-in AS2 baselines that need no training: BM25 and a zero-shot bi-encoder.

* ``bm25``: Okapi BM25 (bm25s, k1=1.5, b=0.75, English stop words). The index
  holds every distinct candidate of the scored records, so IDF comes from the
  whole evaluation set rather than from one question's ~10 candidates.
* ``bi-encoder``: cosine similarity of all-MiniLM-L6-v2 mean-pooled embeddings
  of the question and the candidate (the context is not used):
  :class:`~ctxsent.models.bi_encoder.BiEncoderRanker` built from a backbone, the same class
  that fine-tuned bi-encoders are saved and loaded as.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterator, Sequence

import numpy as np

from ctxsent.models.ranker_base import As2Ranker
from ctxsent.models.staged import finish, pieces
from ctxsent.tasks.as2_records import As2Record


class Bm25Index:
    """Okapi BM25 over a fixed collection (bm25s, English stop words); IDF from all of it.

    A collection with no indexable token (only stop words or punctuation, e.g. "It is. It
    was.") matches no question, and a question of stop words only ("Is it?") matches no
    passage: every passage scores 0 (bm25s cannot index or query them).
    """

    def __init__(
        self, passages: Sequence[str] | Sequence[list[str]], k1: float = 1.5, b: float = 0.75
    ) -> None:
        """``passages``: texts, or their :func:`tokens` (tokenised in pieces beforehand)."""
        import bm25s

        self.size = len(passages)
        self.retriever = bm25s.BM25(k1=k1, b=b)
        if passages and isinstance(passages[0], str):
            passages = tokens(passages)
        self.empty = not any(passages)
        if not self.empty:
            self.retriever.index(list(passages), show_progress=False)

    def scores(self, questions: Sequence[str]) -> Iterator[np.ndarray]:
        """One score per passage, for each question in turn."""
        import bm25s

        tokens = bm25s.tokenize(
            list(questions), stopwords="en", show_progress=False, return_ids=False
        )
        for question_tokens in tokens:
            if self.empty or not question_tokens:  # nothing indexed, or only stop words asked
                yield np.zeros(self.size, dtype=np.float32)
            else:
                yield self.retriever.get_scores(question_tokens)


def tokens(texts: Sequence[str]) -> list[list[str]]:
    """The terms BM25 indexes of each text (bm25s, English stop words removed)."""
    import bm25s

    return bm25s.tokenize(list(texts), stopwords="en", show_progress=False, return_ids=False)


class BM25Ranker(As2Ranker):
    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        return finish(self.predict_steps(records))

    def predict_steps(
        self, records: Sequence[As2Record], batch_size: int = 64, max_chars: float = math.inf
    ) -> Generator[float, None, np.ndarray]:
        """:meth:`predict` in steps for a service that interleaves requests: the candidates
        are tokenised in pieces of at most ``max_chars`` characters (one candidate at least),
        each yielding its characters; indexing and scoring follow in one last step
        (``batch_size`` is unused: BM25 has no forward pass)."""
        texts = list(dict.fromkeys(r.candidate for r in records))
        position = {text: i for i, text in enumerate(texts)}
        lengths = [len(text) for text in texts]
        terms: list[list[str]] = []
        for rows in pieces(np.arange(len(texts)), lengths, len(texts), max_chars):
            terms += tokens([texts[i] for i in rows])
            yield sum(lengths[i] for i in rows)
        index = Bm25Index(terms, self.k1, self.b)
        scores = np.empty(len(records), dtype=np.float32)
        rows_by_question: dict[str, list[int]] = {}
        for row, record in enumerate(records):
            rows_by_question.setdefault(record.question, []).append(row)
        for rows, all_scores in zip(
            rows_by_question.values(), index.scores(list(rows_by_question)), strict=True
        ):
            for row in rows:
                scores[row] = all_scores[position[records[row].candidate]]
        return scores
