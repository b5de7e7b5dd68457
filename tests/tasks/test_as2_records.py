"""Question subsets of AS2 record lists."""

from ctxsent.tasks.as2_records import first_questions, sample_questions
from synthetic import make_records


def test_sample_questions_keeps_whole_questions_in_order_and_is_seeded():
    records = make_records(questions=12, candidates=3)
    sample = sample_questions(records, 5, seed=1)
    ids = [r.question_id for r in sample]
    assert len(sample) == 15 and len(set(ids)) == 5
    assert sample == [r for r in records if r.question_id in set(ids)]  # input order, whole
    assert sample == sample_questions(records, 5, seed=1)
    assert sample != sample_questions(records, 5, seed=2)
    assert sample != first_questions(records, 5)
    assert sample_questions(records, 50) == records


def test_first_questions_skips_whole_questions():
    records = make_records(questions=6, candidates=2)
    order = list(dict.fromkeys(r.question_id for r in records))
    held_out = first_questions(records, 3, skip=2)
    assert [r.question_id for r in held_out] == [q for q in order[2:5] for _ in range(2)]
    assert first_questions(records, 2) + held_out == first_questions(records, 5)
    assert first_questions(records, 3, skip=5) == [r for r in records if r.question_id == order[5]]
