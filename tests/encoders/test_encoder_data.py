"""Encoder data folders: the vocabulary and sentences of the in-memory path, read lazily."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from encoder_data import corpus_sentences, synthetic_documents, tokenize_corpus, write_corpus

import ctxsent
from ctxsent.errors import InputError
from ctxsent.objectives.next_window import NextWindowDataset
from ctxsent.objectives.pretrain_data import (
    VOCABULARY_FILE,
    ArrowSentences,
    build_encoder_data,
    load_pretrain_data,
)
from ctxsent.objectives.reconstruct import SentenceDataset
from ctxsent.presets import get_preset
from ctxsent.text.vocabulary import Vocabulary
from ctxsent.training.encoder_pretrain import pretrain_encoder


@pytest.fixture(scope="module")
def documents():
    return synthetic_documents(9, seed=4)


@pytest.mark.parametrize(("num_proc", "limit"), [(1, None), (2, 23)])
def test_the_folder_holds_the_in_memory_vocabulary_and_sentences(
    documents, tmp_path, num_proc, limit
):
    corpus = write_corpus(tmp_path / "corpus", documents)
    summary = build_encoder_data(corpus, tmp_path / "data", 10, limit, num_proc, "rnn-cnn-small")
    vocabulary = Vocabulary.build(corpus_sentences(documents, limit), 10)
    expected = tokenize_corpus(documents, vocabulary, limit)
    assert Vocabulary.load(tmp_path / "data" / VOCABULARY_FILE).words == vocabulary.words
    rows, stored = load_pretrain_data(tmp_path / "data", "encoder")
    lazy = ArrowSentences(rows)
    assert len(lazy) == len(expected) == summary["sentences"] == stored["sentences"]
    np.testing.assert_array_equal(lazy.document_sizes(), expected.document_sizes())
    np.testing.assert_array_equal(lazy.sentence_lengths(), expected.sentence_lengths())
    for made, reference in [
        (NextWindowDataset(lazy, "window", 7, 5), NextWindowDataset(expected, "window", 7, 5)),
        (NextWindowDataset(lazy, "sentence", 4), NextWindowDataset(expected, "sentence", 4)),
        (SentenceDataset(lazy, 6), SentenceDataset(expected, 6)),
    ]:
        assert len(made) == len(reference)
        np.testing.assert_array_equal(made.input_lengths(), reference.input_lengths())
        for k in range(len(made)):
            got, want = made[k], reference[k]
            pairs = zip(got, want, strict=True) if isinstance(got, tuple) else [(got, want)]
            for got_ids, want_ids in pairs:
                np.testing.assert_array_equal(got_ids, want_ids)
    assert summary["tokens"] == len(expected.tokens) and summary["config"]["max_sentences"] == limit
    assert rows["document"] == sorted(rows["document"])


def _tiny(**settings):
    return replace(
        get_preset("mean-max-aae-cpu").config,
        **{"embedding_dim": 8, "hidden_size": 8, "ffn_size": 16, "heads": 2, "batch_size": 4,
         "word_vectors": "none", "expand_vocabulary": 0, "max_sentences": None,
         "vocab_size": 10, "accelerator": "cpu", "dropout": 0.2, **settings},
    )  # fmt: skip


def test_training_resumes_exactly_and_refuses_other_vocabulary_settings(documents, tmp_path):
    corpus = write_corpus(tmp_path / "corpus", documents)
    data = tmp_path / "data"
    build_encoder_data(corpus, data, vocab_size=10, preset="mean-max-aae-cpu")
    pretrain_encoder(data, tmp_path / "straight", _tiny(max_steps=5))
    pretrain_encoder(data, tmp_path / "resumed", _tiny(max_steps=2, keep_checkpoints=True))
    summary = pretrain_encoder(data, tmp_path / "resumed", _tiny(max_steps=5))
    assert summary["progress"]["resumed"] and summary["progress"]["steps"] == 5
    a = ctxsent.load(tmp_path / "straight" / "model").state_dict()
    b = ctxsent.load(tmp_path / "resumed" / "model").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(InputError, match=f"^{data}: was built with vocab_size=10, max_sent"):
        pretrain_encoder(data, tmp_path / "other", _tiny(vocab_size=20))
