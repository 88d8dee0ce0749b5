"""Rendering queued record documents again, before a write commits.

Rendering is the one Python path that builds a record from its tables (each declaration's
`render`); a document is that path's output, kept. `refresh` runs in every write transaction
just before it commits (hooked into `db.write_session` by `install`), so the queue is empty
again when the change becomes visible. On PostgreSQL, refreshes take turns under a
transaction-scoped advisory lock and, holding it, read with a fresh snapshot (READ
COMMITTED): of two writers touching the same record, the later one renders it with both
changes.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Table, delete, select, text
from sqlalchemy.orm import Session

from regdesk.db import among, before_write_commits, is_sqlite
from regdesk.db.bulk import bulk_insert
from regdesk.documents.declarations import Document
from regdesk.documents.models import DocumentQueue

# Any fixed number, distinct from the migration lock's (migrations/runner.py).
REFRESH_LOCK_ID = 0x7265_6764_646F_63  # "regddoc"
BATCH = 2000

_DECLARED: dict[str, Document] = {}


def install(documents: Iterable[Document]) -> None:
    """Keep these documents in step from now on: the app and the command line call this at
    start with every declaration (regdesk.models.DOCUMENTS). Again is harmless."""
    _DECLARED.update((document.kind, document) for document in documents)
    before_write_commits(refresh)


def refresh(session: Session) -> None:
    """Render every queued document again, in the session's transaction: each record once,
    however many of its rows changed. A record still queued after a commit (changed by SQL that
    ran beside this refresh) is rendered by its readers until the next refresh."""
    queued = DocumentQueue.kind.in_(list(_DECLARED))
    if session.execute(select(DocumentQueue.id).where(queued).limit(1)).first() is None:
        return
    if not is_sqlite(session):
        session.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": REFRESH_LOCK_ID})
    # Taken off the queue in one statement and rendered in the view that follows it: a row
    # someone else commits meanwhile (SQL outside regdesk) stays queued, never dropped unrendered.
    keys: dict[str, set[int]] = {kind: set() for kind in _DECLARED}
    for kind, key in session.execute(
        delete(DocumentQueue).where(queued).returning(DocumentQueue.kind, DocumentQueue.key)
    ):
        keys[kind].add(key)
    for kind, document in _DECLARED.items():
        ordered = sorted(keys[kind])
        for start in range(0, len(ordered), BATCH):
            chunk = ordered[start : start + BATCH]
            _store(session, document.table, document.key, document.render(session, chunk))


def _store(session: Session, table: Table, key: str, bodies: dict[int, str]) -> None:
    if not bodies:
        return
    session.execute(delete(table).where(among(session, table.c[key], list(bodies))))
    bulk_insert(session, table, [{key: id_, "body": body} for id_, body in bodies.items()])
