from collections import Counter

import pytest
from ssp_corpus import documents, where

from ctxsent.errors import InputError
from ctxsent.models.backbones import resolve_backbone
from ctxsent.models.segments import encode_segments
from ctxsent.objectives.ssp import (
    OBJECTIVE_IDS,
    SentenceTokenizer,
    SspBuilder,
    SspConfig,
    SspObjective,
    encode_examples,
)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_backbone("minilm"))


def build(objective, docs=None, seed=0, **kwargs):
    docs = docs if docs is not None else documents(30)
    config = SspConfig(objective=objective, seed=seed, **kwargs)
    sentences, examples = SspBuilder(config).block_examples(0, docs)
    return docs, sentences, examples


def groups(examples):
    """Split the example list into (positive, negatives) groups."""
    out = []
    for example in examples:
        if example.label:
            out.append((example, []))
        else:
            out[-1][1].append(example)
    return out


def places(sentences, segment):
    return [where(sentences[i]) for i in segment]


@pytest.mark.parametrize("objective", ["sdc", "dpc", "dslc", "all"])
def test_positives_and_negatives_follow_section_4(objective):
    docs, sentences, examples = build(objective)
    found = groups(examples)
    assert len(found) > 20
    for positive, negatives in found:
        (s1,) = places(sentences, positive.s1)
        s2 = places(sentences, positive.s2)
        assert 1 <= len(s2) <= 3
        assert {(d, p) for d, p, _ in s2} == {s1[:2]}  # same paragraph
        assert [s for *_, s in s2] == list(range(s2[0][2], s2[0][2] + len(s2)))  # contiguous
        assert s1 not in s2
        assert len(negatives) == 4
        hard = easy = 0
        for negative in negatives:
            assert negative.s1 == positive.s1 and negative.objective == positive.objective
            n2 = places(sentences, negative.s2)
            assert len({(d, p) for d, p, _ in n2}) == 1 and 1 <= len(n2) <= 3
            if n2[0][0] == s1[0]:
                assert n2[0][1] != s1[1]
                hard += 1
            else:
                easy += 1
        assert hard <= 2 and hard + easy == 4
        if len([p for p in docs[s1[0]] if len(p) >= 2]) >= 3 and objective == "dpc":
            assert hard == 2  # enough other paragraphs: always 2 hard negatives


def _check_context(objective, sentences, example, docs):
    s2 = places(sentences, example.s2)
    context = places(sentences, example.context)
    d, p, _ = s2[0]
    taken = set(s2) | set(places(sentences, example.s1))
    if objective is SspObjective.SDC:
        assert p != 0
        assert context == [(d, 0, s) for s in range(len(docs[d][0]))]
    elif objective is SspObjective.DPC:
        expected = [(d, p, s) for s in range(len(docs[d][p])) if (d, p, s) not in taken]
        assert context == expected and context
    else:
        neighbours = {(d, p, s2[0][2] - 1), (d, p, s2[-1][2] + 1)} - taken
        assert context and set(context) <= neighbours
        assert context == sorted(context)


@pytest.mark.parametrize("objective", ["sdc", "dpc", "dslc"])
def test_context_is_the_one_each_objective_defines(objective):
    docs, sentences, examples = build(objective)
    objective = SspObjective(objective)
    assert {e.objective for e in examples} == {OBJECTIVE_IDS[objective]}
    for example in examples:
        _check_context(objective, sentences, example, docs)


def test_all_mixes_the_three_objectives_each_with_its_own_context():
    docs, sentences, examples = build("all", documents(60))
    counts = Counter(e.objective for e in examples if e.label)
    assert set(counts) == {0, 1, 2} and min(counts.values()) > 0.2 * max(counts.values())
    by_id = {v: k for k, v in OBJECTIVE_IDS.items()}
    for example in examples:
        _check_context(by_id[example.objective], sentences, example, docs)


def test_s2_lengths_cover_one_to_three_sentences():
    _, sentences, examples = build("sdc", documents(60))
    assert {len(e.s2) for e in examples if e.label} == {1, 2, 3}


def test_paragraphs_too_short_for_a_positive_are_skipped():
    short = [[["d0 p0 s0 only one sentence here."], ["d0 p1 s0 a lone sentence again."]]] * 3
    assert build("dpc", short)[2] == []
    two = [[["d0 p0 s0 first.", "d0 p0 s1 second."], ["d0 p1 s0 x.", "d0 p1 s1 y."]]]
    assert build("dslc", two)[2] == []  # DSLC needs a neighbour of s2 other than s1
    assert build("dpc", two)[2] == []  # DPC needs a non-empty context
    assert len([e for e in build("sdc", two)[2] if e.label]) == 1  # only paragraph 1 qualifies


def test_single_document_gives_no_easy_negatives():
    _, sentences, examples = build("dpc", documents(12)[:1])
    found = groups(examples)
    assert found
    for _, negatives in found:
        assert all(where(sentences[n.s2[0]])[0] == 0 for n in negatives)
        assert len(negatives) <= 2


def test_seed_determines_the_examples():
    first = build("all", seed=5)[2]
    assert build("all", seed=5)[2] == first
    assert build("all", seed=6)[2] != first
    assert SspBuilder(SspConfig(seed=5)).block_examples(1, documents(30))[1] != build("dpc")[2]


def test_bad_config_is_rejected_with_the_field():
    with pytest.raises(InputError, match="objective"):
        SspConfig(objective="nsp")
    with pytest.raises(InputError, match="max_hard_negatives"):
        SspConfig(max_hard_negatives=5)


def test_word_cached_tokenizer_matches_whole_sentence_tokenization(tokenizer):
    texts = [
        "Hello, world! The U.S. café isn't here (really).",
        "Numbers 3.14 and 1,000 — em-dash; naïve Zoë's résumé… ok?",
        "中文 字符 and tabs\tbetween  double  spaces.",
        "",
    ]
    fast = SentenceTokenizer(tokenizer)
    assert fast.word_level
    expected = tokenizer(texts, add_special_tokens=False)["input_ids"]
    assert fast(texts) == expected
    assert fast(texts[::-1]) == expected[::-1]  # from the cache


@pytest.mark.parametrize("max_length", [128, 40])
def test_encoding_equals_the_fine_tuning_segments(tokenizer, max_length):
    _, sentences, examples = build("dpc", documents(8))
    table = encode_examples(
        SentenceTokenizer(tokenizer),
        sentences,
        examples,
        max_length,
        tokenizer.cls_token_id,
        tokenizer.sep_token_id,
    )
    columns = [
        [" ".join(sentences[i] for i in getattr(e, name)) for e in examples]
        for name in ("s1", "s2", "context")
    ]
    expected = encode_segments(tokenizer, columns, max_length)
    ids = table.column("input_ids").to_pylist()
    types = table.column("token_type_ids").to_pylist()
    assert list(zip(ids, types, strict=True)) == [(list(i), list(t)) for i, t in expected]
    assert max(len(i) for i in ids) <= max_length
    assert table.column("label").to_pylist() == [e.label for e in examples]
