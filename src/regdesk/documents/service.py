"""Rendering queued record documents again (documents/models.py), before a write commits.

Rendering is the one Python path that builds a record from its tables (users/service.py,
volunteers/service.py); a document is that path's output, kept. `refresh` runs in every write
transaction just before it commits (db.write_session), so the queue is empty again when the
change becomes visible. On PostgreSQL, refreshes take turns under a transaction-scoped
advisory lock and, holding it, read with a fresh snapshot (READ COMMITTED): of two writers
touching the same record, the later one renders it with both changes.
"""

from __future__ import annotations

from sqlalchemy import Table, delete, select, text
from sqlalchemy.orm import Session

from regdesk.db import is_sqlite
from regdesk.documents.models import DocumentQueue, UserDocument, VolunteerDocument
from regdesk.transfer.bulk import bulk_insert
from regdesk.users.service import user_documents
from regdesk.volunteers.service import volunteer_documents

# Any fixed number, distinct from the migration lock's (migrations/runner.py).
REFRESH_LOCK_ID = 0x7265_6764_646F_63  # "regddoc"
BATCH = 2000
USER_DOCUMENTS: Table = UserDocument.__table__  # type: ignore[assignment]
VOLUNTEER_DOCUMENTS: Table = VolunteerDocument.__table__  # type: ignore[assignment]


def refresh(session: Session) -> None:
    """Render every queued document again, in the session's transaction: each record once,
    however many of its rows changed. A record still queued after a commit (changed by SQL that
    ran beside this refresh) is rendered by its readers until the next refresh."""
    if session.execute(select(DocumentQueue.id).limit(1)).first() is None:
        return
    if not is_sqlite(session):
        session.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": REFRESH_LOCK_ID})
    # Taken off the queue in one statement and rendered in the view that follows it: a row
    # someone else commits meanwhile (SQL outside regdesk) stays queued, never dropped unrendered.
    keys: dict[str, set[int]] = {"user": set(), "volunteer": set()}
    for kind, key in session.execute(
        delete(DocumentQueue).returning(DocumentQueue.kind, DocumentQueue.key)
    ):
        keys[kind].add(key)
    for kind, table, column, render in (
        ("user", USER_DOCUMENTS, "user_id", user_documents),
        ("volunteer", VOLUNTEER_DOCUMENTS, "volunteer_id", volunteer_documents),
    ):
        ordered = sorted(keys[kind])
        for start in range(0, len(ordered), BATCH):
            _store(session, table, column, render(session, ordered[start : start + BATCH]))


def _store(session: Session, table: Table, key: str, bodies: dict[int, str]) -> None:
    if not bodies:
        return
    session.execute(delete(table).where(table.c[key].in_(list(bodies))))
    bulk_insert(session, table, [{key: id_, "body": body} for id_, body in bodies.items()])
