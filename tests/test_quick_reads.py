"""The direct call of quick routes (quick_reads.py): the route's own dependencies and endpoint,
called without FastAPI's solving, answering only what succeeds; everything else left to
FastAPI's handler, which gives the same answers. And the routes it refuses to take."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import pytest
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from sqlalchemy import Engine

from regdesk import quick_reads
from regdesk.errors import NotFound, install_error_handlers
from regdesk.quick_reads import QuickRoute, QuickRouteError, quick
from tests.api.test_permissions import DOCUMENT
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.transfer.support import import_

# --- a small app: what is called, and how often ------------------------------------------------

CALLS: list[str] = []


async def counted(request: Request) -> str:
    CALLS.append("dependency")
    return request.headers.get("x-who", "nobody")


def small_app() -> FastAPI:
    router = APIRouter(route_class=QuickRoute)

    @router.get("/things/{id}")
    @quick
    async def thing(id: str, who: Annotated[str, Depends(counted)]) -> Any:
        CALLS.append("endpoint")
        if id == "missing":
            raise NotFound("Thing not found.")
        return JSONResponse({"id": id, "who": who})

    @router.get("/plain")
    async def plain(who: Annotated[str, Depends(counted)]) -> Any:
        return JSONResponse({"who": who})

    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router)
    return app


@pytest.fixture
def small() -> Iterator[TestClient]:
    CALLS.clear()
    with TestClient(small_app()) as client:
        yield client


def test_a_quick_route_that_succeeds_is_called_once_directly(small: TestClient) -> None:
    answer = small.get("/things/7", headers={"x-who": "fox"})
    assert answer.json() == {"id": "7", "who": "fox"}
    assert CALLS == ["dependency", "endpoint"]


def test_a_refusal_is_answered_by_fastapis_handler_as_without_the_direct_call(
    small: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = small.get("/things/missing")
    # The direct call, then FastAPI's own: the error rendered as every route renders it.
    assert CALLS == ["dependency", "endpoint", "dependency", "endpoint"]
    monkeypatch.setattr(quick_reads, "DIRECT_CALLS", False)
    CALLS.clear()
    alone = small.get("/things/missing")
    assert CALLS == ["dependency", "endpoint"]
    assert (refused.status_code, refused.headers, refused.content) == (
        alone.status_code,
        alone.headers,
        alone.content,
    )
    assert refused.status_code == 404


def test_a_route_not_marked_quick_is_fastapis_alone(small: TestClient) -> None:
    assert small.get("/plain").json() == {"who": "nobody"}
    assert CALLS == ["dependency"]


# --- what it refuses to take -------------------------------------------------------------------


async def gives() -> AsyncIterator[str]:
    yield "x"


def sync_dependency() -> str:
    return "x"


async def _endpoint_ok(id: str) -> Any:
    return JSONResponse({})


@pytest.mark.parametrize(
    "declare",
    [
        pytest.param(lambda r: r.get("/a")(quick(lambda: JSONResponse({}))), id="sync endpoint"),
        pytest.param(
            lambda r: r.get("/a")(quick(_with(Annotated[str, Depends(sync_dependency)]))),
            id="sync dependency",
        ),
        pytest.param(
            lambda r: r.get("/a")(quick(_with(Annotated[str, Depends(gives)]))),
            id="dependency with yield",
        ),
        pytest.param(lambda r: r.get("/a")(quick(_with(str))), id="query parameter"),
        pytest.param(lambda r: r.get("/a/{value}")(quick(_with(int))), id="path parameter, int"),
        pytest.param(
            lambda r: r.get("/a/{id}", dependencies=[Depends(counted)])(quick(_endpoint_ok)),
            id="route-level dependency",
        ),
    ],
)
def test_a_route_it_cannot_call_as_fastapi_would_is_refused_when_declared(declare: Any) -> None:
    with pytest.raises(QuickRouteError):
        declare(APIRouter(route_class=QuickRoute))


def _with(annotation: Any) -> Any:
    """An async endpoint taking one parameter `value` of this annotation."""

    async def endpoint(value: Any) -> Any:
        return JSONResponse({})

    endpoint.__annotations__ = {"value": annotation, "return": Any}
    return endpoint


# --- regdesk's own quick routes ----------------------------------------------------------------


def quick_routes(app: FastAPI) -> list[tuple[str, str]]:
    return sorted(
        (method, route.path)
        for route in iter_route_contexts(app.routes)
        if getattr(route, "endpoint", None) in quick_reads._QUICK
        for method in route.methods or ()
    )


def test_the_hot_reads_are_quick(app: FastAPI) -> None:
    """The routes of issue 20's targets, and the few beside them, take the direct call."""
    assert quick_routes(app) == [
        ("GET", "/api/users/current"),
        ("GET", "/api/users/current/registration"),
        ("GET", "/api/v0/users/{id}"),
        ("GET", "/api/v0/users/{id}/registration"),
        ("GET", "/api/v0/users/{id}/volunteer"),
        ("GET", "/api/v0/volunteers/departments"),
        ("POST", "/api/v0/registration/search"),
        ("POST", "/api/v0/users/search"),
        ("POST", "/api/v0/volunteers/search"),
    ]


def test_a_page_read_directly_equals_fastapis_answer(
    client: TestClient, apps: Apps, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte for byte, headers included, for a body the direct call reads and one it refuses."""
    import_(engine, DOCUMENT)
    token = apps.service_token("user:read volunteer:read")
    asks = [
        ("POST", "/api/v0/users/search", {"limit": 1}),
        ("POST", "/api/v0/users/search", {"limit": 0}),
        ("POST", "/api/v0/volunteers/search", {}),
        ("GET", "/api/v0/volunteers/departments", None),
    ]

    def answers() -> list[tuple[int, list[tuple[str, str]], bytes]]:
        seen = []
        for method, path, body in asks:
            answer = client.request(method, path, headers=bearer(token), json=body)
            # Each request counts against the limit: the remainder moves on, by one each.
            moving = ("x-request-id", "ratelimit-remaining", "ratelimit-reset")
            headers = [(k, "" if k in moving else v) for k, v in answer.headers.items()]
            seen.append((answer.status_code, headers, answer.content))
        return seen

    direct = answers()
    monkeypatch.setattr(quick_reads, "DIRECT_CALLS", False)
    assert answers() == direct
    assert [status for status, _, _ in direct] == [200, 400, 200, 200]
