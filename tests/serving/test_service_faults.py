"""Faults one client can cause, and what the service does so that the others do not notice:
oversized streamed bodies (413), slow heads and bodies (408), requests past their deadline
(504) and clients that leave (their queued work is dropped)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import httpx
import numpy as np
import pytest

from ctxsent.models.ranker_base import As2Ranker
from ctxsent.serving.app import create_app
from ctxsent.serving.limits import ServeLimits
from polling import until

QUERY = {"question": "who lit the lamp?", "candidates": ["the keeper", "a ship"]}


class GatedRanker(As2Ranker):
    """A fake ranker (score: the candidate's length) whose call on a candidate "wait" blocks
    until ``release`` is set, so a test decides what is queued while it runs."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def predict(self, records, batch_size=64):
        texts = [r.candidate for r in records]
        self.calls.append(texts)
        if "wait" in texts:
            self.started.set()
            self.release.wait(timeout=120)  # only ends a hang
        return np.array([len(t) for t in texts], dtype=float)


def http_client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def post_rank(app, payload: dict, gone: asyncio.Event | None = None) -> int | None:
    """``POST /rank`` straight through ASGI, as a client that disconnects once ``gone`` is set;
    the response status, if one was sent."""
    body = json.dumps(payload).encode()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if messages:
            return messages.pop()
        await (gone or asyncio.Event()).wait()
        return {"type": "http.disconnect"}

    statuses = []

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/rank",
        "raw_path": b"/rank",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("test", 1),
        "server": ("test", 80),
    }
    await app(scope, receive, send)
    return statuses[0] if statuses else None


def test_a_chunked_body_over_the_limit_gets_413_without_being_read_whole():
    app = create_app(GatedRanker(), ServeLimits(max_body_bytes=1000))
    chunks_sent = 0

    async def endless_body():  # 100 kB in 100-byte chunks, so no Content-Length
        nonlocal chunks_sent
        for _ in range(1000):
            chunks_sent += 1
            yield b" " * 100

    async def main():
        async with http_client(app) as http:
            headers = {"content-type": "application/json"}
            huge = await http.post("/rank", content=endless_body(), headers=headers)
            after = await http.post("/rank", json=QUERY)
        await app.state.batcher.close()
        return huge, after

    huge, after = asyncio.run(main())
    assert huge.request.headers.get("transfer-encoding") == "chunked"
    assert huge.status_code == 413
    assert huge.json() == {"error": "request body over the limit of 1000 bytes"}
    assert huge.headers["connection"] == "close"
    assert chunks_sent <= 12  # reading stopped just past the limit
    assert after.status_code == 200


def test_a_body_that_does_not_arrive_in_time_gets_408():
    app = create_app(GatedRanker(), ServeLimits(read_timeout_s=0.1))
    statuses, stalled = [], asyncio.Event()

    async def receive():  # the first bytes of a body, then nothing
        if not stalled.is_set():
            stalled.set()
            return {"type": "http.request", "body": b'{"question": ', "more_body": True}
        await asyncio.Event().wait()

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])
        elif message["type"] == "http.response.body":
            statuses.append(json.loads(message["body"]))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/rank",
        "headers": [(b"content-type", b"application/json")],
        "query_string": b"",
    }
    asyncio.run(app(scope, receive, send))
    assert statuses == [408, {"error": "request body not received in 0.1 s"}]


def test_requests_past_their_deadline_get_504_and_are_not_computed():
    model = GatedRanker()
    app = create_app(model, ServeLimits(timeout_s=0.2))

    async def main():
        async with http_client(app) as http:
            stuck = asyncio.create_task(http.post("/rank", json={**QUERY, "candidates": ["wait"]}))
            await asyncio.to_thread(model.started.wait, 120)
            queued = await http.post("/rank", json={**QUERY, "candidates": ["queued"]})
            stuck = await stuck
            model.release.set()
            after = await http.post("/rank", json=QUERY)
        await app.state.batcher.close()
        return stuck, queued, after

    stuck, queued, after = asyncio.run(main())
    for late in (stuck, queued):
        assert late.status_code == 504
        assert late.json() == {
            "error": "no answer within the service's timeout of 0.2 s; the request was dropped"
        }
    assert after.status_code == 200
    assert model.calls == [["wait"], QUERY["candidates"]]  # "queued" was dropped unrun
    assert app.state.batcher.stats.dropped == 1


def test_the_work_of_a_client_that_disconnects_is_dropped():
    model = GatedRanker()
    app = create_app(model)

    async def main():
        stuck = asyncio.create_task(post_rank(app, {**QUERY, "candidates": ["wait"]}))
        await asyncio.to_thread(model.started.wait, 120)
        gone = asyncio.Event()
        leaving = asyncio.create_task(post_rank(app, {**QUERY, "candidates": ["left"]}, gone))
        await until(lambda: app.state.batcher.waiting == 1)
        gone.set()
        await leaving  # its handler returns as soon as it sees the disconnect
        model.release.set()
        statuses = [await stuck, await post_rank(app, QUERY)]
        await app.state.batcher.close()
        return statuses

    assert asyncio.run(main()) == [200, 200]
    assert model.calls == [["wait"], QUERY["candidates"]]  # "left" was never computed
    assert app.state.batcher.stats.dropped == 1


# ---- a real uvicorn server on loopback ------------------------------------------------------


@pytest.fixture(scope="module")
def live_url(live):
    """The service under uvicorn with the ``ctxsent serve`` options, 0.5 s to send a head."""
    limits = ServeLimits(read_timeout_s=0.5)
    with live(create_app("bm25", limits), limits.read_timeout_s) as (url, port):
        yield url, port


def read_until_closed(connection: socket.socket) -> bytes:
    connection.settimeout(60)  # only ends a hang
    data = b""
    while chunk := connection.recv(4096):
        data += chunk
    return data


def test_a_slow_request_head_gets_408_and_its_connection_closed(live_url):
    url, port = live_url
    with socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(b"POST /rank HTTP/1.1\r\nhost: test\r\n")  # the head never ends
        reply = read_until_closed(slow)
    assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert reply.endswith(b'{"error":"request head not received in 0.5 s"}')
    assert httpx.post(f"{url}/rank", json=QUERY).status_code == 200


def test_a_slow_request_body_gets_408_and_its_connection_closed(live_url):
    url, port = live_url
    head = b"POST /rank HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n"
    with socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(head + b'content-length: 100\r\n\r\n{"question": ')  # and no more
        reply = read_until_closed(slow)
    assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert reply.endswith(b'{"error":"request body not received in 0.5 s"}')
    assert httpx.post(f"{url}/rank", json=QUERY).status_code == 200


def test_keep_alive_connections_serve_several_requests(live_url):
    """The head timer restarts after each response: a connection serves request after
    request while each head arrives in time."""
    url, _ = live_url
    with httpx.Client(base_url=url) as http:
        statuses = [http.post("/rank", json=QUERY).status_code for _ in range(3)]
        assert statuses == [200] * 3
        assert http.get("/health").json()["batching"]["requests"] >= 3
