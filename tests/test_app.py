"""app.py's routing: the admin area is a section that paths outside /admin pass over at once,
and every route of it still answers; regdesk's own routes come before the API documentation's
and pass over at once a path outside their literal prefix, answering every path as their
pattern would."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from sqlalchemy import Engine
from starlette.routing import Match
from starlette.types import Scope

from regdesk.app import Section
from tests.admin.support import person
from tests.client import TestClient


def sections(app: FastAPI) -> list[Section]:
    return [route for route in app.router.routes if isinstance(route, Section)]


def test_the_admin_area_is_a_section(app: FastAPI) -> None:
    assert [section.prefix for section in sections(app)] == ["/admin"]


def test_a_path_outside_a_section_never_asks_its_routes(
    app: FastAPI, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    for section in sections(app):
        inner = section.original_router
        matches = inner.matches

        def noting(scope: Scope, matches: Any = matches) -> tuple[Match, Scope]:
            asked.append(str(scope["path"]))
            return matches(scope)

        monkeypatch.setattr(inner, "matches", noting)
    assert client.get("/healthz").status_code == 200
    assert client.get("/no/such/page").status_code == 404
    assert asked == []
    assert client.get("/admin/users", follow_redirects=False).status_code == 303
    assert asked == ["/admin/users"]


def test_every_admin_page_is_found_through_the_section(
    engine: Engine, app: FastAPI, client: TestClient
) -> None:
    admin = person(app, engine, "ada", permissions=["admin"])
    for path in ("/admin", "/admin/users", "/admin/departments", "/admin/audit"):
        assert admin.client.get(path).status_code == 200, path


def test_a_405_names_the_methods_of_a_route_in_a_section(client: TestClient) -> None:
    """The section is FastAPI's included router to what lists the routes (errors.py's Allow)."""
    refused = client.put("/admin/users/7/edit")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, POST"


def _probe_paths(app: FastAPI) -> list[str]:
    """A path for every route of the app (its parameters given as 7), each also with a slash
    after it and without its last character, and paths no route has."""
    paths = {"/", "/api", "/api/", "/api/v0/", "/nowhere", "/api/v0/users/7/roles/8/extra"}
    for route in app.router.routes:
        made = re.sub(r"\{[^}]*\}", "7", str(getattr(route, "path", "/")))
        paths.update({made, made + "/", made[:-1] or "/"})
    return sorted(paths)


def test_a_route_passed_over_by_its_prefix_answers_every_path_as_its_pattern_would(
    app: FastAPI,
) -> None:
    prefixed = [
        route
        for route in app.router.routes
        if isinstance(route, APIRoute) and "matches" in vars(route)
    ]
    assert len(prefixed) > 20  # every route of the API and of the flat page routers
    for path in _probe_paths(app):
        for method in ("GET", "POST", "DELETE"):
            for root_path in ("", "/behind"):
                scope = {
                    "type": "http",
                    "path": root_path + path,
                    "root_path": root_path,
                    "method": method,
                    "headers": [],
                }
                for route in prefixed:
                    found, child = route.matches(dict(scope))
                    expected, expected_child = type(route).matches(route, dict(scope))
                    assert (found, child.get("path_params")) == (
                        expected,
                        expected_child.get("path_params"),
                    ), (route.path, method, root_path + path)


def test_regdesk_s_routes_come_before_the_api_documentation_s(
    app: FastAPI, client: TestClient
) -> None:
    paths = [str(getattr(route, "path", "")) for route in app.router.routes]
    assert paths[0] == "/api/users/current"
    assert paths.index("/openapi.json") > paths.index("/api/oauth/token")
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/docs").status_code == 200
