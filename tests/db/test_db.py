"""The data layer's own promises: timestamps, the shared secret key, SQLite's settings."""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import Engine, event, select, text

from regdesk.db import among, make_engine, read_session, refresh_statistics, write_session
from regdesk.db.instance import InstanceSetting, instance_secret_key
from regdesk.events.models import Event


def test_timestamps_come_back_aware_and_in_utc(engine: Engine) -> None:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    written = dt.datetime(2026, 7, 4, 20, 30, 0, 123000, tzinfo=plus_two)
    with write_session(engine) as session:
        session.add(Event(name="Con", is_current=True, created_at=written))
    with read_session(engine) as session:
        read = session.scalars(select(Event.created_at)).one()
    assert read.tzinfo is not None
    assert read == written
    assert read.utcoffset() == dt.timedelta(0)


def test_naive_timestamps_are_refused(engine: Engine) -> None:
    with pytest.raises(Exception, match="naive"), write_session(engine) as session:
        session.add(Event(name="Con", is_current=True, created_at=dt.datetime(2026, 1, 1)))


def test_secret_key_is_generated_once_and_shared_by_concurrent_processes(
    engine: Engine, database_url: str
) -> None:
    engines = [make_engine(database_url) for _ in range(4)]
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            keys = list(pool.map(lambda e: instance_secret_key(e, None), engines))
        assert len(set(keys)) == 1
        assert len(keys[0]) >= 43  # 48 random bytes, URL-safe base64
        assert instance_secret_key(engine, None) == keys[0]
        with read_session(engine) as session:
            assert session.scalars(select(InstanceSetting)).all()[0].value == keys[0]
    finally:
        for other in engines:
            other.dispose()


def test_a_configured_secret_key_wins_and_is_not_stored(engine: Engine) -> None:
    configured = "k" * 40
    assert instance_secret_key(engine, configured) == configured
    with read_session(engine) as session:
        assert session.scalars(select(InstanceSetting)).all() == []


def test_sqlite_file_runs_in_wal_mode_with_foreign_keys(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    engine.dispose()


def test_two_engines_opening_a_new_file_at_once_both_get_wal(tmp_path: Path) -> None:
    # Two servers starting on one new database: the loser of the race to switch the file to
    # WAL got "database is locked" at once, about one start in fifteen, with no lock wait.
    def first_connection(engine: Engine, barrier: threading.Barrier) -> str:
        barrier.wait()
        with engine.connect() as connection:
            return str(connection.execute(text("PRAGMA journal_mode")).scalar())

    with ThreadPoolExecutor(max_workers=2) as pool:
        for attempt in range(100):
            url = f"sqlite:///{tmp_path / f'{attempt}.sqlite3'}"
            engines = [make_engine(url), make_engine(url)]
            barrier = threading.Barrier(2)
            try:
                modes = list(pool.map(first_connection, engines, [barrier, barrier]))
            finally:
                for engine in engines:
                    engine.dispose()
            assert modes == ["wal", "wal"]


def test_a_failed_write_session_leaves_nothing(engine: Engine) -> None:
    def write_then_fail() -> None:
        with write_session(engine) as session:
            session.add(Event(name="Con", is_current=True))
            session.flush()
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_then_fail()
    with read_session(engine) as session:
        assert session.scalars(select(Event)).all() == []


@pytest.mark.parametrize(
    "ids",
    [
        [3, 4, 5, 6],  # without a gap: a range
        [6, 4, 5, 3, 4],  # the same, out of order and twice
        [3, 5, 6],  # a gap: the list itself
        [7],
        [2, 9],
    ],
)
def test_among_selects_exactly_the_ids_asked_for(engine: Engine, ids: list[int]) -> None:
    with write_session(engine) as session:
        for n in range(1, 11):
            session.add(Event(id=n, name=f"Con {n}", is_current=n == 1))
    with read_session(engine) as session:
        found = session.scalars(select(Event.id).where(among(session, Event.id, ids))).all()
    assert sorted(found) == sorted(set(ids))


def test_refreshing_statistics_on_sqlite_takes_the_write_lock_up_front(tmp_path: Path) -> None:
    """PRAGMA optimize may write (ANALYZE): begun as a reader, it failed at once when another
    writer committed between its read and its write, after an import had committed."""
    engine = make_engine(f"sqlite:///{tmp_path / 'statistics.sqlite3'}")
    begun: list[str] = []
    event.listen(
        engine,
        "before_cursor_execute",
        lambda _c, _cursor, statement, *_: (
            begun.append(statement) if statement.startswith("BEGIN") else None
        ),
    )
    try:
        refresh_statistics(engine)
    finally:
        engine.dispose()
    assert begun == ["BEGIN IMMEDIATE"]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_refreshing_statistics_on_postgresql_reads_our_tables_and_no_one_elses(
    engine: Engine,
) -> None:
    """A bare ANALYZE read every table of the database: another schema's (another deployment's
    on a shared server) as well as ours."""
    elsewhere = f"elsewhere_{uuid.uuid4().hex[:12]}"
    with write_session(engine) as session:
        session.add_all(Event(name=f"Con {n}", is_current=n == 0) for n in range(3))
    with engine.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {elsewhere}"))
        connection.execute(text(f"CREATE TABLE {elsewhere}.things AS SELECT 1 AS thing"))
        connection.commit()
    # pg_class.reltuples: the rows the last VACUUM or ANALYZE counted, -1 for none yet
    reltuples = text("SELECT reltuples FROM pg_class WHERE oid = to_regclass(:table)")
    try:
        refresh_statistics(engine)
        with engine.connect() as connection:
            ours = connection.execute(text("SELECT current_schema()")).scalar_one()
            counted = connection.execute(reltuples, {"table": f"{ours}.events"}).scalar_one()
            assert counted == 3
            theirs = connection.execute(reltuples, {"table": f"{elsewhere}.things"})
            assert theirs.scalar_one() == -1
    finally:
        with engine.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {elsewhere} CASCADE"))
            connection.commit()


def test_a_write_session_that_sends_nothing_says_nothing_to_the_database(engine: Engine) -> None:
    """No statement, hooks' included, and so no write lock on SQLite (BEGIN IMMEDIATE); one
    that sends a statement still has its hooks run (the documents' refresh asks its queue)."""
    sent: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def note(_c: object, _cur: object, statement: str, *_: object) -> None:
        sent.append(statement)

    with write_session(engine):
        pass
    assert sent == []

    with write_session(engine) as session:
        session.execute(select(Event.id))
    assert any("document_queue" in statement for statement in sent), sent
