"""The connection pool of the service's engine (db.make_engine): under load the connections
it opened are kept and used again, never opened and closed per request (on SQLite a new
connection parses the schema again, on PostgreSQL it is a login)."""

from __future__ import annotations

import threading

from sqlalchemy import Engine, event, text

from regdesk.db import POOL_SIZE, make_engine


def _busy_at_once(engine: Engine, count: int) -> None:
    """`count` threads each holding a connection at the same moment, then giving it back."""
    together = threading.Barrier(count)

    def hold() -> None:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            together.wait(timeout=30)

    threads = [threading.Thread(target=hold) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)


def test_connections_opened_under_load_are_kept_for_the_next(database_url: str) -> None:
    engine = make_engine(database_url)
    opened: list[object] = []
    event.listen(engine, "connect", lambda connection, record: opened.append(connection))
    try:
        _busy_at_once(engine, POOL_SIZE)
        assert len(opened) == POOL_SIZE
        _busy_at_once(engine, POOL_SIZE)  # the same load again: no connection opened
        assert len(opened) == POOL_SIZE
    finally:
        engine.dispose()
