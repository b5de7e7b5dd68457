"""Word-vector loading (folder and text formats) and the bag-of-words encoder."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctxsent.errors import InputError
from ctxsent.models.bag_of_words import BagOfWordsEncoder, WordVectors


def test_text_format_with_and_without_word2vec_header(
    tmp_path: Path, tiny_vectors, tiny_vectors_file
) -> None:
    vectors = WordVectors.load(tiny_vectors_file)
    assert vectors.words == list(tiny_vectors) and vectors.dim == 4
    np.testing.assert_array_equal(vectors.vectors[vectors.index["movie"]], tiny_vectors["movie"])

    with_header = tmp_path / "w2v.txt.gz"
    with gzip.open(with_header, "wt", encoding="utf-8") as handle:
        handle.write("2 3\nthe 0.1 0.2 0.3\nof 1 2 3\n")
    assert WordVectors.load(with_header).words == ["the", "of"]


def test_folder_format_parquet_index_and_npy_matrix(tmp_path: Path) -> None:
    pq.write_table(pa.table({"index": ["the", "cat"]}), tmp_path / "words_index.parquet")
    np.save(tmp_path / "vectors.npy", np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32))
    vectors = WordVectors.load(tmp_path)
    assert vectors.index == {"the": 0, "cat": 1}
    np.testing.assert_array_equal(vectors.vectors[1], [3.0, 4.0])

    np.save(tmp_path / "vectors.npy", np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(InputError, match=r"matrix of shape \(3, 2\) does not match 2 words"):
        WordVectors.load(tmp_path)
    np.save(tmp_path / "more.npy", np.zeros((2, 2)))
    with pytest.raises(InputError, match="found 1 and 2"):
        WordVectors.load(tmp_path)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("a 1 2\nb 1\n", "expected a word and 2 numbers, found 2 fields", 2),
        ("a 1 2\nb 1 x\n", "non-numeric vector value", 2),
    ],
)
def test_malformed_vector_line_names_file_and_line(
    tmp_path: Path, text: str, message: str, line: int
) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        WordVectors.load(path)
    assert (err.value.path, err.value.line) == (str(path), line)


def test_missing_vectors_are_reported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such word-vector file"):
        WordVectors.load(tmp_path / "absent.txt")


def test_tokenizer_keeps_vocabulary_tokens_and_splits_the_rest(tiny_vectors_file) -> None:
    encoder = BagOfWordsEncoder(WordVectors.load(tiny_vectors_file))
    assert encoder.tokenize("Doesn't the U.S. movie") == ["does", "n't", "the", "u.s.", "movie"]
    assert encoder.tokenize("good movie.") == ["good", "movie", "."]
    assert encoder.tokenize("it's 'quoted'") == ["it", "'s", "'", "quoted", "'"]


def test_encode_averages_known_words_and_zeros_unknown_sentences(tiny_vectors_file) -> None:
    encoder = BagOfWordsEncoder(WordVectors.load(tiny_vectors_file))
    out = encoder.encode(["Good movie", "good unknownword bad", "", "nothing known"])
    np.testing.assert_allclose(out[0], [0.5, 0.5, 0, 0])
    np.testing.assert_allclose(out[1], [0, 0, 0, 0])  # (good + bad) / 2, OOV ignored
    np.testing.assert_array_equal(out[2:], np.zeros((2, 4)))
    assert out.dtype == np.float32


@pytest.mark.integration
def test_glove_6b_50d_package_vectors() -> None:
    encoder = BagOfWordsEncoder.glove()
    vectors = encoder.vectors
    assert (len(vectors.words), vectors.dim) == (400_000, 50)
    np.testing.assert_allclose(vectors.vectors[vectors.index["the"]][:2], [0.418, 0.24968])
    assert encoder.encode(["The cat sat ."]).shape == (1, 50)
