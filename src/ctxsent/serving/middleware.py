"""ASGI middleware of the HTTP service: request body limits, bearer-key access, metrics.

All are plain ASGI (no ``BaseHTTPMiddleware``), so they see the body as it
streams in and refuse a request before the app reads it.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Collection

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def error_response(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    """The service's one error shape: ``{"error": MESSAGE}``."""
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class BodyGuard:
    """Refuses a request body larger than ``max_bytes`` (413) or slower than ``timeout_s`` (408).

    The bytes are counted as they arrive, so a chunked body without Content-Length is
    held to the limit too. Once over the limit or the deadline it answers at once with
    ``Connection: close`` and reads no more: the app is told that the client has gone,
    and whatever it answers is dropped.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = f"request body over the limit of {self.max_bytes} bytes"
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            await _refuse(413, f"{too_large}: Content-Length {length}", scope, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        received, body_done, refused, started = 0, False, False, False

        async def guarded_receive() -> Message:
            nonlocal received, body_done, refused
            if refused:
                return {"type": "http.disconnect"}
            if body_done:  # waiting for a disconnect: no deadline
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                return await refuse(408, f"request body not received in {self.timeout_s:g} s")
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > self.max_bytes:
                    return await refuse(413, too_large)
            return message

        async def refuse(status: int, problem: str) -> Message:
            nonlocal refused
            refused = True
            if not started:
                await _refuse(status, problem, scope, send)
            return {"type": "http.disconnect"}

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if not refused:
                started = True
                await send(message)

        await self.app(scope, guarded_receive, guarded_send)


async def _refuse(status: int, problem: str, scope: Scope, send: Send) -> None:
    """Answer ``problem`` and close the connection, so the client stops sending its body."""
    response = error_response(status, problem, {"connection": "close"})
    await response(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


class BearerAuth:
    """Requests need ``Authorization: Bearer KEY`` (compared in constant time), else 401;
    paths in ``open_paths`` (health, docs) are open to all."""

    def __init__(self, app: ASGIApp, key: str, open_paths: Collection[str]) -> None:
        self.app = app
        self.key = key.encode()
        self.open_paths = frozenset(open_paths)

    def _authorized(self, scope: Scope) -> bool:
        value = next((v for k, v in scope["headers"] if k.lower() == b"authorization"), b"")
        scheme, _, token = value.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        open_path = scope["type"] != "http" or scope["path"] in self.open_paths
        if open_path or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        problem = "this service needs an API key: send 'Authorization: Bearer KEY'"
        await error_response(401, problem, {"www-authenticate": "Bearer"})(scope, receive, send)


class ServiceMetrics:
    """The service's Prometheus metrics, in a registry of its own (one per app)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.requests = Counter(
            "ctxsent_requests", "HTTP requests answered", ["route", "status"], registry=registry
        )
        self.latency = Histogram(
            "ctxsent_request_seconds", "Seconds to answer a request", ["route"], registry=registry
        )
        self.batch_size = Histogram(
            "ctxsent_batch_size",
            "Items (records to score, texts to embed) per model call",
            buckets=[2**i for i in range(11)],
            registry=registry,
        )
        self.queue_depth = Gauge(
            "ctxsent_queue_depth", "Requests waiting for a model call", registry=registry
        )

    def response(self) -> Response:
        """The metrics in Prometheus' text format."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class RequestMetrics:
    """Counts and times every request by route (``other`` for a path that is no route)
    and status; the outermost middleware, so refusals by the others count too."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics, paths: Collection[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = scope["path"] if scope["path"] in self.paths else "other"
        status, start = 500, time.perf_counter()  # 500 unless a response starts

        async def timed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)
