"""The HTTP service: ranking, batching, encoding, limits and recovery from bad requests."""

import asyncio
import re

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from ctxsent.models.baseline_rankers import BM25Ranker
from ctxsent.serving.app import BatchConfig, create_app
from ctxsent.serving.batching import Grouping
from ctxsent.serving.limits import ServeLimits
from ctxsent.tasks.as2_records import As2Record

WORDS = ["the", "lighthouse", "keeper", "lit", "lamp", "at", "dusk", "ships", "rocky", "island"]
DOCUMENT = (
    "The lighthouse stands on a rock. It was built in 1850 by the harbour board. "
    "Its lamp burns oil. Ships see it from twenty miles away."
)


def candidates(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    text = lambda: " ".join(rng.choice(WORDS, size=int(rng.integers(2, 12))))  # noqa: E731
    return [{"text": text(), "previous": text(), "next": ""} for _ in range(n)]


@pytest.fixture
def client(tiny_ranker):
    limits = ServeLimits(max_candidates=20, max_chars=200, max_document_chars=400, max_batch=64)
    with TestClient(create_app(tiny_ranker, limits)) as test_client:
        yield test_client


def test_rank_matches_the_ranker_and_applies_top_k(client, tiny_ranker):
    items = candidates(7, seed=1)
    response = client.post("/rank", json={"question": "who lit the lamp?", "candidates": items})
    assert response.status_code == 200
    answers = response.json()["answers"]
    expected = tiny_ranker.rank(
        "who lit the lamp?", [c["text"] for c in items], [(c["previous"], c["next"]) for c in items]
    )
    assert [a["index"] for a in answers] == [e.index for e in expected]
    assert [a["score"] for a in answers] == pytest.approx([e.score for e in expected], abs=1e-5)
    assert answers[0]["previous"] == items[answers[0]["index"]]["previous"]
    top = client.post("/rank", json={"question": "q?", "candidates": ["a b", "c"], "top_k": 1})
    assert len(top.json()["answers"]) == 1


def test_rank_document_uses_neighbours_as_context(client, tiny_ranker):
    response = client.post("/rank", json={"question": "when was it built?", "document": DOCUMENT})
    answers = response.json()["answers"]
    assert len(answers) == 4
    by_index = {a["index"]: a for a in answers}
    assert by_index[1]["previous"] == "The lighthouse stands on a rock."
    assert by_index[1]["next"] == "Its lamp burns oil."
    expected = tiny_ranker.rank_document("when was it built?", DOCUMENT, top_k=None)
    assert [a["index"] for a in answers] == [e.index for e in expected]


def test_concurrent_requests_are_batched_with_per_request_results(tiny_ranker):
    app = create_app(tiny_ranker, ServeLimits(max_batch=512), BatchConfig(max_wait_ms=50))
    questions = [
        (f"question {i} about the lamp?", candidates(3 + i % 5, seed=i)) for i in range(12)
    ]

    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            responses = await asyncio.gather(
                *(http.post("/rank", json={"question": q, "candidates": c}) for q, c in questions)
            )
            health = (await http.get("/health")).json()
        await app.state.batcher.close()
        return [r.json() for r in responses], health

    results, health = asyncio.run(main())
    assert health["batching"]["requests"] == 12
    assert health["batching"]["calls"] < 12  # requests shared model calls
    for (question, items), result in zip(questions, results, strict=True):
        alone = tiny_ranker.rank(
            question, [c["text"] for c in items], [(c["previous"], c["next"]) for c in items]
        )
        assert [a["index"] for a in result["answers"]] == [e.index for e in alone]
        assert [a["score"] for a in result["answers"]] == pytest.approx(
            [e.score for e in alone], abs=1e-5
        )


@pytest.mark.parametrize(
    ("limits", "calls", "largest"),
    [({"max_batch": 4}, 3, 4), ({"chunk_chars": 1}, 11, 1)],  # by candidates, by characters
)
def test_a_large_request_is_split_into_chunks_and_scored_as_if_alone(
    tiny_ranker, limits, calls, largest
):
    app = create_app(tiny_ranker, ServeLimits(**limits))
    assert app.state.batcher.grouping is Grouping.SPLIT
    items = candidates(11, seed=3)
    with TestClient(app) as client:
        answers = client.post("/rank", json={"question": "who?", "candidates": items}).json()
    stats = app.state.batcher.stats
    assert (stats.calls, stats.largest_call, stats.requests) == (calls, largest, 1)
    alone = tiny_ranker.rank(
        "who?", [c["text"] for c in items], [(c["previous"], c["next"]) for c in items]
    )
    assert [a["index"] for a in answers["answers"]] == [e.index for e in alone]
    assert [a["score"] for a in answers["answers"]] == pytest.approx(
        [e.score for e in alone], abs=1e-5
    )


def test_a_cascade_never_splits_a_request(tiny_cascade):
    """A cascade prunes a request's candidates together: split, it would prune each chunk."""
    app = create_app(tiny_cascade, ServeLimits(max_batch=4))
    assert app.state.batcher.grouping is Grouping.WHOLE
    items = candidates(6, seed=4)
    with TestClient(app) as client:
        body = {"question": "who?", "candidates": items, "alpha": 0.5}
        scores = {a["index"]: a["score"] for a in client.post("/rank", json=body).json()["answers"]}
    assert (app.state.batcher.stats.calls, app.state.batcher.stats.largest_call) == (1, 6)
    records = [As2Record("q", "who?", c["text"], 0, c["previous"]) for c in items]
    alone = tiny_cascade.predict(records, alpha=0.5)
    assert [scores[i] for i in range(6)] == pytest.approx(alone.tolist(), abs=1e-5)


@pytest.mark.parametrize("model", ["cascade", "bm25"])
def test_a_request_that_cannot_be_split_runs_in_turns_of_one_chunk(model, tiny_cascade):
    """A cascade (or BM25) request of 6 long candidates, with chunks of about one of them,
    takes several turns of the batcher, and its scores are those of the whole request."""
    ranker = tiny_cascade if model == "cascade" else BM25Ranker()
    app = create_app(ranker, ServeLimits(chunk_chars=150))
    items = [{"text": " ".join(["lamp keeper tower"] * 6) + f" {i}"} for i in range(6)]
    turns = []
    run = app.state.batcher._turn
    app.state.batcher._turn = lambda call: turns.append(run(call))
    with TestClient(app) as client:
        answers = client.post("/rank", json={"question": "who?", "candidates": items}).json()
    scores = {a["index"]: a["score"] for a in answers["answers"]}
    records = [As2Record("q", "who?", c["text"], 0) for c in items]
    assert len(turns) >= 3 and app.state.batcher.stats.calls == 1
    assert [scores[i] for i in range(6)] == pytest.approx(ranker.predict(records).tolist())


def test_cascade_alpha_prunes_each_request_on_its_own(tiny_cascade):
    app = create_app(tiny_cascade, batching=BatchConfig(max_wait_ms=50))
    questions = [(f"question {i}?", candidates(6, seed=10 + i)) for i in range(4)]
    alpha = 0.5

    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            payloads = [{"question": q, "candidates": c, "alpha": alpha} for q, c in questions]
            responses = await asyncio.gather(*(http.post("/rank", json=p) for p in payloads))
            bad = await http.post("/rank", json={**payloads[0], "alpha": [0.5]})
        await app.state.batcher.close()
        return [r.json() for r in responses], bad

    results, bad = asyncio.run(main())
    assert app.state.batcher.stats.calls < 4
    for (question, items), result in zip(questions, results, strict=True):
        records = [As2Record("q", question, c["text"], 0, c["previous"]) for c in items]
        alone = tiny_cascade.predict(records, alpha=alpha)
        scores = {a["index"]: a["score"] for a in result["answers"]}
        assert [scores[i] for i in range(6)] == pytest.approx(alone.tolist(), abs=1e-5)
    assert bad.status_code == 422 and "drop rates" in bad.json()["error"]


@pytest.mark.parametrize(
    ("payload", "status", "message"),
    [
        ({"question": "q?", "candidates": ["a"] * 21}, 413, "21 candidates, more than the limit"),
        ({"question": "q?", "candidates": ["a" * 201]}, 413, "candidates.0.text"),
        ({"question": "q?", "candidates": [{"text": "a", "next": "b" * 300}]}, 413, "next"),
        ({"question": "q" * 201, "candidates": ["a"]}, 413, "question"),
        ({"question": "q?", "document": "A b. " * 100}, 413, "document"),
        ({"question": "q?", "document": "Short one. " * 30}, 413, "30 sentences"),
        ({"candidates": ["a"]}, 422, "question"),
        ({"question": "q?"}, 422, "exactly one of"),
        ({"question": "q?", "candidates": ["a"], "document": "b"}, 422, "exactly one of"),
        ({"question": "  ", "candidates": ["a"]}, 422, "question is empty"),
        ({"question": "q?", "candidates": [3]}, 422, "candidates.0"),
        ({"question": "q?", "candidates": ["a"], "top_k": 0}, 422, "top_k"),
        ({"question": "q?", "candidates": ["a"], "alpha": 0.3}, 422, "cascade models only"),
        ({"question": "q?", "document": "  \n "}, 422, "no sentences"),
    ],
)
def test_bad_requests_get_clear_errors_and_the_server_keeps_serving(
    client, payload, status, message
):
    response = client.post("/rank", json=payload)
    assert response.status_code == status
    assert message in response.json()["error"]
    assert client.post("/rank", json={"question": "q?", "candidates": ["a"]}).status_code == 200


def test_malformed_json_and_huge_bodies_are_refused(tiny_ranker):
    limits = ServeLimits(max_body_bytes=1000)
    with TestClient(create_app(tiny_ranker, limits)) as client:
        broken = client.post(
            "/rank", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert broken.status_code == 422 and "invalid request" in broken.json()["error"]
        huge = client.post("/rank", json={"question": "q?", "candidates": ["word"] * 400})
        assert huge.status_code == 413 and "request body" in huge.json()["error"]
        assert client.post("/rank", json={"question": "q?", "candidates": ["a"]}).status_code == 200


def test_encode_matches_the_encoder_and_needs_one(client, tiny_encoder):
    assert client.post("/encode", json={"texts": ["a"]}).status_code == 404
    with TestClient(create_app(tiny_encoder)) as encoder_client:
        texts = ["the lamp is lit.", "ships pass the island at night.", "dusk"]
        body = encoder_client.post("/encode", json={"texts": texts}).json()
        assert body["dim"] == 32
        expected = tiny_encoder.encode(texts)
        assert np.allclose(np.array(body["embeddings"]), expected, atol=1e-5)
        raw = encoder_client.post("/encode", json={"texts": texts, "normalize": False}).json()
        assert not np.allclose(np.linalg.norm(raw["embeddings"], axis=1), 1.0)
        rank = encoder_client.post("/rank", json={"question": "q?", "candidates": ["a"]})
        assert rank.status_code == 404 and "serves /, /embed, /encode" in rank.json()["error"]


def test_unpaired_surrogates_get_422_and_the_connection_keeps_serving(client):
    def post(body: str):
        return client.post("/rank", content=body, headers={"content-type": "application/json"})

    lone = post('{"question": "who \\ud800 lit it?", "candidates": ["a lamp", "the keeper"]}')
    assert lone.status_code == 422
    assert lone.json()["error"] == (
        "field 'question': not valid Unicode: unpaired surrogate U+D800 at character 4"
    )
    in_context = post('{"question": "q?", "candidates": [{"text": "a", "next": "\\udfff"}]}')
    assert in_context.status_code == 422 and "candidates.0.next" in in_context.json()["error"]
    paired = post('{"question": "who \\ud83d\\ude00 lit it?", "candidates": ["a lamp"]}')
    assert paired.status_code == 200 and paired.json()["question"] == "who \U0001f600 lit it?"


def test_health_and_openapi_describe_the_service(client):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["kind"] == "cross-encoder"
    assert health["contextual"] is True and health["rank"] is True and health["encode"] is False
    assert health["limits"]["max_candidates"] == 20
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/rank", "/rerank", "/v1/rerank", "/health", "/info", "/metrics"} <= set(paths)
    assert not {"/encode", "/embed", "/v1/embeddings"} & set(paths)  # a cross-encoder
    assert client.get("/docs").status_code == 200


def test_bm25_requests_are_scored_alone():
    app = create_app("bm25")
    assert app.state.batcher.grouping is Grouping.ALONE
    with TestClient(app) as client:
        body = {
            "question": "who lit the lamp?",
            "candidates": ["the keeper lit the lamp", "a ship"],
        }
        answers = client.post("/rank", json=body).json()["answers"]
    alone = BM25Ranker().rank(body["question"], body["candidates"])
    assert [a["index"] for a in answers] == [e.index for e in alone] == [0, 1]


def test_bm25_answers_a_question_made_of_stop_words():
    with TestClient(create_app("bm25")) as client:
        response = client.post("/rank", json={"question": "Is it?", "candidates": ["a lamp"]})
    assert response.status_code == 200
    assert [a["score"] for a in response.json()["answers"]] == [0.0]


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_batch": 0}, "max_batch must be a positive finite int, got 0"),
        ({"max_chars": 2.5}, "max_chars must be a positive finite int"),
        ({"timeout_s": 0}, "timeout_s must be a positive finite float, got 0"),
        ({"read_timeout_s": -1.0}, "read_timeout_s must be a positive finite float"),
        ({"timeout_s": float("nan")}, "timeout_s must be a positive finite float, got nan"),
        ({"read_timeout_s": float("inf")}, "read_timeout_s must be a positive finite float"),
    ],
)
def test_limits_must_be_positive(limits, message):
    with pytest.raises(ValueError, match=message):
        ServeLimits(**limits)
    assert ServeLimits(timeout_s=2, read_timeout_s=0.5).timeout_s == 2


def test_batch_config_is_checked():
    with pytest.raises(ValueError, match="field 'model_batch_size': must be >= 1, got 0"):
        BatchConfig(model_batch_size=0)
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="max_wait_ms"):
            BatchConfig(max_wait_ms=bad)


def test_serve_command_builds_the_app_and_rejects_bad_limits(monkeypatch):
    import typer
    import uvicorn
    from typer.testing import CliRunner

    from ctxsent.cli.serve import serve
    from ctxsent.serving.server import HeadTimeoutProtocol

    app = typer.Typer()
    app.command()(serve)
    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda served, **options: calls.append((served, options)))
    options = "--port 9123 --max-candidates 7 --chunk-chars 99 --timeout-s 9 --read-timeout-s 4"
    result = CliRunner().invoke(app, ["bm25", *options.split()])
    assert result.exit_code == 0, result.output
    served, options = calls[0]
    assert options["port"] == 9123 and options["host"] == "127.0.0.1"
    assert options["http"].func is HeadTimeoutProtocol
    assert options["http"].keywords == {"head_timeout_s": 4.0}
    assert served.state.limits == ServeLimits(
        max_candidates=7, chunk_chars=99, timeout_s=9, read_timeout_s=4
    )
    assert served.state.batcher.max_chunk_cost == 99
    refused = {
        ("--max-batch", "0"): "greater than or equal to 1",
        ("--batch-size", "0"): "greater than or equal to 1",
        ("--chunk-chars", "0"): "greater than or equal to 1",
        ("--port", "70000"): "less than or equal to 65535",
        ("--port", "0"): "greater than or equal to 1",
        ("--max-wait-ms", "-1"): "greater than or equal to 0",
        ("--timeout-s", "0"): "must be > 0, got 0.0",
        ("--timeout-s", "nan"): "must be a finite number, got nan",
        ("--read-timeout-s", "inf"): "must be a finite number, got inf",
    }
    for option, message in refused.items():
        bad = CliRunner().invoke(app, ["bm25", *option])
        text = " ".join(re.sub("[│╭╮╰╯─]", " ", bad.output).split())  # rich's box, unwrapped
        assert bad.exit_code == 2 and message in text, (option, text)
        assert option[0] in text or option[0][2:].replace("-", "_") in text
    assert len(calls) == 1
