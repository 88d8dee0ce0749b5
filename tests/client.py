"""The tests' in-process client: Starlette's TestClient, one trip to the app's thread per request.

Starlette's client runs the app on an event loop in a thread of its own (the "portal"), and asks
that thread for each step of a request: an event made, a stream made, the app started, the
response awaited, each chunk of the body read, the request closed. That is eight round trips
between two threads per request, and on these 2-core virtual machines a round trip costs the
better part of a millisecond of CPU: a request for `/healthz` took 6.9 ms, of which the app
itself is a tenth. This client sends the whole exchange to the app's thread in one call and
brings back the whole response: 1.4 ms for the same request.

What a test sees is the same: the same scope (Starlette's own fields), the same lifespan and
state, the same cookies, redirects and headers through httpx, and an exception raised in the app
raised in the test (or a 500 with what was sent, with `raise_server_exceptions=False`). What it
gives up is a response streamed to the test while the app is still writing it: the body arrives
whole, when the app has finished, so a response that never ends would never arrive. None of the
tests reads one. WebSocket connections go through Starlette's own transport.

`ruff` refuses `fastapi.testclient.TestClient` and `starlette.testclient.TestClient` in tests
(pyproject.toml, banned-api), so no test falls back to the slow one unawares.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self
from urllib.parse import unquote

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette import testclient as starlette_testclient
from starlette.types import Message

__all__ = ["TestClient"]


class _Exchange:
    """One request's messages to and from the app, as the app's thread sees them."""

    def __init__(self, request: httpx.Request) -> None:
        self.request = request
        self.body_sent = False
        self.start: Message | None = None
        self.chunks: list[bytes] = []
        self.trailers: list[tuple[bytes, bytes]] = []
        self.debug: dict[str, Any] | None = None
        self.finished: asyncio.Event | None = None

    async def receive(self) -> Message:
        if not self.body_sent:  # read when the app asks for it, and only then
            self.body_sent = True
            return {"type": "http.request", "body": self.request.read()}
        # As a connection does: nothing more comes until the response is over.
        assert self.finished is not None
        await self.finished.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            assert self.start is None, 'Received multiple "http.response.start" messages.'
            self.start = message
        elif kind == "http.response.body":
            assert self.start is not None, 'Received "http.response.body" before the start.'
            self.chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False) and not self.start.get("trailers", False):
                self._finish()
        elif kind == "http.response.trailers":
            self.trailers.extend(message.get("headers", []))
            if not message.get("more_trailers", False):
                self._finish()
        elif kind == "http.response.debug":
            self.debug = message["info"]

    def _finish(self) -> None:
        assert self.finished is not None
        self.finished.set()


class _Transport(starlette_testclient._TestClientTransport):
    """Starlette's transport, with HTTP requests sent to the app's thread in one call."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        scheme = request.url.scheme
        if scheme in {"ws", "wss"}:
            return super().handle_request(request)
        port = request.url.port or {"http": 80, "https": 443}[scheme]
        headers = [] if "host" in request.headers else [(b"host", request.url.netloc)]
        headers += [(k.lower().encode(), v.encode()) for k, v in request.headers.multi_items()]
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": request.method,
            "path": unquote(request.url.path),
            "raw_path": request.url.raw_path.split(b"?", 1)[0],
            "root_path": self.root_path,
            "scheme": scheme,
            "query_string": request.url.query,
            "headers": headers,
            "client": self.client,
            "server": [request.url.raw_host.decode("ascii"), port],
            "extensions": {"http.response.debug": {}, "http.response.trailers": {}},
            "state": self.app_state.copy(),
        }
        exchange = _Exchange(request)

        async def run() -> BaseException | None:
            exchange.finished = asyncio.Event()
            try:
                await self.app(scope, exchange.receive, exchange.send)
            except Exception as raised:  # handed to the test's thread, as Starlette's does
                return raised
            finally:
                exchange.finished.set()
            return None

        with self.portal_factory() as portal:
            raised = portal.call(run)
        if raised is not None and self.raise_server_exceptions:
            raise raised
        if exchange.start is None:
            if self.raise_server_exceptions:
                raise AssertionError("TestClient did not receive any response.")
            return httpx.Response(500, stream=httpx.ByteStream(b""), request=request)
        body = b"" if request.method == "HEAD" else b"".join(exchange.chunks)
        response = httpx.Response(
            exchange.start["status"],
            headers=[(k.decode(), v.decode()) for k, v in exchange.start.get("headers", [])],
            stream=httpx.ByteStream(body),
            request=request,
        )
        if exchange.start.get("trailers", False):
            response.extensions["http.response.trailers"] = exchange.trailers
        if exchange.debug is not None:
            response.extensions["http.response.debug"] = exchange.debug
            for name in ("template", "context"):
                if name in exchange.debug:
                    setattr(response, name, exchange.debug[name])
        return response


# The loop each app runs on, while a client of it is entered (`with`): its lifespan ran there.
_running: dict[int, BlockingPortal] = {}


class TestClient(starlette_testclient.TestClient):  # noqa: TID251 (the one it improves)
    """Starlette's TestClient (FastAPI's is the same class) with the one-call transport.

    A client not entered (`with`) of an app that another client runs is another browser of
    the same server: its requests go to that client's loop, where the app's lifespan ran and
    its loop-bound parts live (the write turn's lock, PostgreSQL's asynchronous connections).
    Starlette's starts a loop in a thread of its own for each such request, a millisecond and
    a half each here, and the app's parts then meet a loop they were not made on. A client of
    an app that nothing runs does as Starlette's does."""

    __test__ = False

    def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(app, *args, **kwargs)
        slow = self._transport
        assert isinstance(slow, starlette_testclient._TestClientTransport)
        self._transport = _Transport(
            slow.app,
            portal_factory=slow.portal_factory,
            raise_server_exceptions=slow.raise_server_exceptions,
            root_path=slow.root_path,
            app_state=slow.app_state,
            client=slow.client,
        )

    @contextmanager
    def _portal_factory(self) -> Iterator[BlockingPortal]:
        running = self.portal or _running.get(id(self.app))
        if running is not None:
            yield running
        else:
            with start_blocking_portal(**self.async_backend) as portal:
                yield portal

    def __enter__(self) -> Self:
        entered = super().__enter__()
        assert self.portal is not None
        self._runs = _running.setdefault(id(self.app), self.portal) is self.portal
        return entered

    def __exit__(self, *args: object) -> None:
        if getattr(self, "_runs", False):
            del _running[id(self.app)]
        super().__exit__(*args)
