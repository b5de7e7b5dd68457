"""Cross-Thought data folders: the chunks of chunk_documents, on disk, read lazily."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cross_thought_fixtures import chunk_documents, synthetic_documents
from transformers import AutoTokenizer

from ctxsent.errors import InputError
from ctxsent.objectives.cross_thought import ConsecutiveSequences
from ctxsent.objectives.pretrain_data import (
    SUMMARY,
    ArrowChunks,
    build_cross_thought_data,
    load_pretrain_data,
)
from synthetic import write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    documents = synthetic_documents(count=6, paragraphs=12)
    return documents, write_corpus(tmp_path_factory.mktemp("corpus") / "c", documents)


@pytest.mark.parametrize("num_proc", [1, 2])
def test_the_folder_holds_the_in_memory_chunks_in_corpus_order(
    corpus, tiny_bert, tmp_path, num_proc
):
    documents, folder = corpus
    summary = build_cross_thought_data(
        folder, tmp_path / "data", "cross-thought-3-64-cpu", str(tiny_bert), num_proc,
        exclude_titles=["town 2"],
    )  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    expected = chunk_documents(documents, tokenizer, 64, exclude_titles=["town 2"])
    dataset, stored = load_pretrain_data(tmp_path / "data", "cross-thought")
    chunks = ArrowChunks(dataset, 64, tokenizer.pad_token_id)
    ids, lengths = chunks.rows(0, len(chunks))
    np.testing.assert_array_equal(ids, expected.ids)
    np.testing.assert_array_equal(lengths, expected.lengths)
    assert dataset["document"] == sorted(dataset["document"]) and 2 not in dataset["document"]
    samples, reference = ConsecutiveSequences(chunks, 4), ConsecutiveSequences(expected, 4)
    for i in (0, len(samples) - 1):  # the last sample is short
        for got, want in zip(samples[i], reference[i], strict=True):
            np.testing.assert_array_equal(got, want)
    assert stored == summary == json.loads((tmp_path / "data" / SUMMARY).read_text())
    assert summary["sequences"] == len(expected) and summary["tokens"] == expected.tokens
    assert summary["exclusions"] == {"titles": 1, "documents_skipped": 1}
    assert summary["config"]["sequence_length"] == 64 and summary["build"]["num_proc"] == num_proc
    assert (tmp_path / "data" / "tokenizer" / "tokenizer.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["data"]  # no staging left behind


def test_max_sequences_keeps_the_first_ones_and_bad_folders_are_refused(
    corpus, tiny_bert, tmp_path
):
    documents, folder = corpus
    summary = build_cross_thought_data(
        folder, tmp_path / "data", "mlm-1-512-cpu", str(tiny_bert), max_sequences=3
    )
    expected = chunk_documents(documents, AutoTokenizer.from_pretrained(tiny_bert), 512)
    dataset, _ = load_pretrain_data(tmp_path / "data", "cross-thought")
    assert summary["sequences"] == 3
    assert dataset["input_ids"][2] == expected.ids[2][: expected.lengths[2]].tolist()
    with pytest.raises(InputError, match="not a ctxsent cross-thought-data output; pass --o"):
        build_cross_thought_data(folder, folder, "mlm-1-64", str(tiny_bert))  # a corpus
    with pytest.raises(InputError, match="holds cross-thought data, not encoder data"):
        load_pretrain_data(tmp_path / "data", "encoder")
    with pytest.raises(InputError, match="not a pre-training data folder"):
        load_pretrain_data(folder, "cross-thought")
    with pytest.raises(InputError, match="unknown preset"):
        build_cross_thought_data(folder, tmp_path / "other", "mlm-2-64", str(tiny_bert))
