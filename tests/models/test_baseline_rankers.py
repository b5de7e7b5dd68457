import numpy as np
import pytest

from ctxsent.errors import ModelFolderError
from ctxsent.models.baseline_rankers import BM25Ranker
from ctxsent.resolver import load_ranker
from ctxsent.tasks.as2_records import As2Record


def test_bm25_prefers_candidates_sharing_rare_question_words():
    records = [
        As2Record("q1", "when was the lighthouse lit", "The lighthouse was first lit in 1874.", 1),
        As2Record("q1", "when was the lighthouse lit", "Three keepers lived on the island.", 0),
        As2Record("q2", "who lived on the island", "Three keepers lived on the island.", 1),
        As2Record("q2", "who lived on the island", "The tower is painted white.", 0),
    ]
    scores = BM25Ranker().predict(records)
    assert scores[0] > scores[1] and scores[2] > scores[3]
    assert scores[3] == 0.0  # no shared non-stop word


def test_bm25_scores_zero_when_no_candidate_has_an_indexable_token():
    records = [As2Record("q1", "What is it?", text, 0) for text in ("It is.", "It was.")]
    assert BM25Ranker().predict(records).tolist() == [0.0, 0.0]


def test_load_ranker_rejects_unknown_folder(tmp_path):
    with pytest.raises(ModelFolderError, match="not a ctxsent model folder"):
        load_ranker(str(tmp_path))


@pytest.mark.integration
def test_bi_encoder_ranks_the_answer_first():
    ranker = load_ranker("bi-encoder")
    ranked = ranker.rank(
        "How tall is the tower?",
        ["The keepers left in 1989.", "The tower is 31 metres tall.", "It is on an island."],
    )
    assert ranked[0].index == 1
    assert np.isfinite([r.score for r in ranked]).all()


def test_bm25_scores_zero_for_a_question_of_stop_words_only():
    records = [As2Record("q1", "Is it?", text, 0) for text in ("A lamp.", "The tower.")]
    assert BM25Ranker().predict(records).tolist() == [0.0, 0.0]
