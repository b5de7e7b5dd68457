"""Who may use the service: an optional bearer key, CORS origins, a warning when it listens
beyond loopback without a key, and requests with unknown fields refused."""

from __future__ import annotations

import pytest
import typer
import uvicorn
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ctxsent.cli.serve import serve
from ctxsent.serving.app import create_app
from ctxsent.serving.server import is_loopback

QUERY = {"question": "who lit the lamp?", "candidates": ["the keeper lit it", "a ship"]}
KEY = "s3cret-key"


@pytest.fixture(scope="module")
def keyed():
    with TestClient(create_app("bm25", api_key=KEY)) as client:
        yield client


@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong", f"Basic {KEY}", "Bearer", f"Bearer {KEY}x"]
)
def test_a_key_is_required_when_set(keyed, authorization):
    headers = {"authorization": authorization} if authorization else {}
    for path, body in [("/rank", QUERY), ("/encode", {"texts": ["a"]})]:
        response = keyed.post(path, json=body, headers=headers)
        assert response.status_code == 401
        assert "API key" in response.json()["error"]
        assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])
def test_the_right_key_opens_every_endpoint_and_health_and_docs_need_none(keyed, scheme):
    response = keyed.post("/rank", json=QUERY, headers={"authorization": f"{scheme} {KEY}"})
    assert response.status_code == 200
    for path in ["/health", "/docs", "/openapi.json", "/redoc"]:
        assert keyed.get(path).status_code == 200, path


def test_without_a_key_everything_is_open():
    with TestClient(create_app("bm25")) as client:
        assert client.post("/rank", json=QUERY).status_code == 200


def test_cors_origins_are_allowed_only_when_configured():
    preflight = {
        "origin": "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }
    with TestClient(create_app("bm25", api_key=KEY, cors_origins=["https://app.example"])) as c:
        allowed = c.options("/rank", headers=preflight)  # preflights carry no key
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        headers = {"origin": "https://app.example", "authorization": f"Bearer {KEY}"}
        ranked = c.post("/rank", json=QUERY, headers=headers)
        assert ranked.headers["access-control-allow-origin"] == "https://app.example"
        other = c.options("/rank", headers={**preflight, "origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
    with TestClient(create_app("bm25")) as closed:
        ranked = closed.post("/rank", json=QUERY, headers={"origin": "https://app.example"})
        assert "access-control-allow-origin" not in ranked.headers


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/rank", {**QUERY, "topk": 1}, "body.topk"),
        ("/rank", {**QUERY, "candidates": [{"text": "a", "prev": "b"}]},
         "body.candidates.0.Candidate.prev"),
        ("/encode", {"texts": ["a"], "normalise": False}, "body.normalise"),
    ],
)  # fmt: skip
def test_unknown_fields_are_refused_with_their_name(path, body, field, tiny_encoder):
    with TestClient(create_app(tiny_encoder if path == "/encode" else "bm25")) as client:
        response = client.post(path, json=body)
    assert response.status_code == 422
    assert response.json()["error"] == (
        f"invalid request: field '{field}': Extra inputs are not permitted"
    )


# ---- the serve command ---------------------------------------------------------------------


@pytest.fixture
def command(monkeypatch):
    """Runs ``ctxsent serve`` without starting uvicorn: ``(result, app or None)``."""
    app = typer.Typer()
    app.command()(serve)
    served = []
    monkeypatch.setattr(uvicorn, "run", lambda asgi, **options: served.append(asgi))

    def run(*args, env=None):
        result = CliRunner().invoke(app, ["bm25", *args], env=env)
        return result, served.pop() if served else None

    return run


def test_serving_beyond_loopback_without_a_key_warns(command):
    result, app = command("--host", "0.0.0.0")
    assert result.exit_code == 0 and app is not None
    assert "warning: serving on 0.0.0.0 without an API key" in result.stderr
    for args in (["--host", "0.0.0.0", "--api-key", KEY], ["--host", "::1"], []):
        result, _ = command(*args)
        assert result.exit_code == 0 and "warning" not in result.stderr, args


def test_the_key_comes_from_the_option_or_the_environment(command):
    _, app = command(env={"CTXSENT_API_KEY": KEY})
    with TestClient(app) as client:
        assert client.post("/rank", json=QUERY).status_code == 401
        assert client.post(
            "/rank", json=QUERY, headers={"authorization": f"Bearer {KEY}"}
        ).is_success
    result, app = command("--api-key", " ")
    assert result.exit_code == 2 and "the API key is empty" in result.output and app is None


def test_cors_origins_are_repeatable(command):
    result, app = command("--cors-origin", "https://a.example", "--cors-origin", "http://b:3000")
    assert result.exit_code == 0
    with TestClient(app) as client:
        for origin in ("https://a.example", "http://b:3000"):
            response = client.get("/health", headers={"origin": origin})
            assert response.headers["access-control-allow-origin"] == origin


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.0.1", True), ("localhost", True), ("::1", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("example.org", False)],
)  # fmt: skip
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback
