"""The event loop's own connections (db.driver.LoopReads): on PostgreSQL a read is awaited on
one of the loop's asynchronous connections, so the loop answers other requests while the
server works, and a connection the server dropped is replaced; on both databases a read or a
write runs as before."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import Engine, text

from regdesk.db import make_engine
from regdesk.db.driver import PG_CONNECTIONS, LoopReads, Query

ONE = Query("SELECT :n AS n")
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
            pids = [connection.info.backend_pid for connection in reads._idle]
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
