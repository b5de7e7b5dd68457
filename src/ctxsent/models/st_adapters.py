"""sentence-transformers models as ctxsent rankers, so our metrics can score them too.

``st:PATH`` (:class:`SentenceTransformerAdapter`) ranks by the cosine of question and
candidate embeddings, as ctxsent's bi-encoder does, and encodes through the model's own
``encode``; ``ce:PATH`` (:class:`CrossEncoderAdapter`) ranks by ``CrossEncoder.predict`` on
(question, candidate) pairs. Neither reads the candidate's context. sentence-transformers
is an optional dependency (``pip install 'ctxsent[bench]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ctxsent.errors import InputError
from ctxsent.models.backbones import resolve_backbone
from ctxsent.models.ranker_base import As2Ranker, cosine_scores
from ctxsent.protocols import MTEB_CONTEXT, as_texts
from ctxsent.tasks.as2_records import As2Record


def _sentence_transformers():
    try:
        import sentence_transformers
    except ImportError:
        raise InputError(
            "st: and ce: models need sentence-transformers (pip install 'ctxsent[bench]')",
            field="model",
        ) from None
    return sentence_transformers


class SentenceTransformerAdapter(As2Ranker):
    """A sentence-transformers bi-encoder: ``encode`` is its own, ranking is by cosine."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @classmethod
    def from_pretrained(cls, path: str) -> SentenceTransformerAdapter:
        library = _sentence_transformers()
        return cls(library.SentenceTransformer(resolve_backbone(path), device="cpu"))

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        normalize: bool = True,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """Embeddings from ``SentenceTransformer.encode``. ``texts`` may be MTEB 2's batches
        (:func:`~ctxsent.protocols.as_texts`); MTEB's :data:`~ctxsent.protocols.MTEB_CONTEXT`
        is dropped (no prompt is chosen from it, so it does not change the embeddings), its
        ``show_progress_bar`` stands for ``show_progress``, and other keyword arguments (a
        ``prompt``, ``precision``) go to ``SentenceTransformer.encode`` unchanged."""
        show_progress = options.pop("show_progress_bar", show_progress)
        return self.model.encode(
            as_texts(texts),
            batch_size=batch_size,
            normalize_embeddings=normalize,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
            **{name: value for name, value in options.items() if name not in MTEB_CONTEXT},
        )

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        return cosine_scores(records, lambda texts: self.encode(texts, batch_size))


class CrossEncoderAdapter(As2Ranker):
    """A sentence-transformers ``CrossEncoder``: one score per (question, candidate) pair."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @classmethod
    def from_pretrained(cls, path: str) -> CrossEncoderAdapter:
        library = _sentence_transformers()
        return cls(library.CrossEncoder(resolve_backbone(path), device="cpu"))

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        pairs = [(r.question, r.candidate) for r in records]
        scores = self.model.predict(
            pairs, batch_size=batch_size, show_progress_bar=show_progress, convert_to_numpy=True
        )
        return np.asarray(scores, dtype=np.float32).reshape(len(records))
