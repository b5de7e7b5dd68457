import numpy as np
import pytest

from ctxsent.errors import ModelFolderError
from ctxsent.models.baseline_rankers import BM25Ranker
from ctxsent.resolver import load_ranker
from ctxsent.tasks.as2_records import As2Record
from synthetic import run_steps


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


def test_bm25_in_steps_tokenises_pieces_of_bounded_characters_with_the_same_scores():
    words = ["lighthouse", "keeper", "stone", "tower", "lamp", "sea", "rock", "light", "storm"]
    records = [
        As2Record(f"q{i % 3}", ["the lamp", "who kept it", "stone tower"][i % 3],
                  " ".join(words[(i * j) % 9] for j in range(i % 9)), 0)
        for i in range(40)
    ]  # fmt: skip
    costs, scores = run_steps(BM25Ranker().predict_steps(records, max_chars=60))
    assert len(costs) > 3 and max(costs) <= 60
    np.testing.assert_array_equal(scores, BM25Ranker().predict(records))


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


def test_every_ranker_predicts_question_candidate_pairs_like_records(tiny_bert):
    from ctxsent.errors import InputError
    from ctxsent.models.cascade import CascadeRanker

    pairs = [
        ("when was the lamp lit", "The lamp was lit in 1874."),
        ("when was the lamp lit", "Keepers lived on the island."),
        ("who lived there", "Keepers lived on the island."),
    ]
    records = [As2Record(q, q, c, 0) for q, c in pairs]
    assert BM25Ranker().predict(pairs).tolist() == BM25Ranker().predict(records).tolist()
    cascade = CascadeRanker.from_backbone(str(tiny_bert), max_length=32).eval()
    np.testing.assert_array_equal(
        cascade.predict(pairs, alpha=0.5), cascade.predict(records, alpha=0.5)
    )
    assert cascade.last_cost.candidates_per_exit[:2] == [3, 2]  # pruned per question text
    with pytest.raises(InputError, match=r"records\[1\].*a \(question, candidate\) pair"):
        BM25Ranker().predict([pairs[0], ("only a question",)])
