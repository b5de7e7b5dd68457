"""SQuAD → an ASNQ-style AS2 set, following the SSP paper's NewsAS2 recipe (appendix A.2).

Articles are split into sentences (nupunkt, standing in for NLTK Punkt); each question is
paired with **every** sentence of its article (about 214 candidates on SQuAD v1.1 dev),
positive when it holds one of the question's answer spans, located by ``answer_start``
(not by string search, so another mention of the words stays negative). Choices:

* A span crossing a sentence boundary (26 of 34,726 annotations on v1.1 dev: splitter
  errors such as ``Trinity-St. | Paul's``, multi-sentence answers, a stray ``.``) makes
  positive every sentence holding one of its letters or digits, not one that only holds
  its ``.``.
* ``previous``/``next`` are the neighbouring sentences in article order, across paragraph
  boundaries; the paper "always provides the previous and the next sentence" (appendix D).
* Splits are by article: articles ordered by SHA-256 of ``"<seed>:<title>"`` and cut at
  :data:`SPLIT_FRACTIONS`; dev and test get ``round(share × articles)`` articles, at least
  :data:`MIN_EVAL_ARTICLES` while train keeps a third or more (fewer than 9 articles:
  ``articles // 3`` each). ``summary.json`` lists each split's titles. Seed 0 on v1.1 dev
  gives 34 / 7 / 7 articles (8,170 / 1,258 / 1,142 questions).
* A split lists its questions round-robin over its articles (a question's candidates
  together, in article order), so the first N questions (``--dev-questions N``) span
  min(N, articles) topics.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.io import atomic_path, atomic_write, check_output
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from ctxsent.tasks.as2_readers import read_json
from ctxsent.tasks.as2_records import As2Record
from ctxsent.text import neighbours, sentence_spans

SPLITS = ("train", "dev", "test")
SPLIT_FRACTIONS = (0.70, 0.15, 0.15)
MIN_EVAL_ARTICLES = 3
OUTPUT_KIND = "squad-as2"


@dataclass(frozen=True)
class SquadQuestion:
    question_id: str
    question: str
    positives: frozenset[int]
    """Indices into the article's sentences that contain an answer span."""


@dataclass(frozen=True)
class SquadArticle:
    title: str
    sentences: list[str]
    """All sentences of the article, paragraph after paragraph."""
    questions: list[SquadQuestion]

    def question_records(self, question: SquadQuestion) -> Iterator[As2Record]:
        """``question`` paired with every sentence of the article, in article order."""
        title, context = self.title.replace("_", " "), neighbours(self.sentences)
        for i, sentence in enumerate(self.sentences):
            yield As2Record(
                question.question_id, question.question, sentence, int(i in question.positives),
                *context[i], self.title, title,
            )  # fmt: skip


def read_squad_articles(path: str | Path) -> list[SquadArticle]:
    """Read a SQuAD v1.1-format JSON file (``.gz`` allowed) into sentence-split articles.

    Answers whose ``answer_start`` does not point at their ``text`` raise
    :class:`InputError` naming the question id.
    """
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError('expected {"data": [articles…]}', path=path, field="data")
    try:
        return [_article(path, article) for article in data["data"]]
    except (KeyError, TypeError) as err:
        raise InputError(f"not in SQuAD format ({type(err).__name__}: {err})", path=path) from None


def split_articles(
    titles: Sequence[str],
    seed: int = 0,
    fractions: tuple[float, float, float] = SPLIT_FRACTIONS,
) -> dict[str, list[str]]:
    """Assign article titles to train/dev/test deterministically (see the module docstring)."""
    ordered = sorted(titles, key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
    n = len(ordered)
    floor = min(MIN_EVAL_ARTICLES, n // 3)
    n_dev, n_test = (max(round(n * fraction), floor) for fraction in fractions[1:])
    n_train = n - n_dev - n_test
    return {
        "train": ordered[:n_train],
        "dev": ordered[n_train : n_train + n_dev],
        "test": ordered[n_train + n_dev :],
    }


def build_squad_as2(
    squad_path: str | Path, out_dir: str | Path, seed: int = 0, overwrite: bool = False
) -> dict:
    """Write ``{train,dev,test}.jsonl`` and ``summary.json`` to ``out_dir``; return the summary.

    The folder appears only when complete (written under a temporary name, then renamed);
    an existing one is replaced as :func:`~ctxsent.io.check_output` allows.
    """
    check_output(out_dir, OUTPUT_KIND, overwrite)
    articles = read_squad_articles(squad_path)
    by_title = {article.title: article for article in articles}
    if len(by_title) != len(articles):
        raise InputError("article titles are not unique", path=squad_path, field="title")
    splits = split_articles(list(by_title), seed)
    summary: dict = {
        "source": str(squad_path),
        "seed": seed,
        "split_fractions": dict(zip(SPLITS, SPLIT_FRACTIONS, strict=True)),
        "sentence_splitter": "nupunkt",
        "splits": {},
    }
    with atomic_path(out_dir, OUTPUT_KIND, overwrite=overwrite) as staged:
        staged.mkdir()
        for split, titles in splits.items():
            chosen = [by_title[title] for title in titles]
            write_as2_jsonl(_round_robin_records(chosen), staged / f"{split}.jsonl")
            summary["splits"][split] = _split_summary(chosen)
        with atomic_write(staged / "summary.json") as handle:
            json.dump(summary, handle, indent=2)
            handle.write("\n")
    return summary


def _round_robin_records(articles: list[SquadArticle]) -> Iterator[As2Record]:
    """The records of every question, taking one question from each article in turn."""
    queues = [[(article, question) for question in article.questions] for article in articles]
    for turn in zip_longest(*queues):
        for article, question in filter(None, turn):
            yield from article.question_records(question)


def _article(path: str | Path, article: dict) -> SquadArticle:
    sentences: list[str] = []
    questions: list[SquadQuestion] = []
    for paragraph in article["paragraphs"]:
        context = paragraph["context"]
        spans = sentence_spans(context)
        for qa in paragraph["qas"]:
            positives: set[int] = set()
            for answer in qa["answers"]:
                start, end = _answer_span(path, qa["id"], context, answer)
                holding = _sentences_holding(context, spans, start, end)
                positives.update(len(sentences) + i for i in holding)
            questions.append(SquadQuestion(qa["id"], qa["question"], frozenset(positives)))
        sentences.extend(context[start:end] for start, end in spans)
    return SquadArticle(article["title"], sentences, questions)


def _answer_span(path: str | Path, question_id: str, context: str, answer: dict) -> tuple[int, int]:
    """The answer's character span in ``context``, with surrounding whitespace trimmed."""
    text, start = answer["text"], answer["answer_start"]
    if not isinstance(start, int) or context[start : start + len(text)] != text:
        raise InputError(
            f"question {question_id}: answer {text!r} is not at offset {start}",
            path=path,
            field="answer_start",
        )
    start += len(text) - len(text.lstrip())
    return start, start + len(text.strip())


def _sentences_holding(
    context: str, spans: list[tuple[int, int]], start: int, end: int
) -> Iterator[int]:
    """Indices of the sentences that contain ``[start, end)`` or, when it crosses a
    boundary, that hold at least one of its letters or digits."""
    for i, (s_start, s_end) in enumerate(spans):
        if s_start <= start and end <= s_end:
            yield i
        elif s_start < end and start < s_end:
            overlap = context[max(start, s_start) : min(end, s_end)]
            if any(char.isalnum() for char in overlap):
                yield i


def _split_summary(articles: list[SquadArticle]) -> dict:
    candidates = [len(a.sentences) for a in articles for _ in a.questions]
    positives = [len(q.positives) for a in articles for q in a.questions]
    return {
        "articles": len(articles),
        "titles": [article.title for article in articles],
        "questions": len(candidates),
        "pairs": sum(candidates),
        "positives": sum(positives),
        "questions_without_positive": positives.count(0),
        "candidates_per_question": {
            "mean": round(sum(candidates) / len(candidates), 1) if candidates else 0.0,
            "min": min(candidates, default=0),
            "max": max(candidates, default=0),
        },
    }
