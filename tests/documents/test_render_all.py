"""Rendering every record of a kind at once (documents.refresh.render_all), after a bulk load
that wrote its rows with the triggers off (the demo): each record's document stored, as a
refresh with all of them queued would store it, and the refresh's hooks told of them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, func, literal, select

from regdesk.db import write_session
from regdesk.documents import refresh, triggers
from regdesk.documents.models import DocumentQueue
from regdesk.users.models import User
from regdesk.users.records import DOCUMENT as USER_DOCUMENT
from regdesk.users.records import user_documents

NAMES = ("fox", "otter", "heron", "lynx", "wren")


def test_every_record_is_rendered_once_and_the_hooks_are_told(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[dict[str, set[int]]] = []

    def hook(_session: Any, keys: dict[str, set[int]]) -> None:
        told.append({kind: set(ids) for kind, ids in keys.items() if ids})

    monkeypatch.setattr(refresh, "_AFTER", {hook: literal(False)})
    monkeypatch.setattr(refresh, "BATCH", 2)  # three batches of five users
    with write_session(engine) as session:
        connection = session.connection()
        dialect = connection.dialect.name
        triggers.uninstall(connection.exec_driver_sql, dialect, [USER_DOCUMENT], drop_tables=False)
        users = [
            User(username=name, email=f"{name}@example.org", first_name=name, last_name="Demo")
            for name in NAMES
        ]
        session.add_all(users)
        session.flush()
        assert session.scalar(select(func.count()).select_from(DocumentQueue)) == 0
        refresh.render_all(session, [USER_DOCUMENT])
        triggers.install(connection.exec_driver_sql, dialect, [USER_DOCUMENT], create_tables=False)
        ids = {user.id for user in users}
    table = USER_DOCUMENT.table
    with engine.connect() as connection:
        stored = dict(connection.execute(select(table.c.user_id, table.c.body)).all())
        assert stored == user_documents(connection, ids)
        assert connection.scalar(select(func.count()).select_from(DocumentQueue)) == 0
    assert told == [{"user": ids}]
