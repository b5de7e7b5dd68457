"""POST /rerank and /v1/rerank in Cohere's shape: ranked like /rank, with 0-1 relevance."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ctxsent.serving.app import create_app

DOCUMENTS = ["The lamp was lit in 1874.", "Keepers lived on the island.", "It is white."]


@pytest.fixture(scope="module")
def client(tiny_ranker):
    with TestClient(create_app(tiny_ranker)) as client:
        yield client


def test_rerank_orders_documents_as_rank_does(client):
    question = "When was the lamp lit?"
    reranked = client.post("/rerank", json={"query": question, "documents": DOCUMENTS})
    ranked = client.post("/rank", json={"question": question, "candidates": DOCUMENTS})
    assert reranked.status_code == 200, reranked.text
    results = reranked.json()["results"]
    answers = ranked.json()["answers"]
    assert [r["index"] for r in results] == [a["index"] for a in answers]
    sigmoid = [1 / (1 + np.exp(-a["score"])) for a in answers]  # of a cross-encoder's logit
    assert [r["relevance_score"] for r in results] == pytest.approx(sigmoid)
    assert all("document" not in r for r in results)


def test_rerank_takes_objects_top_n_a_model_name_and_returns_documents(client):
    body = {
        "model": "rerank-english-v3.0",  # sent by RAG frameworks; ignored
        "query": "When was the lamp lit?",
        "documents": [{"text": text} for text in DOCUMENTS],
        "top_n": 2,
        "return_documents": True,
    }
    results = client.post("/rerank", json=body).json()["results"]
    assert len(results) == 2
    assert [r["document"]["text"] for r in results] == [DOCUMENTS[r["index"]] for r in results]


@pytest.mark.parametrize(
    "body, status, field",
    [
        ({"query": "q", "documents": []}, 422, "documents"),
        ({"query": " ", "documents": ["a"]}, 422, "field 'query': the query is empty"),
        ({"query": "q" * 5001, "documents": ["a"]}, 413, "field 'query': 5001 characters"),
        ({"query": "q", "documents": ["a"], "top_n": 0}, 422, "top_n"),
        ({"query": "q", "documents": ["a" * 5001]}, 413, "documents.0"),
    ],
)
def test_bad_rerank_requests_are_refused_naming_the_field(client, body, status, field):
    response = client.post("/rerank", json=body)
    assert response.status_code == status
    assert field in response.json()["error"]
    assert "question" not in response.json()["error"]  # named as the client sent it
