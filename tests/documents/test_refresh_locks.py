"""PostgreSQL: refreshes of one record take turns, refreshes of different records do not wait
for each other, and a refresh of many records takes the one lock for all (documents.refresh).
The rendering these turns keep right is tested in test_refresh.py (two writers of one record
both show in the next read)."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import Engine, text, update
from sqlalchemy.orm import Session

from regdesk.db import write_session
from regdesk.documents import refresh
from regdesk.users.models import User
from regdesk.users.records import DOCUMENT as USER_DOCUMENT
from tests.documents.test_refresh import Background, postgresql_only, wait_until_blocked

pytestmark = postgresql_only


def make_users(engine: Engine, count: int) -> list[int]:
    with write_session(engine) as session:
        users = [
            User(username=f"u{n}", email=f"u{n}@example.org", first_name="U", last_name=str(n))
            for n in range(count)
        ]
        session.add_all(users)
        session.flush()
        return [user.id for user in users]


def rename(engine: Engine, user_id: int, name: str) -> None:
    with write_session(engine) as session:
        session.execute(update(User).where(User.id == user_id).values(first_name=name))


def backend(session: Session) -> int:
    return int(session.scalar(text("SELECT pg_backend_pid()")) or 0)


def stored_name(engine: Engine, user_id: int) -> str:
    table = USER_DOCUMENT.table
    with engine.connect() as connection:
        body = connection.execute(
            text(f"SELECT body FROM {table.name} WHERE user_id = :id"), {"id": user_id}
        ).scalar_one()
    return str(body)


def test_a_write_of_another_record_commits_while_a_refresh_holds_its_record(
    engine: Engine,
) -> None:
    ada, bo = make_users(engine, 2)
    with write_session(engine) as first:
        first.execute(update(User).where(User.id == ada).values(first_name="Ada"))
        first.flush()
        refresh.refresh(first)  # renders Ada's record and holds its turn until the commit
        other = Background(lambda: rename(engine, bo, "Bo"))
        other.join()  # finished with the first transaction still open
    assert '"firstName":"Bo"' in stored_name(engine, bo)
    assert '"firstName":"Ada"' in stored_name(engine, ada)


def test_refreshes_of_one_record_take_turns(engine: Engine) -> None:
    (ada,) = make_users(engine, 1)
    pids: list[int] = []

    def second() -> None:
        with write_session(engine) as session:
            pids.append(backend(session))
            refresh._take_turn(session, {"user": {ada}})

    with write_session(engine) as first:
        refresh._take_turn(first, {"user": {ada}})
        waiting = Background(second)
        while not pids:
            time.sleep(0.001)
        wait_until_blocked(engine, pids[0])
    waiting.join()


@pytest.mark.parametrize("count", [refresh.RECORD_LOCKS_MAX + 1, 20_000])
def test_a_refresh_of_many_records_holds_every_record(engine: Engine, count: int) -> None:
    """Past RECORD_LOCKS_MAX records a refresh takes the lock for all, exclusively: a refresh
    of a record outside its set waits too, and 20,000 records fit (PostgreSQL's lock table
    would not hold a lock for each)."""
    pids: list[int] = []

    def second() -> None:
        with write_session(engine) as session:
            pids.append(backend(session))
            refresh._take_turn(session, {"user": {count + 1}})

    with write_session(engine) as first:
        refresh._take_turn(first, {"user": set(range(1, count + 1))})
        waiting = Background(second)
        while not pids:
            time.sleep(0.001)
        wait_until_blocked(engine, pids[0])
    waiting.join()
