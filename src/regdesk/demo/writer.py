"""Writing the demo's rows a chunk at a time, by the driver's bulk path, in one transaction."""

from __future__ import annotations

from collections.abc import Iterable
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
    """

    def __init__(self, session: Session, chunk_rows: int) -> None:
        self.session, self.chunk_rows = session, chunk_rows
        self.waiting: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
        self.count = 0

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.waiting[table].append(row)
        self.count += 1
        if self.count >= self.chunk_rows:
            self.flush()

    def flush(self) -> None:
        for name, rows in self.waiting.items():
            bulk_insert(self.session, metadata.tables[name], rows)
            rows.clear()
        self.count = 0

    def contacts(self, user_ids: Iterable[int]) -> dict[int, tuple[str, str, str | None]]:
        """Username, e-mail address and phone of these users, as written."""
        self.flush()
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
