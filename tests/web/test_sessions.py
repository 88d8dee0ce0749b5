"""Signed-in sessions (web/sessions.py, and the cookie web/visitor.py sets): the store on its
own (what a cookie is worth, tidying up dead sessions), then through the login form (what the
cookie looks like, the id kept only as a hash, the idle and absolute timeouts). Attacks on
sessions (fixation, a cookie kept after logout, the ids' randomness) are
tests/security/test_sessions.py's."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select, update

from regdesk.db import write_session
from regdesk.web.models import WebSession
from regdesk.web.sessions import end_session, find_session, purge_sessions, start_session
from tests.client import TestClient
from tests.helpers import database_text
from tests.web.support import log_in, make_user, session_cookie


def test_a_session_is_found_by_its_id_only(engine: Engine) -> None:
    user_id = make_user(engine, password=None)
    with write_session(engine) as db:
        live = start_session(db, user_id, ip_address="192.0.2.1", user_agent="x" * 500)
    with write_session(engine) as db:
        assert find_session(db, live.session_id) == live
        for wrong in (None, "", live.session_id[:-1], live.session_id + "x", "a" * 101):
            assert find_session(db, wrong) is None
        row = db.scalars(select(WebSession)).one()
        assert row.ip_address == "192.0.2.1"
        assert row.user_agent == "x" * 300
    with write_session(engine) as db:
        assert end_session(db, live.session_id) == user_id
        assert end_session(db, live.session_id) is None
        assert find_session(db, live.session_id) is None


def test_purge_deletes_dead_sessions_and_keeps_live_ones(engine: Engine) -> None:
    user_id = make_user(engine, password=None)
    with write_session(engine) as db:
        ids = [start_session(db, user_id, ip_address=None, user_agent=None) for _ in range(3)]
    now = dt.datetime.now(dt.UTC)
    with engine.begin() as connection:
        connection.execute(
            update(WebSession)
            .where(WebSession.id == 1)
            .values(last_seen_at=now - dt.timedelta(hours=3))
        )
        connection.execute(update(WebSession).where(WebSession.id == 2).values(expires_at=now))
    with write_session(engine) as db:
        assert purge_sessions(db) == 2
    with write_session(engine) as db:
        assert db.scalar(select(func.count()).select_from(WebSession)) == 1
        assert find_session(db, ids[2].session_id) is not None


def test_a_new_login_tidies_the_users_dead_sessions(engine: Engine) -> None:
    user_id = make_user(engine, password=None)
    with write_session(engine) as db:
        start_session(db, user_id, ip_address=None, user_agent=None)
    with engine.begin() as connection:
        connection.execute(update(WebSession).values(expires_at=dt.datetime.now(dt.UTC)))
    with write_session(engine) as db:
        start_session(db, user_id, ip_address=None, user_agent=None)
    with write_session(engine) as db:
        assert db.scalar(select(func.count()).select_from(WebSession)) == 1


# --- through the login form ------------------------------------------------------------------


def test_the_session_cookie_is_httponly_lax_and_secure_over_https(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine)
    response = log_in(client)
    cookie = response.headers["set-cookie"]
    attributes = [part.strip().lower() for part in cookie.split(";")]
    assert attributes[0].startswith("regdesk_session=")
    assert "httponly" in attributes
    assert "samesite=lax" in attributes
    assert "path=/" in attributes
    assert "secure" in attributes


def test_the_session_cookie_is_not_secure_over_plain_http(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    # Plain HTTP is answered on loopback only (regdesk.transport). `client` ran the lifespan.
    plain = TestClient(app, base_url="http://testserver", client=("127.0.0.1", 50000))
    cookie = log_in(plain).headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "secure" not in cookie


def test_the_session_is_stored_only_as_a_hash(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    log_in(client)
    cookie = session_cookie(client)
    assert cookie
    assert cookie not in database_text(engine)
    with engine.connect() as connection:
        stored = connection.scalars(select(WebSession.session_hash)).all()
    assert stored == [hashlib.sha256(cookie.encode()).hexdigest()]


@pytest.mark.parametrize(
    ("column", "age"),
    [
        ("last_seen_at", dt.timedelta(hours=2, seconds=1)),  # idle too long
        ("created_at", dt.timedelta(hours=12, seconds=1)),  # alive too long, however busy
    ],
    ids=["idle", "absolute"],
)
def test_a_session_dies_when_idle_or_old(
    client: TestClient, engine: Engine, column: str, age: dt.timedelta
) -> None:
    make_user(engine)
    log_in(client)
    assert client.get("/account", follow_redirects=False).status_code == 200
    now = dt.datetime.now(dt.UTC)
    values = {"last_seen_at": now - age} if column == "last_seen_at" else {"expires_at": now}
    with engine.begin() as connection:
        connection.execute(update(WebSession).values(**values))
    assert client.get("/account", follow_redirects=False).status_code == 303


def test_a_visit_keeps_an_idle_session_alive(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    log_in(client)
    earlier = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=90)
    with engine.begin() as connection:
        connection.execute(update(WebSession).values(last_seen_at=earlier))
    assert client.get("/account", follow_redirects=False).status_code == 200
    with engine.connect() as connection:
        seen = connection.scalars(select(WebSession.last_seen_at)).one()
    assert seen.replace(tzinfo=dt.UTC) > earlier + dt.timedelta(minutes=89)
