"""Admin-page tests: cheap password hashing (they log in a lot), and the people who use the
admin area, each with a browser session of their own (`people`, see support.py)."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from regdesk import security
from tests.admin.support import People, seed_people


@pytest.fixture(autouse=True)
def cheap_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same real argon2id checks, at the smallest cost; the service's own is untouched."""
    monkeypatch.setattr(
        security, "_password_hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    )


@pytest.fixture
def people(engine: Engine, app: FastAPI, client: TestClient) -> People:
    """An administrator, a lead of "Security", a lead of "Hotel" and a plain attendee, each
    logged in with a client of their own; `client` stays signed out."""
    return seed_people(engine, app, client)
