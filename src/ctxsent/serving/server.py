"""uvicorn settings of the HTTP service, with a deadline on request heads.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` but
has no deadline for a request head: a client sending its headers a byte at a
time holds a connection for ever. :class:`HeadTimeoutProtocol` (its h11
protocol plus a timer) answers 408 and closes such a connection. Request
bodies get the same deadline from :class:`~ctxsent.serving.middleware.BodyGuard`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from functools import partial
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds uvicorn keeps an idle connection open between requests (its own default).
KEEP_ALIVE_S = 5


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, answering 408 and closing a connection whose request head
    is not complete ``head_timeout_s`` after the connection opened or the last response."""

    def __init__(self, *args: Any, head_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout_s = head_timeout_s
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def on_response_complete(self) -> None:
        self._start_head_timer()  # before the pipelined request it may handle
        super().on_response_complete()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the head has arrived
            self._stop_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _start_head_timer(self) -> None:
        self._stop_head_timer()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            problem = f"request head not received in {self.head_timeout_s:g} s"
            body = json.dumps({"error": problem}, separators=(",", ":")).encode()
            head = (
                "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
            )
            self.transport.write(head.encode() + body)
            self.transport.close()


def uvicorn_options(read_timeout_s: float) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` / ``uvicorn.Config``: request heads must
    arrive within ``read_timeout_s``, idle connections close after :data:`KEEP_ALIVE_S`."""
    return {
        "http": partial(HeadTimeoutProtocol, head_timeout_s=read_timeout_s),
        "timeout_keep_alive": KEEP_ALIVE_S,
    }


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False
