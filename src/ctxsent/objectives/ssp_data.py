"""Writing tokenised SSP example datasets (``ctxsent pretrain-data ssp``).

``datasets.map`` over the corpus's blocks of ``block_size`` documents
(:mod:`ctxsent.objectives.ssp`), in ``num_proc`` workers, builds and tokenises each block
and streams the rows to Arrow, so neither the corpus nor the output is held in memory. The
output is an HF ``datasets`` folder with ``input_ids`` (int32), ``token_type_ids`` (int8),
``label`` and ``objective`` (int8), plus ``ssp.json`` (config, counts, timing) and
``tokenizer/`` (a backbone's, or one trained on the corpus for models built from scratch),
written atomically.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.objectives.pretrain_data import cpu_seconds, open_corpus, staging
from ctxsent.objectives.ssp import SentenceTokenizer, SspBuilder, SspConfig, encode_examples

SSP_SUMMARY = "ssp.json"
TOKENIZER_DIR = "tokenizer"
_WORKER_STATE: dict = {}  # per process: (corpus path, tokenizer path) -> loaded objects


def ssp_features():
    from datasets import Features, List, Value

    return Features(
        {
            "input_ids": List(Value("int32")),
            "token_type_ids": List(Value("int8")),
            "label": Value("int8"),
            "objective": Value("int8"),
        }
    )


def _load(corpus_path: str, tokenizer_path: str):
    key = (corpus_path, tokenizer_path)
    if key not in _WORKER_STATE:
        from transformers import AutoTokenizer

        from ctxsent.corpus.storage import load_corpus

        tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
        _WORKER_STATE.clear()
        _WORKER_STATE[key] = (
            load_corpus(corpus_path).dataset,
            tokenizer,
            SentenceTokenizer(tokenizer),
        )
    return _WORKER_STATE[key]


def _build_blocks(
    batch: dict, corpus_path: str, tokenizer_path: str, config: dict, documents: int
) -> dict:
    """``datasets.map`` function: the encoded examples of the given block numbers."""
    import pyarrow as pa

    dataset, tokenizer, sentence_tokenizer = _load(corpus_path, tokenizer_path)
    config = SspConfig(**config)
    builder = SspBuilder(config)
    tables = []
    for block in batch["block"]:
        start = block * config.block_size
        rows = dataset[start : min(start + config.block_size, documents)]["paragraphs"]
        sentences, examples = builder.block_examples(block, rows)
        tables.append(
            encode_examples(
                sentence_tokenizer,
                sentences,
                examples,
                config.max_length,
                tokenizer.cls_token_id,
                tokenizer.sep_token_id,
            )
        )
    return pa.concat_tables(tables).cast(ssp_features().arrow_schema)


def _check_tokenizer(tokenizer) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise InputError("SSP data needs a fast (Rust) tokenizer", field="tokenizer")
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise InputError("the tokenizer has no [CLS]/[SEP] tokens", field="tokenizer")


def build_ssp_dataset(
    corpus: str | Path,
    out: str | Path,
    config: SspConfig,
    tokenizer: str = "all-MiniLM-L6-v2",
    num_proc: int = 1,
    overwrite: bool = False,
    max_documents: int | None = None,
    vocab_size: int | None = None,
) -> dict:
    """Build the SSP examples of ``corpus`` into the folder ``out``; return the summary.

    ``tokenizer`` is a backbone name, HF folder or hub id (see
    :func:`~ctxsent.models.backbones.resolve_backbone`); ``vocab_size``, when
    given, replaces it with a WordPiece tokenizer of that size trained on the
    same documents (:func:`~ctxsent.corpus.tokenizer_training.train_wordpiece`);
    ``max_documents`` keeps only the first documents of the corpus (quick
    runs, benchmarks).
    """
    from datasets import Dataset, load_from_disk
    from transformers import AutoTokenizer

    from ctxsent.corpus.tokenizer_training import train_wordpiece
    from ctxsent.models.backbones import resolve_backbone

    loaded_corpus, out = open_corpus(corpus, out, "ssp", num_proc, overwrite)
    documents = len(loaded_corpus)
    if max_documents is not None:
        documents = min(documents, max_documents)
    if vocab_size is None:
        tokenizer_path = resolve_backbone(tokenizer)
        loaded = AutoTokenizer.from_pretrained(tokenizer_path)
        _check_tokenizer(loaded)
        tokenizer_name = tokenizer
    else:
        tokenizer_name = f"wordpiece-{vocab_size} trained on the corpus"
    blocks = -(-documents // config.block_size)
    started = time.perf_counter()
    cpu_started = cpu_seconds()
    with staging(out, "ssp", overwrite) as (work, staged):
        if vocab_size is not None:
            tokenizer_path = str(work / TOKENIZER_DIR)
            train_wordpiece(corpus, tokenizer_path, vocab_size, max_documents)
            loaded = AutoTokenizer.from_pretrained(tokenizer_path)
        built = Dataset.from_dict({"block": list(range(blocks))}).map(
            _build_blocks,
            batched=True,
            batch_size=1,
            remove_columns=["block"],
            features=ssp_features(),
            num_proc=min(num_proc, max(1, blocks)),
            fn_kwargs={
                "corpus_path": str(Path(corpus).resolve()),
                "tokenizer_path": tokenizer_path,
                "config": _plain(config),
                "documents": documents,
            },
            cache_file_name=str(work / "ssp.arrow"),
            desc=f"SSP {config.objective.value} blocks",
        )
        seconds = time.perf_counter() - started
        cpu = cpu_seconds() - cpu_started
        built.save_to_disk(str(staged))
        loaded.save_pretrained(staged / TOKENIZER_DIR)
        summary = _summary(built, config, tokenizer_name, documents, blocks, num_proc)
        summary["seconds"] = round(seconds, 3)
        summary["cpu_seconds"] = round(cpu, 3)
        summary["examples_per_second"] = round(len(built) / seconds, 1)
        summary["examples_per_cpu_second"] = round(len(built) / max(cpu, 1e-9), 1)
        (staged / SSP_SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")
        del built
    load_from_disk(str(out))  # fail here, not hours later, if the folder does not load
    return summary


def _plain(config: SspConfig) -> dict:
    fields = asdict(config)
    fields["objective"] = config.objective.value
    return fields


def _summary(built, config: SspConfig, tokenizer: str, documents, blocks, num_proc) -> dict:
    import pyarrow.compute as pc

    table = built.data.table
    labels = table.column("label")
    objectives = pc.value_counts(table.column("objective")).to_pylist()
    lengths = pc.list_value_length(table.column("input_ids"))
    positives = pc.sum(labels).as_py() or 0
    return {
        "config": _plain(config),
        "tokenizer": tokenizer,
        "documents": documents,
        "blocks": blocks,
        "num_proc": num_proc,
        "examples": len(built),
        "positives": positives,
        "negatives": len(built) - positives,
        "by_objective": {
            ["sdc", "dpc", "dslc"][row["values"]]: row["counts"] for row in objectives
        },
        "mean_tokens": round(pc.mean(lengths).as_py() or 0.0, 2),
        "truncated_share": round(
            (pc.sum(pc.equal(lengths, config.max_length)).as_py() or 0) / max(1, len(built)), 4
        ),
    }


def example_lengths(dataset):
    """Tokens in each example of a loaded SSP dataset (numpy), for length-grouped batches."""
    import pyarrow.compute as pc

    return pc.list_value_length(dataset.data.table.column("input_ids")).to_numpy()


def ssp_batch(dataset, indices: list[int], pad_id: int) -> dict:
    """``{"features": padded model inputs, "labels": float tensor}`` of examples ``indices``."""
    import torch

    from ctxsent.models.segments import pad_batch

    rows = dataset[indices]
    encoded = list(zip(rows["input_ids"], rows["token_type_ids"], strict=True))
    return {
        "features": pad_batch(encoded, pad_id),
        "labels": torch.tensor(rows["label"], dtype=torch.float32),
    }


def load_ssp_dataset(path: str | Path):
    """Open a folder written by :func:`build_ssp_dataset`: ``(dataset, summary)``."""
    from datasets import load_from_disk

    path = Path(path)
    if not (path / SSP_SUMMARY).is_file() or not (path / "dataset_info.json").is_file():
        raise InputError(f"not an SSP dataset folder (no {SSP_SUMMARY})", path=path)
    dataset = load_from_disk(str(path))
    if dataset.features != ssp_features():
        raise InputError(f"unexpected columns {dataset.features}", path=path)
    return dataset, json.loads((path / SSP_SUMMARY).read_text(encoding="utf-8"))
