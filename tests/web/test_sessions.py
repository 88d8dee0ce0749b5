"""The session store on its own: what a cookie is worth, and tidying up dead sessions."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Engine, func, select, update

from regdesk.db import write_session
from regdesk.web.models import WebSession
from regdesk.web.sessions import end_session, find_session, purge_sessions, start_session
from tests.web.support import make_user


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
