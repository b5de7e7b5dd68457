import pytest
from transformers import AutoTokenizer

from ctxsent.models.backbones import resolve_backbone
from ctxsent.models.segments import encode_segments, pad_batch


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_backbone("minilm"))


def test_pairwise_layout_matches_the_tokenizer(tokenizer):
    [(ids, types)] = encode_segments(tokenizer, [["who wrote it?"], ["Austen wrote it."]])
    reference = tokenizer("who wrote it?", "Austen wrote it.")
    assert ids == reference["input_ids"]
    assert types == reference["token_type_ids"]


def test_three_segments_get_ids_0_1_2(tokenizer):
    [(ids, types)] = encode_segments(tokenizer, [["q"], ["answer"], ["before after"]])
    sep = tokenizer.sep_token_id
    assert ids[0] == tokenizer.cls_token_id and ids.count(sep) == 3
    first, second = ids.index(sep), ids.index(sep, ids.index(sep) + 1)
    assert set(types[: first + 1]) == {0}
    assert set(types[first + 1 : second + 1]) == {1}
    assert set(types[second + 1 :]) == {2}


def test_truncation_cuts_context_first_then_candidate(tokenizer):
    long = "word " * 300
    [(ids, types)] = encode_segments(tokenizer, [["short question"], [long], [long]], max_length=64)
    assert len(ids) == 64
    assert types.count(2) == 1  # only the context's [SEP] survives
    [(ids, types)] = encode_segments(tokenizer, [[long], [long]], max_length=100)
    assert len(ids) == 100 and types.count(0) >= 33 and types.count(1) >= 33


def test_pad_batch_pads_to_longest_and_masks():
    batch = pad_batch([([101, 5, 102], [0, 0, 0]), ([101, 102], [0, 0])], pad_id=0)
    assert batch["input_ids"].tolist() == [[101, 5, 102], [101, 102, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]


def test_mismatched_columns_are_rejected(tokenizer):
    with pytest.raises(ValueError, match="one entry per example"):
        encode_segments(tokenizer, [["a", "b"], ["c"]])
