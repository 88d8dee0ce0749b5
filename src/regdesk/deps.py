"""FastAPI dependencies as named types, so a route states in its signature what it needs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from regdesk.config import Settings
from regdesk.db import read_session, write_session
from regdesk.db.driver import LoopReads
from regdesk.pagination import Cursors

# Dependencies that only look something up are `async def`: FastAPI runs a plain `def` one in
# a worker thread, a hand-off that costs more than the lookup.


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _reading(request: Request) -> Iterator[Session]:
    with read_session(request.app.state.engine) as session:
        yield session


async def _write_turn(request: Request) -> AsyncIterator[None]:
    """A request's turn to write, on SQLite: taken on the event loop before the write session
    opens in a worker thread, and given back after it commits.

    SQLite has one writer at a time, and one that finds its lock held sleeps in the driver's
    busy handler, up to 100 ms a try, holding its worker thread; nothing wakes it when the lock
    comes free. When registration opened, every worker thread slept there while the lock sat
    free, and the requests that held it waited for a thread to commit in. A request waiting
    for its turn here holds no thread and is woken as soon as the one before it is done;
    writers outside requests, and other processes, still meet SQLite's lock. None on
    PostgreSQL, whose writers wait on the rows they share and nothing else."""
    turn: asyncio.Lock | None = getattr(request.app.state, "write_turn", None)
    if turn is None:
        yield
        return
    async with turn:
        yield


def _writing(
    request: Request, _turn: Annotated[None, Depends(_write_turn, scope="function")]
) -> Iterator[Session]:
    with write_session(request.app.state.engine) as session:
        yield session


def issuer(request: Request) -> str:
    """The OAuth issuer (RFC 8414, RFC 9207 `iss`): from the settings, never the request."""
    settings: Settings = request.app.state.settings
    return settings.issuer


async def _issuer(request: Request) -> str:
    return issuer(request)


async def _cursors(request: Request) -> Cursors:
    cursors: Cursors = request.app.state.cursors
    return cursors


async def _loop_reads(request: Request) -> LoopReads:
    reads: LoopReads = request.app.state.loop_reads
    return reads


SettingsDep = Annotated[Settings, Depends(_settings)]
# Function scope: the transaction ends when the route returns, before the response is sent.
# (The default scope would commit after the client already has its 200.)
ReadSession = Annotated[Session, Depends(_reading, scope="function")]
WriteSession = Annotated[Session, Depends(_writing, scope="function")]
CursorsDep = Annotated[Cursors, Depends(_cursors)]
# For `async def` routes: `with reads() as connection:` around their queries (db.LoopReads).
Reads = Annotated[LoopReads, Depends(_loop_reads)]
IssuerDep = Annotated[str, Depends(_issuer)]
