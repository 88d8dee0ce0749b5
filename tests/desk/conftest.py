"""Desk tests: the admin area's people (tests/admin/support.py) stand at the desk too."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from tests.admin.support import People, seed_people
from tests.client import TestClient


@pytest.fixture
def people(engine: Engine, app: FastAPI, client: TestClient) -> People:
    """An administrator, two department leads and a plain attendee, each logged in with a
    client of their own; `client` stays signed out."""
    return seed_people(engine, app, client)
