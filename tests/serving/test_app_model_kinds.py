"""Every model kind the service accepts answers every endpoint it advertises with the right
shape, and those it cannot serve with 404 naming the routes it has, never 500."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.cross_thought import CrossThoughtRanker
from ctxsent.models.sequential import SequentialRanker
from ctxsent.resolver import load_ranker
from ctxsent.serving.app import create_app
from ctxsent.tasks.as2_records import As2Record
from synthetic import spread_attention

QUESTION = "who lit the lamp?"
CANDIDATES = [
    {"text": "the keeper lit the lamp at dusk.", "previous": "it was dark.", "next": ""},
    {"text": "ships pass the rocky island.", "previous": "", "next": "the sea was calm."},
    {"text": "", "previous": "", "next": ""},
]
DOCUMENT = "The lighthouse stands on a rock. Its keeper lit the lamp. Ships see it at night."
TEXTS = ["the lamp is lit.", "ships pass the island at night", "é"]


@dataclass(frozen=True)
class Kind:
    """What a served model can do, as ``/health`` should advertise it."""

    can_rank: bool
    can_encode: bool
    staged: bool = False


KINDS = {
    "bm25": Kind(can_rank=True, can_encode=False),
    "bi-encoder": Kind(can_rank=True, can_encode=True),
    "bi-encoder-folder": Kind(can_rank=True, can_encode=True),  # a fine-tuned bi-encoder
    "cross-encoder": Kind(can_rank=True, can_encode=False),
    "contextual-cross-encoder": Kind(can_rank=True, can_encode=False),
    "cascade": Kind(can_rank=True, can_encode=False, staged=True),
    "sequential": Kind(can_rank=True, can_encode=False, staged=True),
    "cross-thought-ranker": Kind(can_rank=True, can_encode=True),
    "cross-thought-encoder": Kind(can_rank=False, can_encode=True),
    "bi-encoder-object": Kind(can_rank=False, can_encode=True),
}


@pytest.fixture(scope="module")
def served(
    tiny_bert, tiny_ranker, tiny_cascade, tiny_cross_thought, tiny_encoder, tmp_path_factory
):
    """Each kind as ``ctxsent serve`` gets it (a spec or a saved folder) or a Python object."""
    folder = tmp_path_factory.mktemp("served")
    pairwise = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=64)
    shallow = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=64, layers=1)
    selector = copy.deepcopy(tiny_cross_thought)
    # scores that differ by more than the comparisons' tolerance: at init they tie
    with torch.random.fork_rng():
        torch.manual_seed(0)
        for ranker in (pairwise, shallow):
            spread_attention(ranker.model.bert)
        spread_attention(selector.bert, std=1.0)
        for layer in (transformer.layers[0] for transformer in selector.cross):
            torch.nn.init.normal_(layer.query.weight)
            torch.nn.init.normal_(layer.key.weight)
    saved = {
        "bi-encoder-folder": BiEncoderRanker.from_backbone(str(tiny_bert), max_length=16),
        "cross-encoder": pairwise,
        "contextual-cross-encoder": tiny_ranker,
        "cascade": tiny_cascade,
        "sequential": SequentialRanker([shallow, pairwise]),
        "cross-thought-ranker": CrossThoughtRanker(selector),
    }
    return {
        "bm25": "bm25",
        "bi-encoder": f"bi-encoder:{tiny_bert}",
        **{name: str(model.save_pretrained(folder / name)) for name, model in saved.items()},
        "cross-thought-encoder": tiny_cross_thought,
        "bi-encoder-object": tiny_encoder,
    }


@pytest.fixture(scope="module", params=list(KINDS))
def kind_client(request, served):
    with TestClient(create_app(served[request.param])) as client:
        yield KINDS[request.param], client


@pytest.fixture(scope="module")
def loaded() -> dict:
    return {}


@pytest.fixture
def own_ranker(request, served, loaded):
    """The ranker of the test's ``kind_client`` kind, loaded apart from the service: what
    its answers must match (``None`` for a kind that cannot rank)."""
    name = request.node.callspec.params["kind_client"]
    if KINDS[name].can_rank and name not in loaded:
        spec = served[name]
        loaded[name] = load_ranker(spec) if isinstance(spec, str) else spec
    return loaded.get(name)


def check_error(response, status: int, reason: str) -> None:
    assert response.status_code == status, response.text
    assert reason in response.json()["error"]


def check_ranking(response, expected: Sequence[float]) -> None:
    """The answers are every candidate, best first, with the model's own ``expected``
    scores, which differ (so a service answering constant scores fails)."""
    assert response.status_code == 200, response.text
    answers = response.json()["answers"]
    scores = [a["score"] for a in answers]
    assert sorted(a["index"] for a in answers) == list(range(len(expected)))
    assert scores == sorted(scores, reverse=True)
    assert max(expected) - min(expected) > 1e-4
    by_index = {a["index"]: a["score"] for a in answers}
    assert [by_index[i] for i in range(len(expected))] == pytest.approx(expected, abs=1e-5)


def own_scores(ranker, source: str, alpha: float | None = None) -> list[float]:
    """The ranker's scores of the request's candidates, in input order."""
    if source == "document":
        ranked = ranker.rank_document(QUESTION, DOCUMENT, top_k=None)
        return [r.score for r in sorted(ranked, key=lambda r: r.index)]
    records = [As2Record("q", QUESTION, c["text"], 0, c["previous"], c["next"]) for c in CANDIDATES]
    scores = ranker.predict(records) if alpha is None else ranker.predict(records, alpha=alpha)
    return np.asarray(scores, dtype=float).tolist()


def test_health_and_docs(kind_client):
    kind, client = kind_client
    health = client.get("/health")
    assert health.status_code == 200
    assert (health.json()["rank"], health.json()["encode"]) == (kind.can_rank, kind.can_encode)
    paths = set(client.get("/openapi.json").json()["paths"])
    assert {"/health", "/info", "/metrics"} <= paths
    ranking, encoding = {"/rank", "/rerank", "/v1/rerank"}, {"/encode", "/embed", "/v1/embeddings"}
    assert (ranking <= paths, encoding <= paths) == (kind.can_rank, kind.can_encode)
    assert (bool(ranking & paths), bool(encoding & paths)) == (kind.can_rank, kind.can_encode)
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize("source", ["candidates", "document"])
def test_rank(kind_client, own_ranker, source):
    kind, client = kind_client
    payload = {"question": QUESTION, "candidates": CANDIDATES}
    if source == "document":
        payload = {"question": QUESTION, "document": DOCUMENT}
    response = client.post("/rank", json=payload)
    if kind.can_rank:
        check_ranking(response, own_scores(own_ranker, source))
    else:
        check_error(response, 404, "no route /rank: this model")


def test_rank_with_alpha(kind_client, own_ranker):
    kind, client = kind_client
    response = client.post(
        "/rank", json={"question": QUESTION, "candidates": CANDIDATES, "alpha": 0.5}
    )
    if kind.can_rank and kind.staged:
        check_ranking(response, own_scores(own_ranker, "candidates", alpha=0.5))
    elif kind.can_rank:
        check_error(response, 422, "alpha applies to cascade models only")
    else:
        check_error(response, 404, "no route /rank")


@pytest.mark.parametrize("normalize", [True, False])
def test_encode(kind_client, normalize):
    kind, client = kind_client
    response = client.post("/encode", json={"texts": TEXTS, "normalize": normalize})
    if not kind.can_encode:
        check_error(response, 404, "no route /encode: this model")
        return
    assert response.status_code == 200, response.text
    body = response.json()
    embeddings = np.array(body["embeddings"])
    assert embeddings.shape == (len(TEXTS), body["dim"]) and np.isfinite(embeddings).all()
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5) == normalize


def test_encode_needs_texts(kind_client):
    kind, client = kind_client
    response = client.post("/encode", json={"texts": []})
    check_error(response, *((422, "texts") if kind.can_encode else (404, "no route")))


def test_cross_thought_ranker_encode_gives_its_embeddings(tiny_cross_thought):
    """``POST /encode`` on a fine-tuned Cross-Thought selector used to answer 500 (its
    ``encode`` takes no ``normalize``)."""
    with TestClient(create_app(CrossThoughtRanker(tiny_cross_thought))) as client:
        raw = client.post("/encode", json={"texts": TEXTS, "normalize": False}).json()
        unit = client.post("/encode", json={"texts": TEXTS}).json()
    expected = tiny_cross_thought.encode(TEXTS)
    assert np.allclose(raw["embeddings"], expected, atol=1e-5)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(unit["embeddings"], expected / norms, atol=1e-5)
