"""The event loop's own connections (db.driver.LoopReads): on PostgreSQL a read is awaited on
one of the loop's asynchronous connections, so the loop answers other requests while the
server works, and a connection the server dropped is replaced; on both databases a read or a
write runs as before."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import threading
from collections.abc import Iterable
from typing import Any

import pytest
from sqlalchemy import Engine, event, text

import regdesk
from regdesk.db import driver, make_engine
from regdesk.db.driver import PG_CONNECTIONS, LoopReads, Query
from regdesk.documents import Page
from regdesk.registrations.records import RegistrationFilters, registration_page
from regdesk.users.records import UserFilters, search_users
from regdesk.volunteers.records import volunteer_page

ONE = Query("SELECT CAST(:n AS INTEGER) AS n")
WAIT_FOR_LOCK = Query("SELECT pg_advisory_xact_lock(:key)")
LOCK_KEY = 0x6C6F6F70  # "loop"


# The loop's asynchronous connections are PostgreSQL's: those tests run there alone.
on_postgresql = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


def test_a_read_and_a_write_on_the_loop(engine: Engine) -> None:
    async def run() -> tuple[object, bool]:
        reads, writes = LoopReads(engine), LoopReads(engine, writer=True)
        try:
            rows = await reads.all(ONE, n=7)
            written = await writes.try_write(
                Query(
                    "INSERT INTO roles (name, staff, created_at)"
                    " VALUES (:name, :staff, CURRENT_TIMESTAMP)"
                ),
                [{"name": "loop one", "staff": False}, {"name": "loop two", "staff": True}],
            )
            return rows, written
        finally:
            await reads.aclose()
            await writes.aclose()

    rows, written = asyncio.run(run())
    assert rows == [(7,)]
    assert written
    with engine.connect() as connection:
        names = connection.execute(text("SELECT name FROM roles WHERE name LIKE 'loop %'"))
        assert sorted(names.scalars()) == ["loop one", "loop two"]


TEXT = Query("SELECT 1, CAST('Zo\u00eb \u2603 \\\"' AS TEXT)")


def test_documents_come_as_their_utf8_bytes_and_other_reads_as_text(engine: Engine) -> None:
    """A page's stored JSON is sent as stored (LoopReads.documents); every other read on the
    same connections still gets text."""

    async def run() -> list[list[object]]:
        reads = LoopReads(engine)
        try:
            return [await reads.documents(TEXT), await reads.all(TEXT), await reads.documents(TEXT)]
        finally:
            await reads.aclose()

    stored = 'Zo\u00eb \u2603 \\"'
    assert asyncio.run(run()) == [
        [(1, stored.encode())],
        [(1, stored)],
        [(1, stored.encode())],
    ]


@on_postgresql
def test_while_one_read_waits_on_the_server_the_loop_reads_on_another_connection(
    engine: Engine,
) -> None:
    """A read held up by the server (here, waiting for a lock another session holds) leaves
    the loop free: another read is answered meanwhile, on another of its connections. Had the
    loop waited with the first, the second would never come before the lock is let go."""

    async def run() -> list[str]:
        reads = LoopReads(engine)
        done: list[str] = []
        holder = engine.connect()
        holder.execute(text("SELECT pg_advisory_lock(:key)"), {"key": LOCK_KEY})
        try:

            async def held() -> None:
                await reads.all(WAIT_FOR_LOCK, key=LOCK_KEY)
                done.append("held")

            waiting = asyncio.create_task(held())
            await asyncio.sleep(0.2)  # the first read is at the server, waiting
            await asyncio.wait_for(reads.all(ONE, n=1), timeout=10)
            done.append("other")
            holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
            await asyncio.wait_for(waiting, timeout=10)
            return done
        finally:
            holder.close()
            await reads.aclose()

    assert asyncio.run(run()) == ["other", "held"]


@on_postgresql
def test_reads_at_once_share_a_few_connections(engine: Engine) -> None:
    async def run() -> tuple[list[object], int]:
        reads = LoopReads(engine)
        try:
            rows = await asyncio.gather(*(reads.all(ONE, n=n) for n in range(40)))
            return rows, len(reads._idle)
        finally:
            await reads.aclose()

    rows, kept = asyncio.run(run())
    assert rows == [[(n,)] for n in range(40)]
    assert 1 <= kept <= PG_CONNECTIONS


@on_postgresql
def test_a_connection_the_server_dropped_is_replaced(engine: Engine) -> None:
    """As when PostgreSQL restarts: the loop's connections are gone; the next read is answered
    on a new one."""

    async def run() -> list[object]:
        reads = LoopReads(engine)
        try:
            await asyncio.gather(*(reads.all(ONE, n=n) for n in range(8)))
            pids = [held.connection.get_server_pid() for held in reads._idle]
            with engine.connect() as admin:
                for pid in pids:
                    admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            return await reads.all(ONE, n=5)
        finally:
            await reads.aclose()

    assert asyncio.run(run()) == [(5,)]


@on_postgresql
def test_a_read_cancelled_midway_leaves_no_connection_behind_in_its_middle(
    engine: Engine,
) -> None:
    """A client gone while its read waits at the server: that connection is closed, not given
    to the next read, which finds it as fresh as any."""

    async def run() -> tuple[list[object], int]:
        reads = LoopReads(engine)
        holder = engine.connect()
        holder.execute(text("SELECT pg_advisory_lock(:key)"), {"key": LOCK_KEY})
        try:
            waiting = asyncio.create_task(reads.all(WAIT_FOR_LOCK, key=LOCK_KEY))
            await asyncio.sleep(0.2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            kept = len(reads._idle)
            return await reads.all(ONE, n=3), kept
        finally:
            holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
            holder.close()
            await reads.aclose()

    rows, kept = asyncio.run(run())
    assert rows == [(3,)]
    assert kept == 0


BACKEND = Query("SELECT pg_backend_pid()")


@on_postgresql
@pytest.mark.parametrize("lifetime", [0.0, driver.PG_CONNECTION_LIFETIME])
def test_a_connection_serves_for_its_lifetime_then_a_new_one_plans_anew(
    engine: Engine, lifetime: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement planned once keeps its plan for the tables as they were (PostgreSQL plans it
    again after ANALYZE): a connection older than its lifetime is let go, and the next read
    runs on a new one, which plans for the tables as they are now."""
    monkeypatch.setattr(driver, "PG_CONNECTION_LIFETIME", lifetime)

    async def run() -> set[object]:
        reads = LoopReads(engine)
        try:
            return {(await reads.first(BACKEND) or ())[0] for _ in range(3)}
        finally:
            await reads.aclose()

    assert len(asyncio.run(run())) == (3 if lifetime == 0 else 1)


JIT = Query("SELECT current_setting('jit')")


@on_postgresql
def test_no_session_of_regdesk_compiles_its_plans(engine: Engine) -> None:
    """jit is off on every PostgreSQL session regdesk opens (db.POSTGRESQL_SETTINGS): the
    event loop's readers and writer, and the engine's pool. A page planned once for any values
    passes PostgreSQL's jit_above_cost on a large table, and compiling its plan cost each user
    search 9 ms with 1,000,000 users. This server compiles by default."""
    with engine.connect() as connection:
        assert connection.execute(text("SHOW jit")).scalar() == "off"
        connection.execute(text("RESET jit"))  # the server's own setting
        assert connection.execute(text("SHOW jit")).scalar() == "on"
        connection.invalidate()  # not back to the pool with the server's setting

    async def run() -> list[object]:
        reads, writes = LoopReads(engine), LoopReads(engine, writer=True)
        try:
            return [(await each.first(JIT) or ())[0] for each in (reads, writes)]
        finally:
            await reads.aclose()
            await writes.aclose()

    assert asyncio.run(run()) == ["off", "off"]


PREPARED = Query("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")


@on_postgresql
def test_pages_are_planned_once_and_a_filtered_page_as_the_server_chooses(
    engine: Engine,
) -> None:
    """Left to choose, PostgreSQL plans a page again at every run (its LIMIT is a value). The
    loop's reads are planned once, for any values: a page of users, of the current event's
    volunteers or registrations (events.models.in_current_event). A page of registrations by
    status or product is planned as PostgreSQL chooses, which is for the values of its first
    five runs at least (Query.plan_once). The server counts how each prepared statement was
    planned, per connection (one here: each read waits for the one before)."""
    by_product = RegistrationFilters(product_ids=(1,), status="paid")

    async def run() -> dict[str, tuple[int, int]]:
        reads = LoopReads(engine)
        try:
            for _ in range(10):
                await search_users(reads, UserFilters(), 0, 10)
                await volunteer_page(reads, 0, 10)
                await registration_page(reads, RegistrationFilters(), 0, 10)
                await registration_page(reads, by_product, 0, 10)
            assert len(reads._idle) == 1
            return {sql: (generic, custom) for sql, generic, custom in await reads.all(PREPARED)}
        finally:
            await reads.aclose()

    plans = asyncio.run(run())
    pages = {
        sql: counts
        for sql, counts in plans.items()
        if any(f"FROM {table}" in sql for table in ("users u", "volunteers v", "registrations r"))
    }
    assert [len(pages), sum("o.status = " in sql for sql in pages)] == [4, 1], plans
    for sql, (generic, custom) in pages.items():
        if "o.status = " in sql:
            assert custom >= 5, plans
        else:
            assert (generic > 0, custom) == (True, 0), plans


def test_the_loop_reads_from_its_own_thread_only(database_url: str) -> None:
    engine = make_engine(database_url)
    reads = LoopReads(engine)
    try:
        asyncio.run(reads.all(ONE, n=1))

        async def elsewhere() -> None:
            await reads.all(ONE, n=2)

        failed: list[BaseException] = []

        def other_thread() -> None:
            try:
                asyncio.run(elsewhere())
            except RuntimeError as error:
                failed.append(error)

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(timeout=30)
        assert len(failed) == 1
        assert "its event loop's thread only" in str(failed[0])
    finally:
        asyncio.run(reads.aclose())
        engine.dispose()


# --- each read compiled once --------------------------------------------------------------


def _product_reads() -> dict[str, Query]:
    """Every read the product declares as a module's Query or Page (its two reads), alone or
    in a dict, list or tuple of them, by where it was found; those written for PostgreSQL
    alone left out."""
    found: dict[str, Query] = {}
    for module in pkgutil.walk_packages(regdesk.__path__, "regdesk."):
        if ".migrations." in module.name or module.name.endswith("__main__"):
            continue
        for name, value in vars(importlib.import_module(module.name)).items():
            members: Iterable[tuple[object, object]] = [(None, value)]
            if isinstance(value, dict):
                members = value.items()
            elif isinstance(value, list | tuple):
                members = enumerate(value)
            for key, member in members:
                where = f"{module.name}.{name}" + ("" if key is None else f"[{key!r}]")
                reads = [(where, member)]
                if isinstance(member, Page):
                    reads = [(f"{where}.rows", member.rows), (f"{where}.joined", member.joined)]
                for place, query in reads:
                    if (
                        isinstance(query, Query)
                        and query.sql.upper().startswith(("SELECT", "WITH"))
                        and query.only in (None, "sqlite")
                    ):
                        found.setdefault(place, query)
    return found


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_every_read_on_the_loop_is_compiled_once(engine: Engine, database_url: str) -> None:
    """SQLite compiles a statement again at every run when a value bound to it could change its
    plan (a parameter compared with the column of a partial index's WHERE, such as
    `is_current = :current`): a record read or a page then costs a compilation per request. So
    each read, run a second time on the loop's connection, compiles nothing: SQLite calls its
    authorizer while compiling, and calls it no more."""
    compiled: list[object] = []
    counting = make_engine(database_url)

    @event.listens_for(counting, "connect")
    def authorize(connection: Any, _: Any) -> None:
        connection.set_authorizer(lambda *what: compiled.append(what) or 0)  # SQLITE_OK

    reads = LoopReads(counting)
    queries = _product_reads()
    assert len(queries) >= 20, sorted(queries)  # the walk finds them
    filters = [
        RegistrationFilters(),
        RegistrationFilters(user_ids=(1, 2), status="paid"),
        RegistrationFilters(product_ids=(1,)),
    ]

    async def twice() -> dict[str, list[int]]:
        counts: dict[str, list[int]] = {}
        try:
            for where, query in queries.items():
                for _ in range(2):
                    compiled.clear()
                    await reads.all(query, **dict.fromkeys(query.names, 1))
                    counts.setdefault(where, []).append(len(compiled))
            for shape in filters:
                for _ in range(2):
                    compiled.clear()
                    await registration_page(reads, shape, 0, 10)
                    counts.setdefault(f"registration page {shape}", []).append(len(compiled))
        finally:
            await reads.aclose()
        return counts

    try:
        counts = asyncio.run(twice())
    finally:
        counting.dispose()
    assert all(first > 0 for first, _ in counts.values())  # the authorizer does count
    assert {where: again for where, (_, again) in counts.items() if again} == {}
