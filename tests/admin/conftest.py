"""Admin-page tests: the people who use the admin area, each with a browser session of their
own (`people`, see support.py)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from tests.admin.support import People, seed_people
from tests.client import TestClient


@pytest.fixture
def people(engine: Engine, app: FastAPI, client: TestClient) -> People:
    """An administrator, a lead of "Security", a lead of "Hotel" and a plain attendee, each
    logged in with a client of their own; `client` stays signed out."""
    return seed_people(engine, app, client)
