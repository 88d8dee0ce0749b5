"""A first walk through the API with a real service token (the detailed rules have own files)."""

from __future__ import annotations

from tests.client import TestClient
from tests.conftest import Apps, bearer


def test_service_token_reads_users_and_volunteers(client: TestClient, apps: Apps) -> None:
    token = apps.service_token("user:read volunteer:read")
    assert client.post("/api/v0/users/search", headers=bearer(token)).json() == {
        "data": [],
        "nextPage": None,
        "hasMore": False,
    }
    assert (
        client.post("/api/v0/volunteers/search", json={}, headers=bearer(token)).status_code == 200
    )
    assert client.get("/api/v0/volunteers/departments", headers=bearer(token)).json() == []
