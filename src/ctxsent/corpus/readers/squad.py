"""SQuAD JSON (``dev-v1.1.json``, ``.gz`` too): each article a document, each context a paragraph.

The file is one JSON value, so it is parsed whole (SQuAD files are tens of MB
at most). The document id and title are the article title as written
(``Super_Bowl_50``); questions and answers are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ctxsent.corpus.document import RawDocument
from ctxsent.errors import InputError
from ctxsent.tasks.as2_readers import read_json


def load_squad(path: str | Path, encoding: str = "utf-8") -> list[dict]:
    """The ``data`` list of a SQuAD file, checked to be a list of objects."""
    data = read_json(path, encoding)
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list) or not all(isinstance(a, dict) for a in articles):
        raise InputError("expected a list of article objects", path=path, field="data")
    return articles


def read_squad(path: str | Path, encoding: str = "utf-8") -> Iterator[RawDocument]:
    """Yield one document per SQuAD article."""
    for index, article in enumerate(load_squad(path, encoding)):
        title = article.get("title")
        paragraphs = article.get("paragraphs")
        if not isinstance(title, str):
            raise InputError("expected a string", path=path, field=f"data[{index}].title")
        if not isinstance(paragraphs, list):
            raise InputError("expected a list", path=path, field=f"data[{index}].paragraphs")
        contexts = []
        for k, paragraph in enumerate(paragraphs):
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            if not isinstance(context, str):
                field = f"data[{index}].paragraphs[{k}].context"
                raise InputError("expected a string", path=path, field=field)
            if context.strip():
                contexts.append(" ".join(context.split()))
        yield RawDocument(id=title, title=title, paragraphs=contexts)
