import numpy as np
import pytest
from encoder_data import WORDS, write_word_vectors

from ctxsent.errors import InputError
from ctxsent.models.bag_of_words import WordVectors
from ctxsent.models.word_embeddings import (
    expand_embeddings,
    fit_expansion_map,
    pretrained_embeddings,
)
from ctxsent.text.vocabulary import PAD_ID, Vocabulary


@pytest.fixture
def vectors(tmp_path):
    return WordVectors.load(write_word_vectors(tmp_path / "vectors.txt", dim=4))


def test_initialisation_copies_known_words(vectors):
    vocabulary = Vocabulary.build([" ".join(WORDS) + " unknownword"])
    matrix, found = pretrained_embeddings(vocabulary, vectors)
    assert found == len(WORDS)
    cat = vocabulary.index["cat"]
    assert np.allclose(matrix[cat], vectors.vectors[vectors.index["cat"]])
    assert not np.allclose(matrix[vocabulary.index["unknownword"]], 0)
    assert np.all(matrix[PAD_ID] == 0)


def test_linear_map_expansion_recovers_a_linear_relation(tmp_path):
    vectors = WordVectors.load(write_word_vectors(tmp_path / "v.txt", dim=4, extra=30))
    vocabulary = Vocabulary.build([" ".join(WORDS)])
    rng = np.random.default_rng(1)
    weight, bias = rng.normal(size=(4, 6)), rng.normal(size=6)
    learned = rng.normal(size=(len(vocabulary), 6)).astype(np.float32)
    for word, i in vocabulary.index.items():
        if word in vectors.index and i >= 4:
            learned[i] = vectors.vectors[vectors.index[word]] @ weight + bias
    fitted_weight, fitted_bias = fit_expansion_map(vocabulary, learned, vectors)
    assert np.allclose(fitted_weight, weight, atol=1e-3)
    assert np.allclose(fitted_bias, bias, atol=1e-3)
    expanded, matrix = expand_embeddings(vocabulary, learned, vectors, "linear-map", 10)
    assert len(expanded) == len(vocabulary) + 10 and "." in expanded.index
    new = expanded.index["novel0"]
    expected = vectors.vectors[vectors.index["novel0"]] @ weight + bias
    assert np.allclose(matrix[new], expected, atol=1e-3)
    assert np.array_equal(matrix[: len(vocabulary)], learned)


def test_copy_expansion_uses_the_pretrained_vectors(vectors):
    vocabulary = Vocabulary.build(["cat dog"])
    learned = np.zeros((len(vocabulary), 4), dtype=np.float32)
    expanded, matrix = expand_embeddings(vocabulary, learned, vectors, "copy", 1000)
    assert len(expanded) == len(vocabulary) + len(vectors.words) - 2
    assert np.allclose(matrix[expanded.index["novel3"]], vectors.vectors[vectors.index["novel3"]])


def test_linear_map_needs_enough_shared_words(vectors):
    vocabulary = Vocabulary.build(["cat dog"])
    with pytest.raises(InputError, match="only 2 vocabulary words"):
        fit_expansion_map(vocabulary, np.zeros((len(vocabulary), 3)), vectors)
