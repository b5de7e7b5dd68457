"""Build a corpus: read → exclude titles → split sentences → filter → Arrow, in parallel.

``datasets.Dataset.from_generator`` streams rows to Arrow files (bounded memory)
and runs the shards of :mod:`ctxsent.corpus.shards` in ``num_proc`` processes;
the output is identical for any ``num_proc``. Each shard writes its counts to a
side file that is summed into ``summary.json``. The output folder appears only
when everything succeeded (:func:`ctxsent.io.atomic_path`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ctxsent.corpus.exclusions import exclusions_from_source
from ctxsent.corpus.filters import CorpusFilter, process_document
from ctxsent.corpus.readers import CorpusFormat, detect_format
from ctxsent.corpus.shards import Shard, plan_shards
from ctxsent.corpus.stats import CorpusStats
from ctxsent.corpus.storage import SUMMARY_FILE, corpus_features, is_corpus_dir
from ctxsent.errors import InputError
from ctxsent.io import atomic_path, check_output, check_writable

if TYPE_CHECKING:
    import datasets

#: Rows buffered before a write; Wikipedia articles average ~30 kB of text.
WRITER_BATCH_SIZE = 100
_ERROR_FILE = "error.json"


def build_corpus(
    inputs: Sequence[str | Path],
    out: str | Path,
    *,
    fmt: CorpusFormat | str = CorpusFormat.AUTO,
    corpus_filter: CorpusFilter | None = None,
    exclude_from: Sequence[str] = (),
    encoding: str = "utf-8",
    num_proc: int = 1,
    overwrite: bool = False,
) -> dict:
    """Build the corpus of ``inputs`` into the folder ``out`` and return its summary.

    ``fmt`` applies to every input (``auto``: detected per file); ``exclude_from`` adds what
    each ``NAME:PATH`` source excludes (:func:`~ctxsent.corpus.exclusions.exclusions_from_source`)
    to the filter's exclusions. A warning counts the documents read without a paragraph break."""
    out = Path(out)
    check_corpus_output(out, overwrite)  # before the exclusions load
    corpus_filter = corpus_filter or CorpusFilter()
    if exclude_from:
        found = [exclusions_from_source(spec) for spec in exclude_from]
        corpus_filter = replace(
            corpus_filter,
            exclude_titles=corpus_filter.exclude_titles.union(*(e.titles for e in found)),
            exclude_sentences=corpus_filter.exclude_sentences.union(*(e.sentences for e in found)),
        )
    files = _resolve_formats(inputs, CorpusFormat(fmt))
    shards = plan_shards(files, encoding, num_proc)
    with atomic_path(out, "corpus", overwrite=overwrite) as staged:
        work = staged.with_name(".work")  # removed with the staging folder
        stats_dir = work / "stats"
        stats_dir.mkdir(parents=True)
        dataset = _generate_dataset(shards, corpus_filter, stats_dir, work / "cache", num_proc)
        dataset.save_to_disk(str(staged))
        summary = {
            "inputs": [{"path": str(path), "format": kind.value} for path, kind in files],
            "filters": corpus_filter.to_dict(),
            **_sum_stats(stats_dir, len(shards)).to_summary(),
        }
        (staged / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        del dataset
    unbroken = summary["read"]["documents_without_paragraph_breaks"]
    if unbroken:
        warnings.warn(
            f"{unbroken:,} document(s) had no blank line between paragraphs and each is one "
            "paragraph (in plain text, put a blank line between paragraphs)",
            stacklevel=2,
        )
    return summary


def _resolve_formats(
    inputs: Sequence[str | Path], fmt: CorpusFormat
) -> list[tuple[Path, CorpusFormat]]:
    if not inputs:
        raise InputError("no input files given")
    files = []
    for path in map(Path, inputs):
        if not path.is_file():
            raise InputError("no such file", path=path)
        files.append((path, detect_format(path) if fmt == CorpusFormat.AUTO else fmt))
    return files


def check_corpus_output(out: str | Path, overwrite: bool = False) -> None:
    """Raise :class:`InputError` unless a corpus may be built at ``out``: the one output
    rule (:func:`~ctxsent.io.check_output`, kind ``corpus``), and even with ``overwrite``
    no folder but a corpus is replaced (an ``--out`` naming the inputs' folder)."""
    out = Path(out)
    check_writable(out, folder=True)
    check_output(out, "corpus", overwrite)
    if overwrite and out.is_dir() and any(out.iterdir()) and not is_corpus_dir(out):
        raise InputError("exists and is not a corpus folder; choose another --out", path=out)


def _generate_dataset(
    shards: list[Shard],
    corpus_filter: CorpusFilter,
    stats_dir: Path,
    cache_dir: Path,
    num_proc: int,
) -> datasets.Dataset:
    from datasets import Dataset
    from datasets.exceptions import DatasetGenerationError

    try:
        return Dataset.from_generator(
            _generate_rows,
            features=corpus_features(),
            gen_kwargs={
                "shards": shards,
                "corpus_filter": corpus_filter,
                "stats_dir": str(stats_dir),
            },
            num_proc=num_proc if num_proc > 1 and len(shards) > 1 else None,
            cache_dir=str(cache_dir),
            writer_batch_size=WRITER_BATCH_SIZE,
        )
    except DatasetGenerationError:
        # Worker exceptions lose their cause when sent between processes; the
        # worker left the InputError it raised in a file.
        error_file = stats_dir / _ERROR_FILE
        if error_file.is_file():
            raise InputError(**json.loads(error_file.read_text(encoding="utf-8"))) from None
        raise
    except ValueError:
        # datasets cannot make a dataset of no rows; say why there are none.
        if len(list(stats_dir.glob("shard-*.json"))) == len(shards):
            stats = _sum_stats(stats_dir, len(shards))
            raise InputError(
                f"no document left: {stats.documents_read} read, {stats.documents_excluded} "
                f"excluded by title, {stats.documents_dropped} too short"
            ) from None
        raise


def _generate_rows(
    shards: list[Shard], corpus_filter: CorpusFilter, stats_dir: str
) -> Iterator[dict]:
    """The ``from_generator`` generator: rows of the given shards, counts to ``stats_dir``."""
    for shard in shards:
        stats = CorpusStats()
        try:
            for raw in shard.documents():
                document = process_document(raw, corpus_filter, stats)
                if document is not None:
                    yield document.to_row()
        except InputError as err:
            error = {"problem": err.problem, "path": err.path, "line": err.line, "field": err.field}
            (Path(stats_dir) / _ERROR_FILE).write_text(json.dumps(error), encoding="utf-8")
            raise
        stats.save(Path(stats_dir) / f"shard-{shard.index:05d}.json")


def _sum_stats(stats_dir: Path, num_shards: int) -> CorpusStats:
    total = CorpusStats()
    for index in range(num_shards):
        total.merge(CorpusStats.load(stats_dir / f"shard-{index:05d}.json"))
    return total
