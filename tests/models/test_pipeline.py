"""The retrieve-then-rerank pipeline: what the reranker sees, the scores of the candidates
it does not see, reciprocal rank fusion, its folder, and the ways in that take any model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

import ctxsent
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.models.baseline_rankers import BM25Ranker
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.pipeline import (
    PipelineRanker,
    StagedPipelineRanker,
    question_groups,
    reciprocal_rank_fusion,
)
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.models.staged import question_index
from ctxsent.protocols import Ranker, StagedRanker
from ctxsent.resolver import build_pipeline
from ctxsent.serving.app import create_app
from ctxsent.tasks.as2_records import As2Record
from synthetic import make_records, spread_attention


class Table(As2Ranker):
    """Scores each candidate by its entry in ``table``."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    def predict(self, records, batch_size=64, show_progress=False):
        return np.array([self.table[r.candidate] for r in records], dtype=np.float64)


class Spy(As2Ranker):
    """Another ranker's scores, recording the records of every call and its options (passed
    on to the other ranker unless it is a :class:`Table`)."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, []
        self.contextual = inner.contextual

    def predict(self, records, batch_size=64, show_progress=False, **options):
        self.calls.append((list(records), options))
        options = {} if isinstance(self.inner, Table) else options
        return self.inner.predict(records, batch_size, **options)


def records(question_id: str, candidates: str) -> list[As2Record]:
    """One question's records, one per letter of ``candidates``."""
    return [As2Record(question_id, f"{question_id}?", c, 0) for c in candidates]


# first stage: higher letter-scores first; "d" and "e" tie at the boundary of top 2 in q2
FIRST = Table({"a": 1.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 2.0, "f": 0.5, "g": 2.0})
RERANKER = Table({"a": 0.1, "b": 0.3, "c": 0.9, "d": 0.7, "e": 0.2, "f": 0.5, "g": 0.4})


def test_the_reranker_sees_only_the_top_k_of_each_question():
    data = records("q1", "abcf") + records("q2", "gde")  # q2: three tied first-stage scores
    spy = Spy(RERANKER)
    pipeline = PipelineRanker(FIRST, spy, top_k=2)
    pipeline.predict(data, alpha_passed="through")
    (seen, options), *more = spy.calls
    assert not more and options == {"alpha_passed": "through"}
    # q1 keeps b (4) and c (3); q2 keeps g and d, tied with e, in input order; input order
    assert [(r.question_id, r.candidate) for r in seen] == [
        ("q1", "b"),
        ("q1", "c"),
        ("q2", "g"),
        ("q2", "d"),
    ]


def test_left_out_candidates_score_below_the_kept_in_first_stage_order():
    data = records("q1", "abcdef")
    scores = PipelineRanker(FIRST, RERANKER, top_k=2).predict(data)
    # kept b, c: the reranker's scores; lowest 0.3. Left out by first stage: d = e (2) > a (1)
    # > f (0.5), three distinct scores: 0.3 - 1 - {0, 1/3, 2/3}
    expected = [0.3 - 1 - 1 / 3, 0.3, 0.9, 0.3 - 1, 0.3 - 1, 0.3 - 1 - 2 / 3]
    assert np.allclose(scores, expected, rtol=0, atol=1e-12)
    assert scores[3] == scores[4]  # a first-stage tie stays a tie
    everything = PipelineRanker(FIRST, RERANKER, top_k=6).predict(data)
    assert np.array_equal(everything, RERANKER.predict(data))  # top K of all: the reranker


def test_hybrid_fusion_is_reciprocal_rank_fusion_with_average_ranks_for_ties():
    data = records("q1", "xyz") + records("q2", "w")
    bm25_like = Table({"x": 3.0, "y": 2.0, "z": 1.0, "w": 7.0})  # ranks 1, 2, 3
    dense_like = Table({"x": 0.1, "y": 0.5, "z": 0.1, "w": 0.0})  # ranks 2.5, 1, 2.5
    expected = [1 / 61 + 1 / 62.5, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62.5, 2 / 61]
    groups = question_groups(question_index([r.question_id for r in data]))
    scores = [bm25_like.predict(data), dense_like.predict(data)]
    assert np.allclose(reciprocal_rank_fusion(scores, groups), expected, rtol=0, atol=1e-15)
    weighted = [1 / 61 + 0.5 / 62.5, 1 / 62 + 0.5 / 61, 1 / 63 + 0.5 / 62.5, 1.5 / 61]
    fused = reciprocal_rank_fusion(scores, groups, weights=[1.0, 0.5])
    assert np.allclose(fused, weighted, rtol=0, atol=1e-15)
    spy = Spy(Table(dict.fromkeys("wxyz", 0.0)))
    pipeline = PipelineRanker([bm25_like, dense_like], spy, 1)
    assert np.allclose(pipeline.first_stage_scores(data, groups), expected, rtol=0, atol=1e-15)
    pipeline.predict(data)  # y fuses highest in q1 (1/62 + 1/61 > 1/61 + 1/62.5)
    assert [r.candidate for r in spy.calls[0][0]] == ["y", "w"]
    with_k = PipelineRanker([bm25_like, dense_like], RERANKER, 1, rrf_k=0)
    assert np.isclose(with_k.first_stage_scores(data, groups)[0], 1 / 1 + 1 / 2.5)


@pytest.fixture(scope="module")
def cross_encoder(tiny_bert) -> CrossEncoderRanker:
    """A pairwise tiny cross-encoder whose scores differ between candidates (fp32)."""
    torch.manual_seed(0)
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=64)
    spread_attention(ranker.model.bert)
    ranker.precision = "fp32"
    return ranker.eval()


@pytest.fixture(scope="module")
def saved(tiny_bert, cross_encoder, tmp_path_factory):
    """A hybrid (BM25 + tiny bi-encoder) -> tiny cross-encoder pipeline, saved."""
    bi_encoder = BiEncoderRanker.from_backbone(str(tiny_bert), max_length=32).eval()
    pipeline = PipelineRanker([BM25Ranker(), bi_encoder], cross_encoder, top_k=4, rrf_k=10)
    return pipeline, pipeline.save_pretrained(tmp_path_factory.mktemp("pipeline") / "model")


def test_save_and_load_round_trip_gives_identical_scores(saved):
    pipeline, folder = saved
    loaded = ctxsent.load(folder)
    assert type(loaded) is PipelineRanker and isinstance(loaded, Ranker)
    assert loaded.config == pipeline.config and loaded.kind == "pipeline"
    data = make_records(questions=3, candidates=10)
    assert np.array_equal(loaded.predict(data), pipeline.predict(data))
    manifest = json.loads((folder / "ctxsent.json").read_text())
    assert manifest["config"] == {
        "top_k": 4,
        "retrievers": ["bm25", "bi-encoder"],
        "reranker": "cross-encoder",
        "rrf_k": 10,
    }
    # BM25 is only named; the models are whole folders of their own
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["reranker", "retriever-1"]
    assert type(ctxsent.load(folder / "reranker")) is CrossEncoderRanker


def test_a_loaded_folder_ranks_pairs_and_documents_like_any_ranker(saved):
    pipeline, folder = saved
    loaded = ctxsent.load(folder)
    data = make_records(questions=2, candidates=6)
    pairs = [(r.question, r.candidate) for r in data]
    assert np.array_equal(loaded.predict(pairs), pipeline.predict(data))
    ranked = loaded.rank("who keeps the lamp?", ["the keeper lamp", "a ship", "sea stone"])
    assert sorted(answer.index for answer in ranked) == [0, 1, 2]
    assert len(loaded.rank_document("where?", "A lamp. A ship. A sea. A stone. A tower.")) == 5


def test_the_service_serves_the_folder(saved):
    pipeline, folder = saved
    candidates = [
        "the keeper lit the lamp",
        "ships pass",
        "the lamp",
        "red stone",
        "a tower",
        "sea",
    ]
    with TestClient(create_app(str(folder))) as client:
        assert client.get("/health").json()["rank"] is True
        response = client.post(
            "/rank", json={"question": "who lit the lamp?", "candidates": candidates}
        )
        refused = client.post(
            "/rank", json={"question": "who?", "candidates": candidates, "alpha": 0.5}
        )
    assert response.status_code == 200, response.text
    expected = pipeline.rank("who lit the lamp?", candidates)
    answers = response.json()["answers"]
    assert [a["index"] for a in answers] == [a.index for a in expected]
    assert np.allclose([a["score"] for a in answers], [a.score for a in expected], atol=1e-6)
    assert refused.status_code == 422 and "alpha" in refused.json()["error"]


def test_a_cascade_reranker_makes_a_staged_pipeline_taking_alphas(tiny_bert, tmp_path):
    torch.manual_seed(0)
    cascade = CascadeRanker.from_backbone(str(tiny_bert), max_length=32).eval()
    pipeline = PipelineRanker(BM25Ranker(), cascade, top_k=4)
    assert type(pipeline) is StagedPipelineRanker and isinstance(pipeline, StagedRanker)
    assert pipeline.num_stages == cascade.num_stages == 2
    pipeline.alphas = [0.5]
    assert cascade.alphas == [0.5]
    data = make_records(questions=2, candidates=6)
    pipeline.predict(data)
    assert pipeline.last_cost.candidates_per_exit == [8, 4]  # 4 kept per question, half go
    pipeline.predict(data, alpha=0.0)
    assert pipeline.last_cost.candidates_per_exit == [8, 8]
    loaded = ctxsent.load(pipeline.save_pretrained(tmp_path / "staged"))
    assert type(loaded) is StagedPipelineRanker and loaded.alphas == [0.5]
    assert np.array_equal(loaded.predict(data), pipeline.predict(data))
    with TestClient(create_app(loaded)) as client:
        body = {"question": "who?", "candidates": ["a lamp", "a ship", "a sea"], "alpha": 0.5}
        assert client.post("/rank", json=body).status_code == 200


def test_build_pipeline_from_specs(tiny_bert, cross_encoder, tmp_path):
    reranker = cross_encoder.save_pretrained(tmp_path / "ce")
    out = build_pipeline(f"bm25+bi-encoder:{tiny_bert}", str(reranker), 3, tmp_path / "p")
    loaded = ctxsent.load(out)
    assert loaded.config.retrievers == ["bm25", "bi-encoder"] and loaded.config.rrf_k == 60
    data = make_records(questions=2, candidates=5)
    assert np.isfinite(loaded.predict(data)).all()
    assert "`pipeline`" in (out / "README.md").read_text()
    hybrid = build_pipeline(f"bm25+{out / 'retriever-1'}", str(reranker), 2, tmp_path / "h")
    assert ctxsent.load(hybrid).config.retrievers == ["bm25", "bi-encoder"]
    again = build_pipeline("bm25", str(reranker), 2, out)  # a pipeline folder is replaced
    assert ctxsent.load(again).config.retrievers == ["bm25"]


@pytest.mark.parametrize(
    ("retriever", "top_k", "fusion", "message"),
    [
        ("bm25", 0, "rrf", "field 'top_k': must be an integer >= 1, got 0"),
        ("bm25", 2.5, "rrf", "field 'top_k'"),
        ("bm25+bm25", 1, "max", "field 'fusion': expected rrf or rrf:K"),
        ("bm25+", 1, "rrf", "field 'retriever': an empty first stage"),
        ("bm25", 1, "rrf:5", "field 'fusion': fusion applies to a hybrid"),
        ("no/such/model", 1, "rrf", "no/such/model: not a folder, nor a model name"),
    ],
)
def test_bad_settings_are_refused_before_anything_loads(
    tmp_path, retriever, top_k, fusion, message
):
    with pytest.raises(InputError, match=message):
        build_pipeline(retriever, "no/such/reranker", top_k, tmp_path / "out", fusion)
    assert not (tmp_path / "out").exists()


def test_bad_stages_and_outputs_are_refused(tiny_bert, cross_encoder, tmp_path):
    from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel

    reranker = str(cross_encoder.save_pretrained(tmp_path / "ce"))
    encoder = CrossThoughtModel.build(
        CrossThoughtConfig(backbone=str(tiny_bert), pretrained=False, max_length=24), seed=3
    ).save_pretrained(tmp_path / "encoder")
    out = tmp_path / "out"
    with pytest.raises(InputError, match="ce: a CrossEncoderRanker cannot be a first stage"):
        build_pipeline(reranker, reranker, 2, out)
    with pytest.raises(InputError, match="a CrossThoughtModel cannot rank answers"):
        build_pipeline("bm25", str(encoder), 2, out)
    with pytest.raises(ModelFolderError, match="not a folder, nor a model name"):
        build_pipeline("bm25", str(tmp_path / "missing"), 2, out)
    with pytest.raises(InputError, match="field 'reranker': no stage keeps weights at the top"):
        build_pipeline("bm25", "bm25", 2, out)
    assert not out.exists()
    (out / "notes.txt").parent.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="folder is not empty and not a ctxsent pipeline"):
        build_pipeline("bm25", "no/such/reranker", 2, out)  # before the reranker loads
    with pytest.raises(InputError, match="field 'retrievers\\[0\\]': a str cannot rank"):
        PipelineRanker("bm25", cross_encoder, 2)
    with pytest.raises(InputError, match="field 'top_k'"):
        PipelineRanker(BM25Ranker(), cross_encoder, 0)
    with pytest.raises(InputError, match="field 'retriever-0': a Table cannot be saved"):
        PipelineRanker(FIRST, cross_encoder, 2).save_pretrained(tmp_path / "table")
    assert not (tmp_path / "table").exists()


def test_a_folder_whose_stage_is_not_what_the_manifest_says_is_refused(saved, tmp_path):
    _, folder = saved
    import shutil

    copy = shutil.copytree(folder, tmp_path / "copy")
    manifest = json.loads((copy / "ctxsent.json").read_text())
    manifest["config"]["reranker"] = "cascade"
    (copy / "ctxsent.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match="reranker: holds a 'cross-encoder'; the pipeline"):
        ctxsent.load(copy)
    manifest["config"]["top_k"] = 0
    (copy / "ctxsent.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match="field 'top_k'"):
        ctxsent.load(copy)
