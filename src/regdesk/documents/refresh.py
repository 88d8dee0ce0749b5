"""Rendering queued record documents again, before a write commits.

Rendering is the one Python path that builds a record from its tables (each declaration's
`render`); a document is that path's output, kept. `refresh` runs in every write transaction
just before it commits (hooked into `db.write_session` by `install`), so the queue is empty
again when the change becomes visible. On PostgreSQL, refreshes of one record take turns under
a transaction-scoped advisory lock on that record and, holding it, read with a fresh snapshot
(READ COMMITTED): of two writers touching the same record, the later one renders it with both
changes. Writers of different records do not wait for each other (they did, under one lock for
all, which made every write of a busy desk wait for the commits before it). The record locks
are taken in one order (kind, then id), so two refreshes never wait for each other in a
circle; and under a shared hold of one lock for all, which a refresh of many records (a
department renamed: every volunteer in it) takes alone, exclusively, instead of a lock per
record (PostgreSQL's lock table is sized for a few dozen per transaction).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, delete, exists, select, text
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import ReturningDelete

from regdesk.db import among, before_write_commits, is_sqlite
from regdesk.db.bulk import bulk_insert
from regdesk.documents.declarations import Document
from regdesk.documents.models import DocumentQueue

# Any fixed number, distinct from the migration lock's (migrations/runner.py).
REFRESH_LOCK_ID = 0x7265_6764_646F_63  # "regddoc"
# More records than this in one refresh: the lock for all, alone, instead of one per record.
RECORD_LOCKS_MAX = 64
BATCH = 2000

_DECLARED: dict[str, Document] = {}
# Features that act on the records a write changed (webhooks), registered at start: each is
# called at the end of a refresh with the ids it rendered again, by kind, when there are some
# or when its own `pending` condition holds (rows of its own that its triggers wrote). Every
# condition is asked in the one statement that asks whether documents are queued: a write
# that changed none of these costs that one read, whatever is registered.
Refreshed = Callable[[Session, dict[str, set[int]]], None]
_AFTER: dict[Refreshed, ColumnElement[bool]] = {}


@dataclass(frozen=True)
class _Asked:
    """A refresh's statements for what is installed, made once: built again at every write,
    they were two fifths of the time of a write that queued nothing (a session opened and
    committed: 0.47 ms, now 0.29, on SQLite in-process on these machines)."""

    hooks: list[tuple[Refreshed, ColumnElement[bool]]]
    waiting: Select[*tuple[Any, ...]]  # is any document queued, and each hook's `pending`
    take: ReturningDelete[str, int]  # the queued rows, off the queue


@functools.cache
def _asked() -> _Asked:
    """For what is installed now: a change to it clears this cache."""
    queued = DocumentQueue.kind.in_(list(_DECLARED))
    hooks = list(_AFTER.items())
    return _Asked(
        hooks,
        select(exists().where(queued), *(condition for _, condition in hooks)),
        delete(DocumentQueue).where(queued).returning(DocumentQueue.kind, DocumentQueue.key),
    )


def install(documents: Iterable[Document]) -> None:
    """Keep these documents in step from now on: the app and the command line call this at
    start with every declaration (regdesk.models.DOCUMENTS). Again is harmless."""
    for document in documents:
        if _DECLARED.get(document.kind) is not document:
            _DECLARED[document.kind] = document
            _asked.cache_clear()
    before_write_commits(refresh)


def after_refresh(hook: Refreshed, pending: ColumnElement[bool]) -> None:
    """Run `hook(session, {kind: ids})` at the end of a refresh, in its transaction, with the
    records it rendered again (those the transaction changed), when there are some or when
    `pending` (an EXISTS of the hook's own rows) holds. Again is harmless."""
    if _AFTER.get(hook) is not pending:
        _AFTER[hook] = pending
        _asked.cache_clear()


def refresh(session: Session) -> None:
    """Render every queued document again, in the session's transaction: each record once,
    however many of its rows changed. A record still queued after a commit (changed by SQL that
    ran beside this refresh) is rendered by its readers until the next refresh."""
    asked = _asked()
    keys: dict[str, set[int]] = {kind: set() for kind in _DECLARED}
    any_queued, *pending = session.execute(asked.waiting).one()
    if any_queued:
        # Taken off the queue in one statement (its keys say which records to lock) and
        # rendered after the locks, in the view that follows them: a row someone else commits
        # meanwhile (SQL outside regdesk) stays queued, never dropped unrendered.
        for kind, key in session.execute(asked.take):
            keys[kind].add(key)
        _take_turn(session, keys)
        _render(session, _DECLARED.values(), keys)
    _tell(session, asked.hooks, pending, keys)


def render_all(session: Session, documents: Iterable[Document]) -> None:
    """Render every record of these kinds, in the session's transaction, as a refresh with all
    of them queued would (hooks included), without a queue row written and deleted for each:
    after a bulk load that wrote its rows with the triggers off (the demo: 180,000 queue rows
    for 100,000 users, a twentieth of its time)."""
    hooks = list(_AFTER.items())
    pending = list(session.execute(select(*(c for _, c in hooks))).one()) if hooks else []
    documents = list(documents)
    keys: dict[str, set[int]] = {kind: set() for kind in _DECLARED}
    for document in documents:
        ids = session.scalars(text(f"SELECT id FROM {document.records}")).all()  # noqa: S608
        keys[document.kind] = set(ids)
    _take_turn(session, keys)
    _render(session, documents, keys)
    _tell(session, hooks, pending, keys)


def _take_turn(session: Session, keys: dict[str, set[int]]) -> None:
    """PostgreSQL: wait for the refreshes of these records (the module's docstring)."""
    if is_sqlite(session):
        return  # one writer at a time already
    count = sum(map(len, keys.values()))
    if count > RECORD_LOCKS_MAX:
        session.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": REFRESH_LOCK_ID})
        return
    session.execute(text("SELECT pg_advisory_xact_lock_shared(:id)"), {"id": REFRESH_LOCK_ID})
    ordered = sorted((record_lock_class(kind), key) for kind, ids in keys.items() for key in ids)
    session.execute(
        text(
            "SELECT count(pg_advisory_xact_lock(class, key))"  # in the arrays' order
            " FROM unnest(CAST(:classes AS integer[]), CAST(:keys AS integer[])) AS t(class, key)"
        ),
        {"classes": [c for c, _ in ordered], "keys": [k for _, k in ordered]},
    )


def record_lock_class(kind: str) -> int:
    """The first half of a record's advisory lock: a number of its kind's, the same in every
    process and release."""
    return zlib.crc32(f"regdesk document {kind}".encode()) & 0x7FFF_FFFF


def _render(session: Session, documents: Iterable[Document], keys: dict[str, set[int]]) -> None:
    for document in documents:
        ordered = sorted(keys[document.kind])
        for start in range(0, len(ordered), BATCH):
            chunk = ordered[start : start + BATCH]
            _store(session, document.table, document.key, document.render(session, chunk))


def _tell(
    session: Session,
    hooks: list[tuple[Refreshed, ColumnElement[bool]]],
    pending: list[bool],
    keys: dict[str, set[int]],
) -> None:
    """Call the hooks: each when records were rendered, or its own rows wait."""
    rendered = any(keys.values())
    for (hook, _), waiting in zip(hooks, pending, strict=True):
        if rendered or waiting:
            hook(session, keys)


def _store(session: Session, table: Table, key: str, bodies: dict[int, str]) -> None:
    if not bodies:
        return
    session.execute(delete(table).where(among(session, table.c[key], list(bodies))))
    bulk_insert(session, table, [{key: id_, "body": body} for id_, body in bodies.items()])
