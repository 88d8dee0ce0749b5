"""The security suite attacks one running service per module and database, not one per test.

`database_url`, `engine`, `app` and `client` mean here what they mean in tests/conftest.py
(a migrated database on SQLite, and on PostgreSQL when REGDESK_TEST_POSTGRES_URL is set; the
app in-process, as an HTTPS client sees it), built with its helpers, but once per module: a
fresh database and a started app cost more than most attacks, and this suite tries hundreds.
So every test makes the records it attacks (its own user, application, code) and judges only
them, or compares the whole database before and after (support.table_rows). Each test starts
as a new browser: no cookies.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.app import create_app
from regdesk.config import Settings, load_settings
from regdesk.db import make_engine
from tests.client import TestClient
from tests.conftest import BACKENDS, PUBLIC_URL, scratch_database_url

# Rate limits are on, as in production, but high: hundreds of attacks from one address in a
# minute are this suite's business, not the limits' (tests/test_ratelimit.py has those).
GENEROUS = "100000/minute"


def generous_settings(database_url: str, **settings: object) -> Settings:
    """The settings of an app on `database_url` whose rate limits are all GENEROUS; `settings`
    set anything else, a limit of its own included."""
    limits = dict.fromkeys(("api_rate_limit", "token_rate_limit", "login_rate_limit"), GENEROUS)
    return load_settings(database_url=database_url, **{**limits, **settings})


@pytest.fixture(
    scope="module",
    params=BACKENDS,
)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with scratch_database_url(request.param, tmp_path_factory.mktemp("db"), migrated=True) as url:
        yield url


@pytest.fixture(scope="module")
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def app(engine: Engine, database_url: str) -> FastAPI:
    return create_app(generous_settings(database_url, public_url=PUBLIC_URL))


@pytest.fixture(scope="module")
def client(app: FastAPI) -> Iterator[TestClient]:
    """Server errors come back as the 500 a client would see (tests assert there is none)."""
    with TestClient(
        app, base_url="https://testserver", raise_server_exceptions=False
    ) as test_client:
        yield test_client


@pytest.fixture(autouse=True)
def new_browser(client: TestClient) -> None:
    client.cookies.clear()
