"""A served app sets the heap its start made aside from the garbage collector (app.py,
`settle_heap`): a full collection then walks only what requests made since, not the 200,000
objects of the modules, routes and models, which held the event loop up for 90 ms each time and
were the token grant's p99 on SQLite."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner
from sqlalchemy import Engine

from regdesk.app import create_app
from regdesk.cli import main
from regdesk.config import load_settings
from tests.client import TestClient
from tests.conftest import PUBLIC_URL


def test_a_served_app_freezes_its_start_and_unfreezes_when_it_stops(
    engine: Engine, database_url: str
) -> None:
    assert gc.get_freeze_count() == 0
    settings = load_settings(database_url=database_url, public_url=PUBLIC_URL)
    with TestClient(create_app(settings, serving=True), base_url=PUBLIC_URL) as client:
        frozen = gc.get_freeze_count()
        assert client.get("/healthz").status_code == 200
    assert frozen > 100_000  # this test process's modules, the app's among them
    assert gc.get_freeze_count() == 0


def test_an_app_made_for_a_test_leaves_the_collector_alone(
    engine: Engine, database_url: str
) -> None:
    settings = load_settings(database_url=database_url, public_url=PUBLIC_URL)
    with TestClient(create_app(settings), base_url=PUBLIC_URL):
        assert gc.get_freeze_count() == 0


def test_serve_runs_the_served_app(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `regdesk serve` hands uvicorn: the factory of the served app, in every worker."""
    ran: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: ran.append((app, options)))
    result = CliRunner().invoke(
        main,
        ["serve", "--port", "8123"],
        # serve names its options in the environment for its workers: put back afterwards.
        env={"REGDESK_DATABASE_URL": database_url, "REGDESK_PUBLIC_URL": None},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    [(app, options)] = ran
    assert (app, options["factory"]) == ("regdesk.app:serving_app", True)
