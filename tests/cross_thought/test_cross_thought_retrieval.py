"""Recall@k, candidate ranking by averaged attention weights, BM25 + FAISS retrieval."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from cross_thought_fixtures import tiny_model

from ctxsent.errors import InputError
from ctxsent.evaluation.retrieval import (
    BM25Scorer,
    CrossThoughtScorer,
    ParagraphRanking,
    PassageScorer,
    evaluate_paragraph_ranking,
    rank_candidates,
    recall_at_k,
    squad_paragraph_ranking,
)
from synthetic import spread_attention

PASSAGES = [
    "the lighthouse keeper lit the lamp",
    "ships sail across the sea",
    "the castle has a tall tower",
    "bread is baked in the oven",
]


def test_recall_at_k():
    rankings = [np.array([2, 0, 1]), np.array([1, 2, 0])]
    assert recall_at_k(rankings, [{0}, {0, 2}], ks=(1, 2, 3)) == {
        "recall@1": 0.0,
        "recall@2": 75.0,
        "recall@3": 100.0,
    }
    with pytest.raises(InputError, match="rankings for"):
        recall_at_k(rankings, [{0}])


def test_rank_candidates_averages_per_head_softmaxes_over_the_candidate_set():
    # head 0 prefers passage 0 a little; head 1 prefers passage 1 strongly
    scores = np.array([[2.0, 1.9, 0.0], [0.0, 5.0, 0.0]])
    assert rank_candidates(scores).tolist() == [1, 0, 2]
    assert rank_candidates(scores[:1]).tolist() == [0, 1, 2]  # one head: score order
    assert rank_candidates(scores, np.array([0, 2])).tolist() == [0, 2]


class FixedScorer(PassageScorer):
    """Two heads over two passages: alone, passage 0 comes first (13/24 against 11/24);
    with the question's own logits in the softmax, passage 1 (0.3 against 0.275)."""

    def fit(self, passages):
        pass

    def head_scores(self, questions):
        return np.log([[[3.0, 1.0], [1.0, 2.0]]] * len(questions))

    def self_scores(self, questions):
        return np.log([[6.0, 1.0]] * len(questions))


def test_the_question_itself_joins_each_heads_softmax():
    scorer = FixedScorer()
    head, own = scorer.head_scores(["q"])[0], scorer.self_scores(["q"])[0]
    assert rank_candidates(head).tolist() == [0, 1]
    assert rank_candidates(head, self_scores=own).tolist() == [1, 0]
    data = ParagraphRanking(["a", "b"], np.array([0, 0]), ["q"], [1])
    result = evaluate_paragraph_ranking(scorer, data, ks=(1,))
    assert result["all_paragraphs"] == result["own_article"] == {"recall@1": 100.0}


def test_bm25_ranks_the_lexical_match_first():
    scorer = BM25Scorer()
    scorer.fit(PASSAGES)
    scores = scorer.head_scores(["who lit the lamp?", "where is the tower?"])
    assert scores.shape == (2, 1, 4)
    assert [rank_candidates(s)[0] for s in scores] == [0, 2]


def test_cross_thought_scorer_gives_the_attention_logits():
    model = tiny_model()
    scorer = CrossThoughtScorer(model)
    scorer.fit(PASSAGES)
    scores = scorer.head_scores(["who lit the lamp?"])
    assert scores.shape == (1, 2 * 2, 4)
    expected = model.attention_logits(
        model.encode_special(["who lit the lamp?"]), model.encode_special(PASSAGES)
    )
    np.testing.assert_allclose(scores, expected.detach().numpy(), atol=1e-5)
    own = model.attention_logits(*[model.encode_special(["who lit the lamp?"])] * 2)
    own = own[:, :, 0].detach().numpy()
    np.testing.assert_allclose(scorer.self_scores(["who lit the lamp?"]), own, atol=1e-5)
    assert CrossThoughtScorer(model, include_self=False).self_scores(["who lit the lamp?"]) is None


def test_squad_paragraph_ranking_all_and_own_article(tmp_path):
    squad = {
        "data": [
            {
                "title": "A",
                "paragraphs": [
                    {
                        "context": PASSAGES[0],
                        "qas": [{"id": "1", "question": "who lit the lamp", "answers": []}],
                    },
                    {
                        "context": PASSAGES[1],
                        "qas": [
                            {"id": "2", "question": "where do ships sail", "answers": []},
                            {"id": "4", "question": "what is baked in the oven", "answers": []},
                        ],
                    },
                ],
            },
            {
                "title": "B",
                "paragraphs": [
                    {
                        "context": PASSAGES[2],
                        "qas": [{"id": "3", "question": "what is tall", "answers": []}],
                    },
                    {"context": PASSAGES[3], "qas": []},
                ],
            },
        ]
    }
    path = tmp_path / "dev.json.gz"
    path.write_bytes(gzip.compress(json.dumps(squad).encode()))
    data = squad_paragraph_ranking(path)
    assert data.gold == [0, 1, 1, 2] and data.article_of.tolist() == [0, 0, 1, 1]
    result = evaluate_paragraph_ranking(BM25Scorer(), data, ks=(1, 2))
    # the oven question matches a paragraph of the other article, which own-article excludes
    assert result["all_paragraphs"] == {"recall@1": 75.0, "recall@2": 75.0}
    assert result["own_article"] == {"recall@1": 75.0, "recall@2": 100.0}
    assert "gold_ranks" not in result
    ranks = evaluate_paragraph_ranking(BM25Scorer(), data, ks=(1, 2), gold_ranks=True)
    own = ranks["gold_ranks"]["own_article"]  # positions in the ranking, not passage indices
    assert sorted(own) == [0, 0, 0, 1] and max(ranks["gold_ranks"]["all_paragraphs"]) >= 2
    assert len(squad_paragraph_ranking(path, questions=2).questions) == 2


def test_cosine_spec_ranks_a_cross_thought_by_its_special_token_embeddings(tmp_path):
    from ctxsent.evaluation.retrieval import CosineScorer, scorer_from_spec

    model = tiny_model()
    spread_attention(model.bert, std=1.0)  # the texts' cosines: ~0.99999 at init, now <= 0.98
    model.save_pretrained(tmp_path / "ct")
    assert isinstance(scorer_from_spec(str(tmp_path / "ct")), CrossThoughtScorer)
    scorer = scorer_from_spec(f"cosine:{tmp_path / 'ct'}")
    assert isinstance(scorer, CosineScorer)
    scorer.fit(PASSAGES)
    scores = scorer.head_scores([PASSAGES[2]])[0, 0]
    assert scores.argmax() == 2 and scores[2] == pytest.approx(1.0, abs=1e-5)
