"""Stored runs: ``eval as2 --run-out`` and ``--against run:FILE``."""

import dataclasses

import numpy as np
import pytest

from ctxsent.errors import InputError
from ctxsent.evaluation.as2_evaluation import evaluate_as2
from ctxsent.evaluation.run_files import StoredRun, write_run
from ctxsent.models.ranker_base import As2Ranker
from synthetic import make_records


class DrawnRanker(As2Ranker):
    """Distinct scores drawn once per call (no model), with full float64 precision."""

    calls = 0

    def predict(self, records, batch_size=64, show_progress=False):
        self.calls += 1
        return np.random.default_rng(7).normal(size=len(records)) / 3.0


def test_a_stored_run_gives_back_every_score_exactly_and_the_same_comparison(tmp_path):
    records = make_records(questions=4, candidates=6)
    first, second = DrawnRanker(), DrawnRanker()
    run = tmp_path / "second.run"
    scored = evaluate_as2(second, records, run_out=run, run_tag="drawn model")
    lines = run.read_text().splitlines()
    assert len(lines) == len(records) and lines[0].split()[1::4] == ["Q0", "drawn_model"]
    stored = StoredRun(run)
    assert np.array_equal(stored.predict(records), second.predict(records))
    assert scored["map"] == evaluate_as2(stored, records)["map"]
    from_run, from_model = (
        evaluate_as2(first, records, against=other) for other in (stored, second)
    )
    for timing in ("seconds", "pairs_per_second"):
        from_run.pop(timing), from_model.pop(timing)
    assert from_run == from_model and from_run["against"]["difference"]["map"]["questions"] == 4


def test_a_run_read_against_other_data_is_refused_before_any_scoring(tmp_path):
    records = make_records(questions=3, candidates=5)
    run = tmp_path / "drawn.run"
    write_run(run, records, DrawnRanker().predict(records), "drawn")
    # the same questions and counts, one candidate's text changed
    edited = [*records[:-1], dataclasses.replace(records[-1], candidate="another sentence")]
    ranker = DrawnRanker()
    with pytest.raises(InputError, match=r"no score for question 'q2' candidate 4-.*1 of 15"):
        evaluate_as2(ranker, edited, against=StoredRun(run))
    assert ranker.calls == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q0 Q0 0-abc 1 0.5", r"bad.run:2: expected 6 fields .* found 5"),
        ("q0 Q0 0-abc 1 nan tag", r"bad.run:2: score 'nan' is not a finite number"),
        ("q0 Q0 0-abc 1 high tag", r"bad.run:2: score 'high' is not a finite number"),
    ],
)
def test_a_malformed_run_line_is_named_with_its_line(tmp_path, line, message):
    run = tmp_path / "bad.run"
    run.write_text(f"q0 Q0 1-abc 1 0.25 tag\n{line}\n")
    with pytest.raises(InputError, match=message):
        StoredRun(run)


def test_question_ids_a_run_cannot_hold_are_refused_before_scoring(tmp_path):
    records = [dataclasses.replace(r, question_id="question one") for r in make_records(2, 3)]
    ranker = DrawnRanker()
    run = tmp_path / "out.run"
    with pytest.raises(InputError, match="'question one' is empty or holds whitespace"):
        evaluate_as2(ranker, records, run_out=run)
    assert ranker.calls == 0 and not run.exists()
