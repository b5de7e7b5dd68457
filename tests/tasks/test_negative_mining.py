"""Hard negatives for question-answer pairs, and the train/dev split by document."""

from __future__ import annotations

import pytest

from ctxsent.errors import InputError, ModelFolderError
from ctxsent.resolver import candidate_scores
from ctxsent.tasks.as2_records import As2Record, group_by_question
from ctxsent.tasks.negative_mining import mine_negatives, split_by_document

# Two documents, three questions each, only answers. The BM25 scores (bm25s, English stop
# words) of the answers An of the other questions qn, from the same document and (after |)
# from the other document: no ties among the ones the tests pick.
#   q1: A3 0.40, A2 0   | 0      q4: A6 0.40, A5 0   | 0
#   q2: A1 0.60, A3 0   | 0      q5: A4 1.08, A6 0   | 0
#   q3: A1 0.40, A2 0   | 0      q6: A4 0.36, A5 0   | A3 0.60
PAIRS = [
    ("q1", "L", "when was the lighthouse first lit", "The lighthouse on the island was first lit."),
    ("q2", "L", "how many keepers lived on the island", "Three keepers lived there."),
    ("q3", "L", "what colour is the lighthouse tower", "The lighthouse tower is painted white."),
    ("q4", "S", "when did the ship sink", "The ship sank in 1901 near the rocks."),
    ("q5", "S", "who rescued the sailors near the rocks", "Fishermen rescued the sailors."),
    ("q6", "S", "what cargo did the tower ship carry", "The ship carried coal and timber."),
]
BM25 = candidate_scores("bm25")
ANSWER = {qid: answer for qid, _, _, answer in PAIRS}


def answers(documents: bool = True) -> list[As2Record]:
    return [
        As2Record(qid, question, answer, 1, "", f"after {qid}", doc if documents else "")
        for qid, doc, question, answer in PAIRS
    ]


def negatives(records: list[As2Record]) -> dict[str, list[str]]:
    """The mined candidates of each question, as the ids of the questions they answer."""
    owner = {answer: qid for qid, answer in ANSWER.items()}
    return {
        qid: [owner[r.candidate] for r in group if not r.label]
        for qid, group in group_by_question(records).items()
    }


def test_bm25_mines_the_best_scored_sentences_of_the_same_document():
    mined = mine_negatives(answers(), BM25, k=2, pool="document")
    assert negatives(mined) == {
        "q1": ["q3", "q2"], "q2": ["q1", "q3"], "q3": ["q1", "q2"],
        "q4": ["q6", "q5"], "q5": ["q4", "q6"], "q6": ["q4", "q5"],
    }  # fmt: skip
    first = mined[:3]  # each question's records, then its negatives
    assert [(r.question_id, r.label) for r in first] == [("q1", 1), ("q1", 0), ("q1", 0)]
    negative = first[1]  # the question's id and text, the candidate's context and document
    assert negative == As2Record("q1", PAIRS[0][2], ANSWER["q3"], 0, "", "after q3", "L")


def test_the_all_pool_draws_from_every_document():
    mined = mine_negatives(answers(), BM25, k=1, pool="all")
    assert negatives(mined) == {
        "q1": ["q3"], "q2": ["q1"], "q3": ["q1"], "q4": ["q6"], "q5": ["q4"], "q6": ["q3"]
    }  # fmt: skip
    assert mine_negatives(answers(), BM25, k=1) == mine_negatives(
        answers(), BM25, k=1, pool="document"
    )  # the default pool with document ids
    without = answers(documents=False)  # the default pool without document ids
    assert mine_negatives(without, BM25, k=1) == mine_negatives(without, BM25, k=1, pool="all")


def test_a_candidate_paired_with_the_question_text_is_never_mined():
    records = answers(documents=False)
    same_text = As2Record("q1-again", PAIRS[0][2], "A paraphrased answer.", 1)
    known = As2Record("q3", PAIRS[2][2], ANSWER["q1"], 0)  # q3's best, already a negative
    mined = mine_negatives([*records, same_text, known], BM25, k=7, pool="all")
    by_question = group_by_question(mined)
    assert "A paraphrased answer." not in {r.candidate for r in by_question["q1"]}
    assert ANSWER["q1"] not in {r.candidate for r in by_question["q1-again"]}
    assert [r.candidate for r in by_question["q3"]].count(ANSWER["q1"]) == 1
    every = {*ANSWER.values(), same_text.candidate}
    for qid, group in by_question.items():  # k covers the pool: each other candidate once
        candidates = [r.candidate for r in group]
        unseen = {"q1": {same_text.candidate}, "q1-again": {ANSWER["q1"]}}.get(qid, set())
        assert len(candidates) == len(set(candidates)) and set(candidates) == every - unseen


def test_ties_are_broken_by_the_seed_deterministically():
    unrelated = [As2Record(f"q{i}", f"zebra {i}?", f"Sentence number {i}.", 1) for i in range(9)]
    picks = {
        seed: [r.candidate for r in mine_negatives(unrelated, BM25, k=3, seed=seed)]
        for seed in range(4)
    }  # every score is 0: only the seed orders the candidates
    assert picks[0] == [r.candidate for r in mine_negatives(unrelated, BM25, k=3, seed=0)]
    assert len({tuple(p) for p in picks.values()}) > 1


def test_mining_refuses_bad_settings():
    with pytest.raises(InputError, match="field 'document_id': question 'q1' has an answer"):
        mine_negatives(answers(documents=False), BM25, pool="document")
    with pytest.raises(InputError, match="field 'pool'"):
        mine_negatives(answers(), BM25, pool="corpus")
    with pytest.raises(InputError, match="field 'negatives'"):
        mine_negatives(answers(), BM25, k=0)
    with pytest.raises(ModelFolderError, match="not a folder, nor a model name"):
        candidate_scores("tfidf")


def test_the_bi_encoder_encodes_each_distinct_text_once(tiny_bert, monkeypatch):
    from ctxsent.models.bi_encoder import BiEncoder

    encoded: list[str] = []
    encode = BiEncoder.encode

    def counting(self, texts, *args, **kwargs):
        encoded.extend(texts)
        return encode(self, texts, *args, **kwargs)

    monkeypatch.setattr(BiEncoder, "encode", counting)
    records = answers() + [As2Record("q1", PAIRS[0][2], ANSWER["q2"], 1, document_id="L")]
    mined = mine_negatives(records, candidate_scores(f"bi-encoder:{tiny_bert}"), k=2, pool="all")
    assert sorted(encoded) == sorted({*ANSWER.values(), *(question for _, _, question, _ in PAIRS)})
    for qid, group in group_by_question(mined).items():
        positives = {r.candidate for r in group if r.label}
        mined_here = [r.candidate for r in group if not r.label]
        assert len(mined_here) == 2 and not positives & set(mined_here), qid


def side(train: list[As2Record], qid: str) -> str:
    return "train" if qid in {r.question_id for r in train} else "dev"


def test_the_document_split_keeps_documents_and_questions_on_one_side():
    records = [
        As2Record(f"d{d}q{q}", f"question {q} on {d}?", f"s{d}.{q}", 1, document_id=f"d{d}")
        for d in range(10)
        for q in range(3)
    ]
    # a question answered in two documents ties them together; a repeated text ties ids
    records.append(As2Record("d0q0", "question 0 on 0?", "s7.9", 1, document_id="d7"))
    records.append(As2Record("again", "question 1 on 3?", "s3.9", 1))
    train, dev = split_by_document(records, dev_fraction=0.3, seed=1)
    assert sorted(train + dev, key=records.index) == records
    assert train == sorted(train, key=records.index) and dev == sorted(dev, key=records.index)
    for key in ("document_id", "question_id", "question"):
        train_keys = {getattr(r, key) for r in train} - {""}
        assert not train_keys & {getattr(r, key) for r in dev}, key
    assert side(train, "d0q1") == side(train, "d7q2") and side(train, "again") == side(
        train, "d3q0"
    )
    assert 0.3 * 31 <= len({r.question_id for r in dev}) < 0.3 * 31 + 6  # whole units
    assert split_by_document(records, 0.3, seed=1) == (train, dev)


def test_without_document_ids_the_split_is_by_question_text():
    records = answers(documents=False) + [As2Record("q7", PAIRS[0][2], "Again.", 1)]
    train, dev = split_by_document(records, dev_fraction=0.5, seed=0)
    assert {r.question for r in train}.isdisjoint({r.question for r in dev})
    assert side(train, "q1") == side(train, "q7")
    with pytest.raises(InputError, match="field 'dev_fraction'"):
        split_by_document(records, dev_fraction=1.0)
    with pytest.raises(InputError, match="cannot split"):
        split_by_document(answers()[:1], dev_fraction=0.5)


def test_mining_a_split_draws_only_from_that_split():
    train, dev = split_by_document(answers(documents=False), dev_fraction=0.5, seed=3)
    for part, other in ((train, dev), (dev, train)):
        mined = mine_negatives(part, BM25, k=5, pool="all")
        assert {r.candidate for r in mined} == {r.candidate for r in part}
        assert not {r.candidate for r in mined} & {r.candidate for r in other}
