"""Writing the demo's rows a chunk at a time, by the driver's bulk path, in one transaction."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.db.bulk import bulk_insert
from regdesk.models import metadata

# Tables in the order their rows are written (parents first).
TABLES = (
    "roles",
    "users",
    "user_permissions",
    "user_roles",
    "departments",
    "department_leads",
    "events",
    "event_options",
    "volunteers",
    "volunteer_contact_methods",
    "volunteer_department_states",
    "volunteer_option_values",
    "products",
    "registration_flags",
    "registration_options",
    "orders",
    "registrations",
    "registration_flag_links",
    "registration_option_values",
)
# Tables whose ids are given here: PostgreSQL's sequences must be moved past them.
TABLES_WITH_IDS = (
    "users",
    "roles",
    "departments",
    "events",
    "event_options",
    "volunteers",
    "volunteer_contact_methods",
    "products",
    "registration_flags",
    "registration_options",
    "orders",
    "registrations",
)
# Rows held in memory before they are written (all tables together).
CHUNK_ROWS = 10_000
# Users whose contact details are read back in one query (well under SQLite's 32,766
# parameters).
LOOKUP_ROWS = 1000


# --- writing, a chunk at a time ------------------------------------------------------------


class Writer:
    """The demo's rows on their way to the database, in the session's transaction.

    Rows wait per table; whenever `chunk_rows` of them wait, each table's are written, in the
    order of TABLES (parents first): a row's parent was made before it, so it was written in
    an earlier pass or comes ahead of it in this one. Within a table, rows are written in the
    order they were made.

    A thread of its own writes each chunk while the next is made (the database's side of a
    write lets go of the GIL: a second core makes rows meanwhile). One chunk at most is being
    written: the next waits for it, and so does anything that reads (`contacts`, `finish`).
    Only that thread uses the session until `finish`; a use as a context manager ends the
    thread, after its write, whatever happened.
    """

    def __init__(self, session: Session, chunk_rows: int) -> None:
        self.session, self.chunk_rows = session, chunk_rows
        self.waiting: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
        self.count = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="demo-writer")
        self._writing: Future[None] | None = None

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                self.finish()
            elif self._writing is not None:
                self._writing.exception()  # written or failed: the session is free again
        finally:
            self._thread.shutdown()

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.waiting[table].append(row)
        self.count += 1
        if self.count >= self.chunk_rows:
            self.flush()

    def flush(self) -> None:
        """The waiting rows handed to the writing thread, once it has written the last ones."""
        chunk = [(name, rows) for name, rows in self.waiting.items() if rows]
        self.waiting = {name: [] for name in TABLES}
        self.count = 0
        self._wait()
        if chunk:
            self._writing = self._thread.submit(self._write, chunk)

    def finish(self) -> None:
        """Every row made so far written; the session is the caller's again."""
        self.flush()
        self._wait()

    def _write(self, chunk: list[tuple[str, list[dict[str, Any]]]]) -> None:
        for name, rows in chunk:
            bulk_insert(self.session, metadata.tables[name], rows)

    def _wait(self) -> None:
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()  # its failure is the demo's

    def contacts(self, user_ids: Iterable[int]) -> dict[int, tuple[str, str, str | None]]:
        """Username, e-mail address and phone of these users, as written."""
        self.finish()
        users = metadata.tables["users"]
        wanted = sorted(set(user_ids))
        found: dict[int, tuple[str, str, str | None]] = {}
        for start in range(0, len(wanted), LOOKUP_ROWS):
            query = select(users.c.id, users.c.username, users.c.email, users.c.phone).where(
                users.c.id.in_(wanted[start : start + LOOKUP_ROWS])
            )
            for user_id, username, email, phone in self.session.execute(query):
                found[user_id] = (username, email, phone)
        return found
