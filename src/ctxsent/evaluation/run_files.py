"""Stored runs: one ranker's scores on an AS2 split, kept to compare against later.

``ctxsent eval as2 --run-out FILE`` writes the scored model's run; ``--against run:FILE``
compares with it instead of scoring a second model (a run scored on another machine, or the
slow half of a pair scored while the other model still trains). The format is trec_eval's,
one line per candidate: ``QID Q0 DOCID RANK SCORE TAG``. DOCID is ``K-DIGEST``: the
candidate's position in its question as the split lists it and the first 12 hex digits of
the SHA-256 of its text, so a run read against other data is refused instead of silently
scoring the wrong candidates. Scores are written with ``repr`` (exact round trip).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ctxsent.errors import InputError
from ctxsent.io import atomic_write, read_lines
from ctxsent.tasks.as2_records import As2Record

#: ``--against``'s prefix naming a stored run instead of a model.
RUN_PREFIX = "run:"
FIELDS = 6


def document_ids(records: Sequence[As2Record]) -> list[tuple[str, str]]:
    """``(question_id, DOCID)`` of every record, in record order (see the module docstring)."""
    seen: dict[str, int] = {}
    keys = []
    for record in records:
        position = seen.get(record.question_id, 0)
        seen[record.question_id] = position + 1
        digest = hashlib.sha256(record.candidate.encode("utf-8")).hexdigest()[:12]
        keys.append((record.question_id, f"{position}-{digest}"))
    return keys


def check_storable(records: Sequence[As2Record], path: str | Path) -> None:
    """Refuse, before any scoring, records whose question ids a run file cannot hold."""
    for record in records:
        question_id = record.question_id
        if not question_id or question_id.split() != [question_id]:
            raise InputError(
                f"question id {question_id!r} is empty or holds whitespace; a run file "
                "cannot store it",
                path=path,
            )


def write_run(
    path: str | Path, records: Sequence[As2Record], scores: Sequence[float], tag: str
) -> None:
    """Write ``scores`` (one per record) as a run, ranked within each question, best first."""
    check_storable(records, path)
    keys = document_ids(records)
    tag = "_".join(str(tag).split()) or "ctxsent"
    by_question: dict[str, list[tuple[float, str]]] = {}
    for (question_id, doc), score in zip(keys, scores, strict=True):
        by_question.setdefault(question_id, []).append((float(score), doc))
    with atomic_write(path) as handle:
        for question_id, scored in by_question.items():
            ranked = sorted(scored, key=lambda pair: -pair[0])
            for rank, (score, doc) in enumerate(ranked, start=1):
                handle.write(f"{question_id} Q0 {doc} {rank} {score!r} {tag}\n")


class StoredRun:
    """A run read back from a file; :meth:`predict` returns its score of each record, as a
    :class:`~ctxsent.protocols.Ranker` would (what :func:`evaluate_as2` compares)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.scores: dict[tuple[str, str], float] = {}
        for line_no, line in read_lines(self.path):
            if not line.strip():
                continue
            fields = line.split()
            if len(fields) != FIELDS:
                raise InputError(
                    f"expected {FIELDS} fields (QID Q0 DOCID RANK SCORE TAG), found {len(fields)}",
                    path=self.path,
                    line=line_no,
                )
            try:
                score = float(fields[4])
            except ValueError:
                score = math.nan
            if not math.isfinite(score):
                raise InputError(f"score {fields[4]!r} is not a finite number",
                                 path=self.path, line=line_no)  # fmt: skip
            self.scores[(fields[0], fields[2])] = score

    def predict(self, records: Sequence[As2Record], **_: object) -> np.ndarray:
        """The stored score of each record; a record the run lacks is an :class:`InputError`."""
        keys = document_ids(records)
        missing = [key for key in keys if key not in self.scores]
        if missing:
            question_id, doc = missing[0]
            raise InputError(
                f"no score for question {question_id!r} candidate {doc} ({len(missing)} of "
                f"{len(keys)} candidates missing): the run was scored on other data",
                path=self.path,
            )
        return np.array([self.scores[key] for key in keys], dtype=np.float64)
