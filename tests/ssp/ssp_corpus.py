"""Synthetic corpora for the SSP tests: every sentence names its document, paragraph and index."""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = ["lamp", "tower", "sea", "stone", "keeper", "island", "ship", "café", "U.S.", "don't"]


def sentence(doc: int, paragraph: int, index: int, rng: random.Random, words: int = 6) -> str:
    tail = " ".join(rng.choice(WORDS) for _ in range(words))
    return f"d{doc} p{paragraph} s{index} {tail}."


def documents(count: int = 12, seed: int = 0) -> list[list[list[str]]]:
    """``count`` documents of 1-6 paragraphs of 1-7 sentences (some too short for SSP)."""
    rng = random.Random(seed)
    docs = []
    for d in range(count):
        sizes = [rng.randint(1, 7) for _ in range(rng.randint(1, 6))]
        docs.append([[sentence(d, p, s, rng) for s in range(n)] for p, n in enumerate(sizes)])
    return docs


def where(text: str) -> tuple[int, int, int]:
    d, p, s = text.split()[:3]
    return int(d[1:]), int(p[1:]), int(s[1:])


def write_corpus(folder: Path, docs: list[list[list[str]]]) -> Path:
    """A corpus folder as ``ctxsent corpus build`` writes it."""
    from datasets import Dataset

    from ctxsent.corpus.storage import SUMMARY_FILE, corpus_features

    rows = [{"id": f"d{i}", "title": f"D{i}", "paragraphs": p} for i, p in enumerate(docs)]
    Dataset.from_list(rows, features=corpus_features()).save_to_disk(str(folder))
    (folder / SUMMARY_FILE).write_text(json.dumps({"documents": len(docs)}))
    return folder
