"""app.py's routing: the admin area is a section that paths outside /admin pass over at once,
and every route of it still answers."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
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
