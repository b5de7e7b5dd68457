"""ASGI middleware of the HTTP service: request body limits and bearer-key access.

Both are plain ASGI (no ``BaseHTTPMiddleware``), so they see the body as it
streams in and refuse a request before the app reads it.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Collection

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
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
