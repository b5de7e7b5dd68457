import numpy as np
import pytest
from encoder_data import corpus_sentences, synthetic_documents, tokenize_corpus

from ctxsent.corpus import Document
from ctxsent.errors import InputError
from ctxsent.text.vocabulary import (
    SPECIALS,
    UNK_ID,
    Vocabulary,
    word_tokens,
)


def test_word_tokens_split_clitics_and_punctuation():
    assert word_tokens("Don't stop, it's 1,000!") == [
        "do", "n't", "stop", ",", "it", "'s", "1", ",", "000", "!",
    ]  # fmt: skip


def test_build_keeps_most_frequent_words_with_alphabetical_ties():
    vocabulary = Vocabulary.build(["b b a c", "c a d"], size=2)
    assert vocabulary.words == [*SPECIALS, "a", "b"]  # a, b, c all twice: alphabetical
    assert vocabulary.ids("a d b") == [4, UNK_ID, 5]


def test_save_load_round_trip_and_bad_files(tmp_path):
    vocabulary = Vocabulary.build(["The Cat sat"], lowercase=False)
    vocabulary.save(tmp_path / "vocab.txt")
    loaded = Vocabulary.load(tmp_path / "vocab.txt")
    assert loaded.words == vocabulary.words and loaded.lowercase is False
    (tmp_path / "bad.txt").write_text("cat\ndog\n")
    with pytest.raises(InputError, match="bad.txt:1"):
        Vocabulary.load(tmp_path / "bad.txt")
    with pytest.raises(InputError, match="no such file"):
        Vocabulary.load(tmp_path / "absent.txt")
    with pytest.raises(InputError, match="empty corpus"):
        Vocabulary.build(["", "   "])


def test_tokenized_corpus_offsets_follow_documents():
    documents = [
        Document("a", "A", [["one two.", "three."], ["four five six."]]),
        Document("b", "B", [["seven."]]),
    ]
    vocabulary = Vocabulary.build(corpus_sentences(documents))
    corpus = tokenize_corpus(documents, vocabulary)
    assert [len(corpus.sentence(i)) for i in range(len(corpus))] == [3, 2, 4, 2]
    assert corpus.next_sentence.tolist() == [1, 2, -1, -1]
    assert corpus.document_ends.tolist() == [9, 9, 9, 11]
    words = [vocabulary.words[i] for i in corpus.sentence(2)]
    assert words == ["four", "five", "six", "."]


def test_tokenize_corpus_limit_and_empty_corpus():
    documents = synthetic_documents(4)
    vocabulary = Vocabulary.build(corpus_sentences(documents))
    assert len(tokenize_corpus(documents, vocabulary, limit=7)) == 7
    assert np.all(tokenize_corpus(documents, vocabulary, limit=7).tokens != UNK_ID)
    with pytest.raises(InputError, match="no sentence"):
        tokenize_corpus([Document("x", "X", [[""]])], vocabulary)
