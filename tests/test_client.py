"""tests/client.py: the tests' in-process client answers as Starlette's does, in one trip to the
app's thread per request."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from tests.client import TestClient


def small_app() -> FastAPI:
    app = FastAPI()

    @app.get("/hello")
    def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"hello {request.client.host if request.client else ''}")

    @app.post("/echo")
    async def echo(request: Request) -> PlainTextResponse:
        return PlainTextResponse(await request.body(), headers={"X-Length": "set"})

    @app.post("/ignore")
    async def ignore() -> PlainTextResponse:
        return PlainTextResponse("not read", status_code=413)

    @app.get("/chunks")
    def chunks() -> StreamingResponse:
        return StreamingResponse(iter([b"one ", b"two ", b"three"]), media_type="text/plain")

    @app.get("/loop")
    async def loop() -> PlainTextResponse:
        return PlainTextResponse(str(id(asyncio.get_running_loop())))

    @app.get("/broken")
    def broken() -> None:
        raise RuntimeError("broken on purpose")

    return app


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(small_app(), base_url="https://testserver") as test_client:
        yield test_client


def test_a_request_is_one_call_to_the_apps_thread(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each trip to the app's thread is a task started on its loop (the portal's `call` too)."""
    trips: list[object] = []
    start_task_soon = BlockingPortal.start_task_soon

    def counted(portal: BlockingPortal, func: Any, *args: Any, **kwargs: Any) -> Any:
        trips.append(func)
        return start_task_soon(portal, func, *args, **kwargs)

    monkeypatch.setattr(BlockingPortal, "start_task_soon", counted)
    assert client.get("/chunks").text == "one two three"
    assert len(trips) == 1


def test_the_body_arrives_whole_with_status_headers_and_client(client: TestClient) -> None:
    echoed = client.post("/echo", content=b"x" * 100_000)
    assert echoed.status_code == 200
    assert echoed.content == b"x" * 100_000
    assert echoed.headers["x-length"] == "set"
    assert client.get("/hello").text == "hello testclient"
    assert client.head("/hello").content == b""


def test_a_body_the_app_never_asks_for_is_never_read(client: TestClient) -> None:
    read: list[int] = []

    def body() -> Iterator[bytes]:
        read.append(1)
        yield b"unread"

    assert client.post("/ignore", content=body()).status_code == 413
    assert read == []


def test_an_exception_in_the_app_is_raised_in_the_test() -> None:
    with (
        TestClient(small_app()) as client,
        pytest.raises(RuntimeError, match="broken on purpose"),
    ):
        client.get("/broken")


def test_without_raising_an_exception_in_the_app_is_a_500() -> None:
    with TestClient(small_app(), raise_server_exceptions=False) as client:
        assert client.get("/broken").status_code == 500


def test_another_client_of_a_running_app_is_answered_on_its_loop() -> None:
    app = small_app()
    with TestClient(app) as running:
        other = TestClient(app, client=("192.0.2.7", 50000))
        assert other.get("/loop").text == running.get("/loop").text
        assert other.get("/hello").text == "hello 192.0.2.7"
    alone = TestClient(app)  # nothing runs the app now: it is started for the request
    assert alone.get("/hello").status_code == 200
