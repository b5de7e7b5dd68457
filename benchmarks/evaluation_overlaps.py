"""How much of the Wikipedia pre-training text each evaluation set's exclusion removes.

Reads ``wikipedia-en-2019/*.gz`` once, splits every paragraph into sentences and keeps
those the sentence length filter keeps (as ``ctxsent corpus build`` does), and for each
``--exclude-from`` source (and each group of the built-in list) prints the documents and
sentences it would drop: whole documents for sets excluded by title, single sentences
(and the documents holding them) for SentEval/STS sets. Prints JSON.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/evaluation_overlaps.py \
        --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ctxsent.corpus.exclusions import (
    exclusions_from_source,
    normalize_sentence,
    normalize_sentences,
)
from ctxsent.corpus.filters import CorpusFilter
from ctxsent.corpus.readers import read_documents
from ctxsent.corpus.titles import (
    EVALUATION_OVERLAP_TITLES,
    EVALUATION_OVERLAPS,
    normalize_title,
    normalize_titles,
)
from ctxsent.tasks.senteval import DEFAULT_TASKS
from ctxsent.text import split_sentences

MIN_SENTENCE_CHARS = CorpusFilter().min_sentence_chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    data = parser.parse_args().data
    wikipedia = sorted((data / "wikipedia-en-2019").glob("*.gz"))
    # (normalised title, normalised sentences) of every document
    documents = [
        (
            normalize_title(doc.title),
            [
                normalize_sentence(s)
                for p in doc.paragraphs
                for s in split_sentences(p)
                if len(s) >= MIN_SENTENCE_CHARS
            ],
        )
        for path in wikipedia
        for doc in read_documents(path)
    ]
    title_sets = {f"built-in {name}": titles for name, titles in EVALUATION_OVERLAPS.items()}
    title_sets["built-in, all (the default)"] = EVALUATION_OVERLAP_TITLES
    for spec in (
        f"wikiqa:{data / 'wikiqa'}",
        f"selqa:{data / 'selqa'}",
        f"squad:{data / 'squad/dev-v1.1.json.gz'}",
        f"wikitext:{data / 'wikitext-2-raw/wiki.valid.raw'}",
        f"wikitext:{data / 'wikitext-2-raw/wiki.test.raw'}",
    ):
        title_sets[spec] = exclusions_from_source(spec).titles
    sentence_specs = [f"{task.lower()}:{data}" for task in DEFAULT_TASKS if task != "SICK-E"]
    results: dict = {
        "corpus": [str(path) for path in wikipedia],
        "documents": len(documents),
        "sentences": sum(len(sentences) for _, sentences in documents),
        "sentence_counter": f"nupunkt sentences of at least {MIN_SENTENCE_CHARS} characters",
        "by_title": {},
        "by_sentence": {},
    }
    for name, titles in title_sets.items():
        excluded = normalize_titles(titles)
        hits = [sentences for title, sentences in documents if title in excluded]
        results["by_title"][name] = {
            "titles": len(excluded),
            "documents_removed": len(hits),
            "sentences_removed": sum(map(len, hits)),
        }
    for spec in [*sentence_specs, f"senteval:{data}"]:
        excluded = normalize_sentences(exclusions_from_source(spec).sentences)
        matches = [sum(text in excluded for text in sentences) for _, sentences in documents]
        results["by_sentence"][spec] = {
            "evaluation_sentences": len(excluded),
            "documents_touched": sum(count > 0 for count in matches),
            "sentences_removed": sum(matches),
        }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
