"""Naming an evaluator on the command line (``--eval``): kinds, options, refusals."""

from __future__ import annotations

import json

import pytest

from ctxsent.errors import InputError
from ctxsent.evaluation.retrieval import ParagraphRankingEvaluator
from ctxsent.evaluation.specs import evaluator_from_spec


@pytest.fixture
def squad(tmp_path):
    paragraphs = [
        {"context": f"paragraph {i} .", "qas": [{"question": f"q{i} a"}, {"question": f"q{i} b"}]}
        for i in range(3)
    ]
    path = tmp_path / "squad:dev.json"  # a colon in the name: the path is taken whole
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": paragraphs}]}))
    return path


def test_squad_spec_takes_a_question_count(squad):
    whole = evaluator_from_spec(f"squad:{squad}")
    assert isinstance(whole, ParagraphRankingEvaluator) and len(whole.data.questions) == 6
    assert whole.primary_metric == "recall@20"
    (squad.parent / "plain.json").write_text(squad.read_text())
    subset = evaluator_from_spec(f"squad:{squad.parent / 'plain.json'}:4")
    assert len(subset.data.questions) == 4
    with pytest.raises(InputError, match="must be a number"):
        evaluator_from_spec(f"squad:{squad.parent / 'plain.json'}:many")


@pytest.mark.parametrize(
    ("spec", "allowed", "message"),
    [
        ("bleu:x", ("as2", "senteval", "squad"), "unknown evaluator"),
        ("squad", ("as2", "senteval", "squad"), "unknown evaluator"),
        ("squad:x.json", ("senteval",), "does not evaluate this model"),
        ("heldout", ("senteval", "squad"), "does not evaluate this model"),
    ],
)
def test_unknown_or_inapplicable_specs_are_refused_in_one_line(spec, allowed, message):
    with pytest.raises(InputError, match=message):
        evaluator_from_spec(spec, allowed)


def test_missing_data_fails_before_training(tmp_path):
    with pytest.raises(InputError):
        evaluator_from_spec(f"squad:{tmp_path / 'nowhere.json'}")
    with pytest.raises(InputError):
        evaluator_from_spec(f"as2:wikiqa:{tmp_path}")
