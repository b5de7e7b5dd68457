"""Property tests of three-segment tokenisation: valid ids within budget, or ValueError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxsent.models.backbones import resolve_backbone
from ctxsent.models.segments import encode_segments

texts = st.text(max_size=120) | st.sampled_from(["", " ", "\x00", "[SEP]", "[CLS] a", "é" * 50])


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_backbone("minilm"))


@settings(max_examples=50, deadline=None)
@given(
    rows=st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=4),
    segments=st.integers(1, 3),
    max_length=st.integers(4, 80),
)
def test_segments_fit_the_budget_and_keep_their_order(tokenizer, rows, segments, max_length):
    columns = [[row[k] for row in rows] for k in range(segments)]
    encoded = encode_segments(tokenizer, columns, max_length)
    assert len(encoded) == len(rows)
    for (ids, types), row in zip(encoded, rows, strict=True):
        assert len(ids) == len(types) <= max_length
        assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
        assert ids.count(tokenizer.sep_token_id) >= segments
        assert types == sorted(types) and set(types) == set(range(segments))
        pieces = [tokenizer(row[k], add_special_tokens=False)["input_ids"] for k in range(segments)]
        if sum(map(len, pieces)) + segments + 1 <= max_length:  # fits: nothing is cut
            expected = [tokenizer.cls_token_id]
            for piece in pieces:
                expected += piece + [tokenizer.sep_token_id]
            assert ids == expected


@settings(max_examples=30, deadline=None)
@given(
    columns=st.lists(st.lists(texts, min_size=0, max_size=3), min_size=0, max_size=5),
    max_length=st.integers(-2, 40),
)
def test_any_column_shape_or_budget_works_or_raises_value_error(tokenizer, columns, max_length):
    try:
        encoded = encode_segments(tokenizer, columns, max_length)
    except ValueError:
        return
    assert all(len(ids) <= max_length for ids, _ in encoded)
