"""Tokenised pre-training data folders for Cross-Thought / MLM and the word-level encoders
(``ctxsent pretrain-data cross-thought`` and ``ctxsent pretrain-data encoder``).

A folder is an HF ``datasets`` (Arrow) folder that ``datasets.map(num_proc=N)`` writes from
the corpus's own Arrow storage, so neither is ever held in memory, plus :data:`SUMMARY` and
what the ids were made with; it is staged beside ``OUT`` and renamed. Trainers slice
examples from the memory-mapped table when a batch needs them (:class:`ArrowChunks`,
:class:`ArrowSentences`), so a run's memory does not grow with its corpus. Schemas:

* ``cross-thought``: one row per short sequence, in corpus order (the M consecutive
  sequences of a sample are one slice): ``input_ids`` list<int32> (``min_tokens``..L
  word-piece ids, no special tokens, no padding) and ``document`` int32 (its corpus row);
  ``tokenizer/`` holds the backbone's tokenizer.
* ``encoder``: one row per document with a sentence that has a word: ``sentences``
  list<list<int32>> (word ids of its sentences in reading order, sentences without a word
  dropped) and ``document`` int32; ``vocab.txt`` is the
  :class:`~ctxsent.text.vocabulary.Vocabulary` counted on the same sentences. Examples are
  cut when read, so one folder serves every preset with its ``vocab_size`` and
  ``max_sentences``.

``pretrain_data.json`` holds ``kind``, ``config``, the ``tokenizer`` or ``vocabulary`` (name,
size, digest), the ``corpus`` and ``exclusions`` applied, counts, and ``build`` (timing,
``num_proc``, corpus path). All but ``build`` is the data's identity (:func:`data_identity`),
which a run records, so resuming on other data is refused.

Choices: documents whose title is an evaluation overlap
(:data:`~ctxsent.corpus.titles.EVALUATION_OVERLAP_TITLES`, also for corpora built with
``--keep-evaluation-overlaps``) are skipped by both builders; ``max_sentences`` counts
sentences after those exclusions, wordless ones included (the vocabulary and the ids are
made from the same sentences).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ctxsent.corpus.titles import EVALUATION_OVERLAP_TITLES, normalize_title, normalize_titles
from ctxsent.errors import InputError
from ctxsent.io import atomic_path, check_output
from ctxsent.models.backbones import DEFAULT_BACKBONE
from ctxsent.presets import apply_overrides, get_preset

SUMMARY = "pretrain_data.json"
TOKENIZER_DIR = "tokenizer"
VOCABULARY_FILE = "vocab.txt"
DOCUMENTS_PER_CALL = 32  # documents per datasets.map call
FIRST_ROUND = 256  # documents read first when max_sequences may stop the build early
_WORKER: dict = {}  # per process: path -> the loaded tokenizer or vocabulary


def features(kind: str):
    """The ``datasets`` features of a ``cross-thought`` or ``encoder`` data folder."""
    from datasets import Features, List, Value

    ids = List(Value("int32"))
    column = {"cross-thought": "input_ids", "encoder": "sentences"}[kind]
    return Features(
        {column: ids if kind == "cross-thought" else List(ids), "document": Value("int32")}
    )


# ---- building -------------------------------------------------------------------------------
def build_cross_thought_data(
    corpus: str | Path,
    out: str | Path,
    preset: str,
    backbone: str = DEFAULT_BACKBONE,
    num_proc: int = 1,
    max_sequences: int | None = None,
    exclude_titles: Iterable[str] = EVALUATION_OVERLAP_TITLES,
    min_tokens: int = 8,
    overwrite: bool = False,
    overrides: Sequence[str] = (),
) -> dict:
    """Cut ``corpus`` into ``preset``'s short sequences (its ``sequence_length`` after the
    ``key=value`` ``overrides``) with ``backbone``'s tokenizer into the folder ``out``;
    return its summary.

    ``max_sequences`` keeps the first sequences only: documents are then read in rounds
    (256, 512, ... documents) until there are enough.
    """
    from datasets import concatenate_datasets
    from transformers import AutoTokenizer

    from ctxsent.models.backbones import resolve_backbone

    settings = apply_overrides(get_preset(preset, "cross-thought").config, overrides)
    sequence_length = settings.sequence_length
    if max_sequences is not None and max_sequences < 1:
        raise InputError(f"must be at least 1, got {max_sequences}", field="max_sequences")
    loaded, out = open_corpus(corpus, out, "cross-thought", num_proc, overwrite)
    tokenizer_path = resolve_backbone(backbone)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    excluded = normalize_titles(exclude_titles)
    kwargs = {
        "tokenizer_path": tokenizer_path,
        "sequence_length": sequence_length,
        "min_tokens": min_tokens,
        "excluded": excluded,
    }
    with staging(out, "cross-thought", overwrite) as (work, staged):
        clock = _Clock()
        parts, start, size, documents = [], 0, FIRST_ROUND, len(loaded)
        while start < documents and (max_sequences is None or sum(map(len, parts)) < max_sequences):
            stop = documents if max_sequences is None else min(documents, start + size)
            parts.append(
                _map(loaded.dataset.select(range(start, stop)), _chunk_call, "cross-thought",
                     num_proc, work / f"chunks-{start}.arrow", {**kwargs, "offset": start})
            )  # fmt: skip
            start, size = stop, 2 * size
        chunks = concatenate_datasets(parts)
        if max_sequences is not None and len(chunks) > max_sequences:
            chunks = chunks.select(range(max_sequences))
        if not len(chunks):
            raise InputError(f"gave no sequence of at least {min_tokens} tokens", path=corpus)
        build = clock.report(len(chunks), corpus, num_proc)
        chunks.save_to_disk(str(staged))
        tokenizer.save_pretrained(staged / TOKENIZER_DIR)
        summary = {
            "kind": "cross-thought",
            "config": {
                "preset": preset,
                "sequence_length": sequence_length,
                "min_tokens": min_tokens,
                "max_sequences": max_sequences,
            },
            "tokenizer": {
                "backbone": backbone,
                "words": len(tokenizer.get_vocab()),
                "digest": tokenizer_digest(tokenizer),
            },
            **_provenance(loaded, excluded, start),
            "sequences": len(chunks),
            "tokens": _total_length(chunks, "input_ids"),
            "build": build,
        }
        _write_summary(staged, summary)
    return summary


def _chunk_call(batch, indices, offset, tokenizer_path, sequence_length, min_tokens, excluded):
    """``datasets.map`` function: the short sequences of a batch of corpus documents."""
    from ctxsent.objectives.cross_thought import cut_sequences, paragraph_texts

    tokenizer = _worker_object(tokenizer_path)
    kept = [
        (offset + index, paragraph_texts(paragraphs))
        for index, title, paragraphs in zip(
            indices, batch["title"], batch["paragraphs"], strict=True
        )
        if normalize_title(title) not in excluded
    ]
    flat = [text for _, texts in kept for text in texts]
    encoded = tokenizer(flat, add_special_tokens=False)["input_ids"] if flat else []
    ids, documents, at = [], [], 0
    for document, texts in kept:
        tokens = [token for paragraph in encoded[at : at + len(texts)] for token in paragraph]
        at += len(texts)
        pieces = cut_sequences(tokens, sequence_length, min_tokens)
        ids += pieces
        documents += [document] * len(pieces)
    return {"input_ids": ids, "document": documents}


def build_encoder_data(
    corpus: str | Path,
    out: str | Path,
    vocab_size: int = 20_000,
    max_sentences: int | None = None,
    num_proc: int = 1,
    preset: str | None = None,
    exclude_titles: Iterable[str] = EVALUATION_OVERLAP_TITLES,
    overwrite: bool = False,
) -> dict:
    """Count a ``vocab_size``-word vocabulary on the first ``max_sentences`` sentences of
    ``corpus`` and write their word ids per document into the folder ``out`` (with
    ``vocab.txt``); return its summary. ``preset`` is recorded only."""
    import pyarrow.compute as pc

    from ctxsent.text.vocabulary import UNK_ID, Vocabulary

    if vocab_size < 1 or (max_sentences is not None and max_sentences < 1):
        raise InputError("vocab_size and max_sentences must be at least 1", field="vocab_size")
    loaded, out = open_corpus(corpus, out, "encoder", num_proc, overwrite)
    excluded = normalize_titles(exclude_titles)
    stop, last_sentences = _sentence_limit(loaded.dataset, excluded, max_sentences)
    source = loaded.dataset.select(range(stop))
    limit = {"excluded": excluded, "last": stop - 1, "last_sentences": last_sentences}
    with staging(out, "encoder", overwrite) as (work, staged):
        clock = _Clock()
        counted = _map(source, _count_call, "counts", num_proc, work / "counts.arrow", limit)
        totals = counted.data.table.group_by("word").aggregate([("count", "sum")])
        words = dict(zip(totals["word"].to_pylist(), totals["count_sum"].to_pylist(), strict=True))
        if not words:
            raise InputError("has no sentence with a word in it", path=corpus)
        vocabulary = Vocabulary.from_counts(words, vocab_size)
        del counted, totals, words
        vocabulary_path = staged / VOCABULARY_FILE
        staged.mkdir(parents=True)
        vocabulary.save(vocabulary_path)
        sentences = _map(source, _ids_call, "encoder", num_proc, work / "ids.arrow",
                         {**limit, "vocabulary_path": str(vocabulary_path)})  # fmt: skip
        flat = pc.list_flatten(sentences.data.table.column("sentences"))
        count = len(flat)
        build = clock.report(count, corpus, num_proc)
        tokens = _total_length(sentences, "sentences", nested=True)
        unknown = pc.sum(pc.equal(pc.list_flatten(flat), UNK_ID)).as_py() or 0
        sentences.save_to_disk(str(staged))  # beside vocab.txt
        summary = {
            "kind": "encoder",
            "config": {
                "preset": preset,
                "vocab_size": vocab_size,
                "max_sentences": max_sentences,
                "lowercase": vocabulary.lowercase,
            },
            "vocabulary": {
                "file": VOCABULARY_FILE,
                "words": len(vocabulary),
                "digest": _digest("\n".join(vocabulary.words)),
            },
            **_provenance(loaded, excluded, stop),
            "sentences": count,
            "tokens": tokens,
            "unknown_share": round(unknown / max(tokens, 1), 4),
            "build": build,
        }
        _write_summary(staged, summary)
    return summary


def _document_sentences(batch, indices, excluded, last, last_sentences) -> Iterator:
    """``(corpus row, sentences)`` of a batch's documents that are not excluded, the last
    document cut at ``last_sentences`` (the ``max_sentences`` limit)."""
    for index, title, paragraphs in zip(indices, batch["title"], batch["paragraphs"], strict=True):
        if normalize_title(title) in excluded:
            continue
        sentences = [sentence for paragraph in paragraphs for sentence in paragraph]
        yield index, sentences[:last_sentences] if index == last else sentences


def _count_call(batch, indices, **limit) -> dict:
    """``datasets.map`` function: word counts of a batch of documents."""
    from ctxsent.text.vocabulary import word_tokens

    counts: Counter[str] = Counter()
    for _, sentences in _document_sentences(batch, indices, **limit):
        for sentence in sentences:
            counts.update(word_tokens(sentence))
    return {"word": list(counts), "count": list(counts.values())}


def _ids_call(batch, indices, vocabulary_path, **limit) -> dict:
    """``datasets.map`` function: the word ids of each document's sentences."""
    vocabulary = _worker_object(vocabulary_path)
    rows, documents = [], []
    for index, sentences in _document_sentences(batch, indices, **limit):
        ids = [row for row in map(vocabulary.ids, sentences) if row]
        if ids:
            rows.append(ids)
            documents.append(index)
    return {"sentences": rows, "document": documents}


def _sentence_limit(
    dataset, excluded: frozenset, max_sentences: int | None
) -> tuple[int, int | None]:
    """``(documents to read, sentences of the last of them)`` for ``max_sentences`` sentences
    of the documents not excluded; counts from the Arrow offsets (no text is read)."""
    column = dataset.data.table.column("paragraphs")
    if max_sentences is None:
        return len(dataset), None
    sizes = np.concatenate(
        [np.diff(c.values.offsets.to_numpy()[c.offsets.to_numpy()]) for c in column.chunks]
    )
    titles = dataset.data.table.column("title").to_pylist()
    sizes[[normalize_title(title) in excluded for title in titles]] = 0
    totals = np.cumsum(sizes)
    stop = int(np.searchsorted(totals, max_sentences)) + 1
    if stop > len(sizes):
        return len(sizes), None
    return stop, int(max_sentences - (totals[stop - 2] if stop > 1 else 0))


# ---- shared helpers -------------------------------------------------------------------------
def open_corpus(corpus, out, kind: str, num_proc: int, overwrite: bool):
    """``(the corpus folder, out)``, both checked for a ``kind`` data build before any work."""
    from ctxsent.corpus.storage import load_corpus

    out = Path(out)
    check_output(out, f"{kind}-data", overwrite)
    if num_proc < 1:
        raise InputError(f"must be at least 1, got {num_proc}", field="num_proc")
    return load_corpus(corpus), out  # checks the folder before any work starts


@contextmanager
def staging(out: Path, kind: str, overwrite: bool) -> Iterator[tuple[Path, Path]]:
    """``(work folder, staged output)``; the output is renamed onto ``out`` on success, the
    work folder beside it removed with the staging folder."""
    from datasets import disable_caching

    disable_caching()
    with atomic_path(out, f"{kind}-data", overwrite=overwrite) as staged:
        work = staged.with_name(".work")
        work.mkdir()
        yield work, staged


def _map(source, function, kind: str, num_proc: int, cache: Path, kwargs: dict):
    from datasets import Features, Value

    output = (
        Features({"word": Value("string"), "count": Value("int64")})
        if kind == "counts"
        else features(kind)
    )
    return source.map(
        function,
        batched=True,
        batch_size=DOCUMENTS_PER_CALL,
        with_indices=True,
        remove_columns=source.column_names,
        features=output,
        num_proc=min(num_proc, max(1, len(source))),
        cache_file_name=str(cache),
        fn_kwargs=kwargs,
        desc=f"{kind} ({num_proc} processes)",
    )


def _worker_object(path: str):
    """The tokenizer folder or vocabulary file at ``path``, loaded once per process."""
    if path not in _WORKER:
        if path.endswith(VOCABULARY_FILE):
            from ctxsent.text.vocabulary import Vocabulary

            _WORKER[path] = Vocabulary.load(path)
        else:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(path)
            tokenizer.model_max_length = 2**62  # documents are cut after tokenising: no warning
            _WORKER[path] = tokenizer
    return _WORKER[path]


class _Clock:
    """Wall and CPU seconds of the build (CPU: this process and its finished workers)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), cpu_seconds()

    def report(self, examples: int, corpus, num_proc: int) -> dict:
        seconds = time.perf_counter() - self.wall
        cpu = cpu_seconds() - self.cpu
        return {
            "corpus": str(Path(corpus).resolve()),
            "num_proc": num_proc,
            "seconds": round(seconds, 3),
            "cpu_seconds": round(cpu, 3),
            "examples_per_second": round(examples / max(seconds, 1e-9), 1),
        }


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the map workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _provenance(corpus, excluded: frozenset, documents_read: int) -> dict:
    """The corpus, the exclusions its build and this build applied, documents read."""
    summary = corpus.summary
    titles = corpus.dataset.data.table.column("title").slice(0, documents_read).to_pylist()
    return {
        "corpus": {
            "documents": len(corpus),
            "excluded_titles": summary.get("filters", {}).get("excluded_title_count"),
            "documents_excluded_by_title": summary.get("dropped", {}).get(
                "documents_excluded_by_title"
            ),
        },
        "exclusions": {
            "titles": len(excluded),
            "documents_skipped": sum(normalize_title(t) in excluded for t in titles),
        },
        "documents_read": documents_read,
    }


def _total_length(dataset, column: str, nested: bool = False) -> int:
    import pyarrow.compute as pc

    values = dataset.data.table.column(column)
    if nested:
        values = pc.list_flatten(values)
    return int(pc.sum(pc.list_value_length(values)).as_py() or 0)


def _write_summary(staged: Path, summary: dict) -> None:
    (staged / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def tokenizer_digest(tokenizer) -> str:
    """A short fingerprint of a tokenizer's vocabulary (word pieces and their ids)."""
    return _digest(json.dumps(sorted(tokenizer.get_vocab().items())))


# ---- reading --------------------------------------------------------------------------------
def load_pretrain_data(path: str | Path, kind: str):
    """Open a ``kind`` data folder: ``(memory-mapped dataset, summary)``."""
    from datasets import load_from_disk

    path = Path(path)
    if not (path / SUMMARY).is_file() or not (path / "dataset_info.json").is_file():
        raise InputError(
            f"not a pre-training data folder (no {SUMMARY}); build one with "
            f"'ctxsent pretrain-data {kind}'",
            path=path,
        )
    summary = json.loads((path / SUMMARY).read_text(encoding="utf-8"))
    if summary.get("kind") != kind:
        raise InputError(
            f"holds {summary.get('kind')} data, not {kind} data; build it with "
            f"'ctxsent pretrain-data {kind}'",
            path=path,
        )
    dataset = load_from_disk(str(path))
    if dataset.features != features(kind):
        raise InputError(f"unexpected columns {dataset.features}", path=path)
    return dataset, summary


def data_identity(summary: dict) -> dict:
    """What a data folder holds (its summary without ``build``), for a run's settings."""
    return {key: value for key, value in summary.items() if key != "build"}


def check_cross_thought_data(summary: dict, path, sequence_length: int, tokenizer) -> None:
    """Refuse data cut for another sequence length or by another tokenizer than the model's."""
    built = summary["config"]
    if built["sequence_length"] != sequence_length:
        raise InputError(
            f"holds sequences of {built['sequence_length']} tokens (built for preset "
            f"{built['preset']}), the preset wants {sequence_length}; build its data with "
            "'ctxsent pretrain-data cross-thought --preset PRESET'",
            path=path,
        )
    if summary["tokenizer"]["digest"] != tokenizer_digest(tokenizer):
        raise InputError(
            f"was tokenised by {summary['tokenizer']['backbone']!r}, whose vocabulary is not "
            "the model's; rebuild it with 'ctxsent pretrain-data cross-thought --backbone B' "
            "for the run's backbone",
            path=path,
        )


def check_encoder_data(summary: dict, path, vocab_size: int, max_sentences: int | None) -> None:
    """Refuse data whose vocabulary settings differ from the run's."""
    built = summary["config"]
    if (built["vocab_size"], built["max_sentences"]) != (vocab_size, max_sentences):
        raise InputError(
            f"was built with vocab_size={built['vocab_size']}, max_sentences="
            f"{built['max_sentences']} (preset {built['preset']}), the run wants vocab_size="
            f"{vocab_size}, max_sentences={max_sentences}; rebuild it with 'ctxsent "
            "pretrain-data encoder --preset PRESET' and the run's --set options",
            path=path,
        )


class ArrowChunks:
    """A Cross-Thought data folder's sequences, sliced from the memory-mapped table on
    demand."""

    def __init__(self, dataset, sequence_length: int, pad_id: int) -> None:
        self.column = dataset.data.table.column("input_ids")
        self.sequence_length, self.pad_id = sequence_length, pad_id

    def __len__(self) -> int:
        return len(self.column)

    def rows(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Sequences ``[start, stop)``: ids ``(n, L)`` padded with ``pad_id``, and lengths."""
        ids = np.full((stop - start, self.sequence_length), self.pad_id, dtype=np.int32)
        lengths = np.empty(stop - start, dtype=np.int32)
        row = 0
        for chunk in self.column.slice(start, stop - start).chunks:
            offsets = chunk.offsets.to_numpy()
            n = len(chunk)
            lengths[row : row + n] = np.diff(offsets)
            filled = np.arange(self.sequence_length) < lengths[row : row + n, None]
            ids[row : row + n][filled] = chunk.values.to_numpy()[offsets[0] : offsets[-1]]
            row += n
        return ids, lengths


class ArrowSentences:
    """An encoder data folder's sentences, read from the memory-mapped table on demand (by the
    example datasets); it holds only each document's first sentence index."""

    def __init__(self, dataset) -> None:
        import pyarrow.compute as pc

        self.column = dataset.data.table.column("sentences")
        sizes = pc.list_value_length(self.column).to_numpy()
        self.first = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def __len__(self) -> int:
        return int(self.first[-1])

    def document_sizes(self) -> np.ndarray:
        return np.diff(self.first)

    def sentence_lengths(self) -> np.ndarray:
        import pyarrow.compute as pc

        return pc.list_value_length(pc.list_flatten(self.column)).to_numpy()

    def _document(self, i: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Sentence ``i``'s document: tokens, its sentences' offsets into them, and ``i``'s
        position among them."""
        document = int(np.searchsorted(self.first, i, side="right")) - 1
        row = next(c for c in self.column.slice(document, 1).chunks if len(c))
        sentences = row.flatten()
        return (
            sentences.values.to_numpy(),
            sentences.offsets.to_numpy(),
            int(i - self.first[document]),
        )

    def sentence(self, i: int) -> np.ndarray:
        tokens, offsets, s = self._document(i)
        return tokens[offsets[s] : offsets[s + 1]]

    def following(self, i: int, count: int) -> np.ndarray:
        """Up to ``count`` tokens after sentence ``i``, inside its document."""
        tokens, offsets, s = self._document(i)
        return tokens[offsets[s + 1] : min(offsets[s + 1] + count, offsets[-1])]
