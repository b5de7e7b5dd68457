"""The service as other services' clients call it: OpenAI's ``openai`` package, Cohere's
``cohere`` SDK (what RAG frameworks' Cohere rerankers wrap) and huggingface_hub's
``InferenceClient`` (TEI) against a live server; TEI's rerank, /info, /metrics and the
routes a model lacks over ASGI. Expected values are the served model's own outputs."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.serving.app import IGNORED_HEADER, create_app
from ctxsent.tasks.as2_records import As2Record

QUERY = "who lit the lamp?"
DOCUMENTS = ["the keeper lit the lamp at dusk.", "ships pass the rocky island.", "it is white."]


@pytest.fixture(scope="module")
def bi_encoder(tiny_bert) -> BiEncoderRanker:
    """A random tiny bi-encoder ranker: it both ranks and embeds."""
    return BiEncoderRanker.from_backbone(str(tiny_bert), max_length=16).eval()


@pytest.fixture(scope="module")
def url(bi_encoder, live):
    with live(create_app(bi_encoder)) as (url, _):
        yield url


def own_scores(ranker, query: str = QUERY) -> np.ndarray:
    """The model's own scores of ``DOCUMENTS`` for ``query``, in input order."""
    return np.asarray(ranker.predict([As2Record("q", query, d, 0) for d in DOCUMENTS]), float)


def best_first(scores: np.ndarray) -> list[int]:
    assert len(set(np.round(scores, 4))) == len(scores)  # no near-ties: one order
    return np.argsort(-scores, kind="stable").tolist()


def test_openai_client_embeddings_as_base64_and_floats(url, bi_encoder):
    from openai import OpenAI

    client = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    expected = bi_encoder.encode(DOCUMENTS)  # L2-normalised
    packed = client.embeddings.create(model="any", input=DOCUMENTS)  # the client asks base64
    floats = client.embeddings.create(model="any", input=DOCUMENTS[0], encoding_format="float")
    assert [d.index for d in packed.data] == [0, 1, 2]
    assert np.allclose([d.embedding for d in packed.data], expected, atol=1e-5)
    assert np.allclose(floats.data[0].embedding, expected[0], atol=1e-5)
    assert packed.usage.prompt_tokens == packed.usage.total_tokens > len(DOCUMENTS)


@pytest.mark.parametrize("version", ["Client", "ClientV2"])
def test_cohere_client_reranks_with_0_1_relevance(url, bi_encoder, version):
    import cohere

    client = getattr(cohere, version)(base_url=url, api_key="unused", timeout=60)
    answer = client.rerank(model="any", query=QUERY, documents=DOCUMENTS, top_n=2)
    scores = own_scores(bi_encoder)
    assert [r.index for r in answer.results] == best_first(scores)[:2]
    relevance = [(1 + scores[r.index]) / 2 for r in answer.results]  # of the cosine
    assert [r.relevance_score for r in answer.results] == pytest.approx(relevance, abs=1e-5)


def test_huggingface_inference_client_embeds_through_tei_routes(url, bi_encoder, monkeypatch):
    from huggingface_hub import InferenceClient, constants

    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)  # the server is local

    expected = bi_encoder.encode(DOCUMENTS[:1])
    for route in ("", "/embed"):  # TEI's root route and /embed
        client = InferenceClient(model=url + route, token="unused")
        embedding = client.feature_extraction(DOCUMENTS[0], normalize=True, truncate=True)
        assert np.allclose(embedding, expected, atol=1e-5)


@pytest.fixture(scope="module")
def cross(tiny_ranker):
    with TestClient(create_app(tiny_ranker)) as client:
        yield client


@pytest.mark.parametrize("raw_scores", [False, True])
def test_tei_rerank_gives_sigmoid_or_raw_scores_of_a_cross_encoder(cross, tiny_ranker, raw_scores):
    body = {"query": QUERY, "texts": DOCUMENTS, "raw_scores": raw_scores, "return_text": True}
    response = cross.post("/rerank", json=body)
    assert response.status_code == 200, response.text
    scores = own_scores(tiny_ranker)
    expected = scores if raw_scores else 1 / (1 + np.exp(-scores))
    ranks = response.json()
    assert [r["index"] for r in ranks] == best_first(scores)
    assert [r["score"] for r in ranks] == pytest.approx(expected[[r["index"] for r in ranks]])
    assert [r["text"] for r in ranks] == [DOCUMENTS[r["index"]] for r in ranks]
    assert IGNORED_HEADER not in response.headers


def test_unknown_and_unused_fields_are_named_in_a_header_not_refused(cross):
    body = {"query": QUERY, "documents": DOCUMENTS, "rank_fields": ["text"], "shiny": 1, "é": 2}
    for route in ("/rerank", "/v1/rerank"):
        response = cross.post(route, json=body)
        assert response.status_code == 200, response.text
        assert response.headers[IGNORED_HEADER] == "shiny,%C3%A9,rank_fields"
        assert len(response.json()["results"]) == len(DOCUMENTS)


@pytest.mark.parametrize(
    "route, body, status, reason",
    [
        ("/rerank", {"query": QUERY}, 422, "exactly one of 'documents' (Cohere) and 'texts'"),
        ("/rerank", {"query": QUERY, "texts": []}, 422, "texts"),
        ("/rerank", {"query": QUERY, "texts": ["a" * 5001]}, 413, "field 'texts.0'"),
        ("/v1/rerank", {"query": QUERY, "texts": ["a"]}, 422, "documents"),
        ("/embed", {"inputs": "a"}, 404, "serves /health, /info, /metrics, /rank, /rerank,"),
        ("/v1/embeddings", {"input": "a"}, 404, "no route /v1/embeddings: this model"),
    ],
)
def test_bad_requests_and_absent_routes_are_refused_clearly(cross, route, body, status, reason):
    response = cross.post(route, json=body)
    assert response.status_code == status, response.text
    assert reason in response.json()["error"]


def test_openai_dimensions_other_than_the_models_are_refused(url, bi_encoder):
    import httpx

    dim = bi_encoder.encode(["a"]).shape[1]
    body = {"input": ["a"], "dimensions": dim}
    assert httpx.post(f"{url}/v1/embeddings", json=body).status_code == 200
    refused = httpx.post(f"{url}/v1/embeddings", json={**body, "dimensions": dim - 1})
    assert refused.status_code == 422
    assert f"this model's embeddings have {dim}" in refused.json()["error"]


def test_info_tells_what_the_model_serves(url, cross):
    import httpx

    info = httpx.get(f"{url}/info").json()
    assert set(info["model_type"]) == {"embedding", "reranker"}
    assert (info["max_input_length"], info["model_dtype"]) == (16, "float32")
    assert set(cross.get("/info").json()["model_type"]) == {"reranker"}


def test_metrics_count_requests_by_route_and_status_and_batch_sizes(tiny_ranker):
    with TestClient(create_app(tiny_ranker)) as client:
        for _ in range(2):
            client.post("/v1/rerank", json={"query": QUERY, "documents": DOCUMENTS})
        client.post("/v1/rerank", json={"query": QUERY})
        client.get("/no/such/path")
        text = client.get("/metrics").text
    count = {
        (route, status): float(value)
        for route, status, value in re.findall(
            r'ctxsent_requests_total\{route="([^"]+)",status="(\d+)"\} (\S+)', text
        )
    }
    assert count == {("/v1/rerank", "200"): 2, ("/v1/rerank", "422"): 1, ("other", "404"): 1}
    assert 'ctxsent_request_seconds_count{route="/v1/rerank"} 3.0' in text
    assert "ctxsent_batch_size_count 2.0" in text and "ctxsent_batch_size_sum 6.0" in text
    assert "ctxsent_queue_depth 0.0" in text
