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
