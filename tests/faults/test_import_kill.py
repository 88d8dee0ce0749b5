"""kill -9 of `regdesk import` in the middle of a large import: the import is all or nothing
(operator.md), so afterwards the database is as it was, and consistent; the same import run to
the end is then wholly there.

"In the middle" is observed, not timed: on SQLite the write-ahead log growing (the import's
transaction spilling its pages), on PostgreSQL the import's backend holding row locks on the
table being written. The importer is then stopped (SIGSTOP) while another connection checks
that nothing is committed yet, and killed (SIGKILL): so the kill provably lands before the
commit, never after it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, text
from sqlalchemy.engine import make_url

from regdesk.audit.models import AuditEvent
from regdesk.db import make_engine
from regdesk.users.models import User
from tests import forkserver
from tests.conftest import scratch_database_url
from tests.faults.support import BACKENDS, FaultLedger, wait_until
from tests.transfer.support import import_, table_rows

USERS, VOLUNTEERS = 10_000, 5_000  # about 5 s of import on SQLite, 2 of them writing
PREFIX = "crowd"


def crowd(users: int, volunteers: int, prefix: str = PREFIX) -> dict[str, Any]:
    """An import document of `users` people, `volunteers` of whom volunteer."""
    address = {
        "addressLine1": "1 Main St",
        "addressLine2": None,
        "addressCity": "Reno",
        "addressState": "NV",
        "addressZipcode": "89501",
        "addressCountry": "US",
    }
    return {
        "roles": [{"name": f"{prefix} staff", "staff": True}],
        "departments": [
            {"name": f"{prefix} {n}", "email": f"{prefix}{n}@example.org", "leads": []}
            for n in range(5)
        ],
        "users": [
            {
                "username": f"{prefix}-{n}",
                "email": f"{prefix}-{n}@example.org",
                "firstName": f"First{n}",
                "lastName": f"Last{n}",
                "phone": f"+1555{n:07d}",
                "address": address,
                "roles": [f"{prefix} staff"] if n % 10 == 0 else [],
            }
            for n in range(users)
        ],
        "volunteers": [
            {
                "user": f"{prefix}-{n}",
                "contactMethods": [{"name": "Discord", "isPrimary": True, "value": f"v{n}"}],
                "departments": [{"name": f"{prefix} {n % 5}", "states": ["interest"]}],
                "options": [{"name": "Shirt size", "type": "select", "value": "L"}],
            }
            for n in range(volunteers)
        ],
    }


@dataclass
class Database:
    backend: str
    url: str
    directory: Path
    _kept: Engine | None = None

    @contextmanager
    def engine(self) -> Iterator[Engine]:
        """An engine on it. SQLite's is closed after use, so that no connection keeps the
        write-ahead log open between imports; PostgreSQL's is kept (it is polled)."""
        if self.backend == "postgresql":
            if self._kept is None:
                self._kept = make_engine(self.url)
            yield self._kept
            return
        engine = make_engine(self.url)
        try:
            yield engine
        finally:
            engine.dispose()

    def close(self) -> None:
        if self._kept is not None:
            self._kept.dispose()


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A migrated database holding a few people already (the import must leave them be)."""
    with scratch_database_url(request.param, tmp_path, migrated=True) as url:
        engine = make_engine(url)
        import_(engine, crowd(40, 20, prefix="earlier"))
        engine.dispose()  # SQLite: the last connection closed checkpoints and drops the log
        database = Database(request.param, url, tmp_path)
        yield database
        database.close()


class Import:
    """`regdesk import --json FILE` as an organizer runs it, in a process of its own."""

    def __init__(self, database: Database, document: Path) -> None:
        self.application = f"regdesk-fault-{uuid.uuid4().hex[:12]}"
        url = database.url
        if database.backend == "postgresql":  # to find its backend in pg_stat_activity
            url += f"{'&' if '?' in url else '?'}application_name={self.application}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
        env["REGDESK_DATABASE_URL"] = url
        regdesk = Path(sys.executable).with_name("regdesk")
        # Its output to files: a pipe nobody reads until the end would hold it when full.
        self.output = database.directory / f"{self.application}.out"
        self.errors = database.directory / f"{self.application}.err"
        with open(self.output, "wb") as out, open(self.errors, "wb") as err:
            self.process = forkserver.popen(
                [str(regdesk), "import", "--json", str(document)], env=env, stdout=out, stderr=err
            )

    def running(self) -> bool:
        if self.process.poll() is None:
            return True
        raise AssertionError(
            f"the import ended (status {self.process.returncode}) before the kill point: it "
            "wrote less in one transaction than a whole import does (committed in parts?), "
            f"or the document is too small\n{self.errors.read_text()[-2000:]}"
        )

    def finish(self) -> dict[str, Any]:
        self.process.wait(timeout=300)
        assert self.process.returncode == 0, self.errors.read_text()[-2000:]
        result: dict[str, Any] = json.loads(self.output.read_text())
        return result


# --- seeing the write in progress -----------------------------------------------------------


def wal_size(database: Database) -> int:
    path = Path(f"{make_url(database.url).database}-wal")
    return path.stat().st_size if path.exists() else 0


def sqlite_kill_points(document: Path) -> dict[str, Callable[[Database, Import], str | None]]:
    """The import's one transaction spills its pages to the write-ahead log as it writes them,
    about 2.3 times the document's size in all: the log's size says how far it is. (An import
    committed in parts would let the log be reused from its start, and never reach the second
    point: the test fails on that too.)"""

    def log_at_least(share: float) -> Callable[[Database, Import], str | None]:
        least = max(256 * 1024, int(document.stat().st_size * share))

        def reached(database: Database, _: Import) -> str | None:
            log = wal_size(database)
            return f"write-ahead log at {log:,} bytes" if log >= least else None

        return reached

    return {"write begun": log_at_least(0), "write well along": log_at_least(1.5)}


WRITE_LOCKS = text("""
    SELECT c.relname FROM pg_stat_activity a
    JOIN pg_locks l ON l.pid = a.pid
    JOIN pg_class c ON c.oid = l.relation
    WHERE a.application_name = :application AND l.mode = 'RowExclusiveLock' AND l.granted
""")


def postgres_kill_points() -> dict[str, Callable[[Database, Import], str | None]]:
    """The import writes users, then departments, then volunteers, then renders documents."""

    def writing(table: str) -> Callable[[Database, Import], str | None]:
        def reached(database: Database, run: Import) -> str | None:
            with database.engine() as engine, engine.connect() as connection:
                tables = set(
                    connection.execute(WRITE_LOCKS, {"application": run.application}).scalars()
                )
            return f"backend holds RowExclusiveLock on {table}" if table in tables else None

        return reached

    return {"writing users": writing("users"), "writing volunteers": writing("volunteers")}


def imported_users(engine: Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(
            select(func.count()).select_from(User).where(User.username.like(f"{PREFIX}-%"))
        ).scalar_one()


IMPORT_BACKEND = text("""
    SELECT state, query, xact_start IS NOT NULL FROM pg_stat_activity
    WHERE application_name = :application
""")


def assert_not_committed(database: Database, run: Import) -> None:
    """With the importer stopped: its transaction is open and none of it is visible."""
    with database.engine() as engine:
        visible = imported_users(engine)
        assert visible == 0, f"{visible} imported users visible while the import still runs"
        if database.backend == "sqlite":
            return
        with engine.connect() as connection:
            backends = connection.execute(IMPORT_BACKEND, {"application": run.application}).all()
    assert len(backends) == 1, backends
    state, query, in_transaction = backends[0]
    assert in_transaction, backends
    assert state in ("active", "idle in transaction"), backends
    assert not query.lstrip().upper().startswith("COMMIT"), backends


def backend_gone(database: Database, run: Import) -> bool:
    if database.backend != "postgresql":
        return True
    with database.engine() as engine, engine.connect() as connection:
        return not connection.execute(IMPORT_BACKEND, {"application": run.application}).all()


SCHEMA_LOCKS = text("""
    SELECT count(*) FROM pg_locks l
    JOIN pg_class c ON c.oid = l.relation
    JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
      AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
""")


def assert_consistent(database: Database) -> None:
    with database.engine() as engine, engine.connect() as connection:
        if database.backend == "sqlite":
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            assert connection.exec_driver_sql("PRAGMA foreign_key_check").all() == []
        else:
            # No client holds a lock on the schema's tables any more (the killed one is gone):
            # a backend whose client went away may take a moment to notice and let go.
            wait_until(
                lambda: connection.execute(SCHEMA_LOCKS).scalar_one() == 0,
                10,
                "the schema's locks to be let go",
                every=0.1,
            )


def rows(database: Database) -> dict[str, list[str]]:
    with database.engine() as engine:
        return table_rows(engine)


def counts(database: Database) -> dict[str, int]:
    return {table: len(values) for table, values in rows(database).items()}


def kill_in_the_middle(
    database: Database,
    document: Path,
    name: str,
    reached: Callable[[Database, Import], str | None],
) -> str:
    """Run the import until `reached` says so, stop it, check, kill it; what was seen."""
    run = Import(database, document)
    try:
        seen = wait_until(
            lambda: run.running() and reached(database, run), 180, f"the import to reach {name!r}"
        )
        run.process.send_signal(signal.SIGSTOP)
        assert_not_committed(database, run)
    finally:
        run.process.send_signal(signal.SIGKILL)
        run.process.wait(timeout=30)
    assert run.process.returncode == -signal.SIGKILL
    wait_until(lambda: backend_gone(database, run), 60, "the killed import's backend to end")
    return str(seen)


# --- the test ---------------------------------------------------------------------------------


def test_a_killed_import_leaves_nothing_and_a_finished_one_everything(
    database: Database, request: pytest.FixtureRequest
) -> None:
    ledger = FaultLedger(request.node.nodeid, database.backend)
    document = database.directory / "crowd.json"
    document.write_text(json.dumps(crowd(USERS, VOLUNTEERS)))
    before = rows(database)
    kill_points = (
        sqlite_kill_points(document) if database.backend == "sqlite" else postgres_kill_points()
    )

    for name, reached in kill_points.items():
        if database.backend == "sqlite":
            assert wal_size(database) == 0, "the log of an earlier run is still there"
        seen = kill_in_the_middle(database, document, name, reached)
        ledger.inject("kill -9 regdesk import", point=name, seen=seen)

        # The database is consistent and as it was: not one row of the import in any table.
        assert_consistent(database)
        assert rows(database) == before, f"killed at {name!r} ({seen}): rows were left"

    # The control: the same import, left to finish, is wholly there.
    before_counts = counts(database)
    result = Import(database, document).finish()
    assert_consistent(database)
    after = counts(database)
    added = {t: after[t] - before_counts[t] for t in after if after[t] != before_counts[t]}
    for table, expected in {
        "users": USERS,
        "roles": 1,
        "departments": 5,
        "volunteers": VOLUNTEERS,
        "volunteer_contact_methods": VOLUNTEERS,
        "audit_events": 1,
    }.items():
        assert added.get(table) == expected, (table, added)
    with database.engine() as engine, engine.connect() as connection:
        stored = dict(
            connection.execute(
                select(User.username, User.id).where(User.username.like(f"{PREFIX}-%"))
            ).all()
        )
        events = connection.execute(
            select(func.count()).select_from(AuditEvent).where(AuditEvent.action == "data.imported")
        ).scalar_one()
    assert {name: str(i) for name, i in stored.items()} == result["users"]
    assert len(stored) == USERS
    assert events == 2  # the earlier import's and this one: none from the killed runs
