"""The OpenAPI document tells the truth: it is valid, names each route's scope, and what the
routes really answer (successes and every error envelope) fits the schemas it gives."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from sqlalchemy import Engine

from tests.api.test_permissions import ROUTES, Route, load, path_of
from tests.client import TestClient
from tests.conftest import Apps, bearer


@pytest.fixture
def document(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    spec: dict[str, Any] = response.json()
    return spec


def operation(document: dict[str, Any], route: Route) -> dict[str, Any]:
    path = route.path.replace("{user}", "{id}").replace("{me}", "{id}")
    path = path.replace("{role}", "{roleId}").replace("{ticket}", "{code}")
    found: dict[str, Any] = document["paths"][path][route.method.lower()]
    return found


def check(document: dict[str, Any], route: Route, status: int, body: Any) -> None:
    """`body` validates against the schema the document gives for this status."""
    described = operation(document, route)["responses"][str(status)]
    schema = described["content"]["application/json"]["schema"]
    validator = Draft202012Validator({**schema, "components": document["components"]})
    errors = [e.message for e in validator.iter_errors(body)]
    assert errors == [], f"{route.method} {route.path} {status}: {errors}"


def test_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate(document)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_each_route_declares_its_scope_and_errors(document: dict[str, Any], route: Route) -> None:
    described = operation(document, route)
    either = [{"regdesk": [route.own]}] if route.own is not None else []  # OR, in OpenAPI
    assert described["security"] == [{"regdesk": [route.scope]}, *either]
    assert {"401", "403", "500"} <= set(described["responses"])
    if route.body is not None:
        assert "400" in described["responses"]
        assert "requestBody" in described


def test_token_endpoint_documents_its_form(document: dict[str, Any]) -> None:
    token = document["paths"]["/api/oauth/token"]["post"]
    form = token["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert {"grant_type", "client_id", "client_secret", "scope"} <= set(form["properties"])
    schemes = document["components"]["securitySchemes"]["regdesk"]["flows"]
    assert schemes["clientCredentials"]["tokenUrl"] == "/api/oauth/token"


@pytest.mark.parametrize("path", ["/api/oauth/token", "/api/oauth/revoke", "/api/oauth/introspect"])
def test_oauth_endpoints_document_their_refusals(document: dict[str, Any], path: str) -> None:
    """Each answers 400, 401 (invalid_client) and 429 in RFC 6749 5.2's shape."""
    responses = document["paths"][path]["post"]["responses"]
    for status in ("400", "401", "429"):
        schema = responses[status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/OAuthErrorBody"}, (path, status)


def test_a_405_allows_exactly_the_documented_methods(
    client: TestClient, document: dict[str, Any]
) -> None:
    """RFC 9110 15.5.6: PUT and DELETE share a path; `/users/search` is not `/users/{id}`."""
    for path, operations in document["paths"].items():
        answer = client.options(path.replace("{id}", "1").replace("{roleId}", "1"))
        assert answer.status_code == 405, f"{path}: {answer.text}"
        assert answer.headers["allow"] == ", ".join(sorted(m.upper() for m in operations)), path


def test_real_answers_fit_the_documented_schemas(
    client: TestClient, apps: Apps, engine: Engine, document: dict[str, Any]
) -> None:
    ids = load(engine)
    every = "user:read volunteer:read user:roles:update registration:read"
    service = apps.service_token(every)
    narrow = apps.service_token("registration:read")
    narrower = apps.service_token("user:read")  # for the routes registration:read opens
    own = (  # boss is an administrator: the ticket scanners' scopes are boss's to grant
        "pii:basic pii:email pii:phone pii:address con:read pii:finance:read"
        " admin:ticket:read admin:ticket:scan openid"
    )
    users = apps.mint(apps.register(obo_scopes=own), own, user_id=int(ids["users"]["boss"]))
    for route in ROUTES:
        token = users if route.users_only or "{me}" in route.path else service
        path = path_of(route, ids)
        answered = client.request(route.method, path, headers=bearer(token), json=route.body)
        assert answered.status_code == route.success, answered.text
        if route.success != 204:
            check(document, route, route.success, answered.json())
        check(document, route, 401, client.request(route.method, path, json=route.body).json())
        lacking = narrower if route.scope == "registration:read" else narrow
        refused = client.request(route.method, path, headers=bearer(lacking), json=route.body)
        check(document, route, 403, refused.json())
        if "{user}" in route.path:
            missing = route.path.format(user="999999", role=ids["roles"]["Staff"])
            gone = client.request(route.method, missing, headers=bearer(token), json=route.body)
            assert gone.status_code == 404
            check(document, route, 404, gone.json())
        if route.body is not None:
            bad = client.request(route.method, path, headers=bearer(token), json={"x": 1})
            assert bad.status_code == 400
            check(document, route, 400, bad.json())


def test_docs_page_serves_its_own_assets(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert "/openapi.json" in page.text
    assert "cdn" not in page.text.lower()
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert f"/static-offline-docs/{asset}" in page.text
        assert client.get(f"/static-offline-docs/{asset}").status_code == 200
