"""User records of the API (api.md 2.2, 4.6, 4.7): rendered from the tables, kept as documents
(regdesk.documents), and read a page at a time on the event loop's own connection."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, select
from sqlalchemy.orm import Session

from regdesk.db import ID_MAX, among, core_connection
from regdesk.db.driver import LoopReads
from regdesk.documents import Document, Page, Stale
from regdesk.documents.reading import complete, read_page
from regdesk.formats import as_json
from regdesk.users.models import User
from regdesk.users.schemas import render_user

USERS = User.__table__
BATCH = 2000
Bind = Session | Connection

# The columns of users that api.md 2.2 and 2.3 show: an update of any other (the password
# hash, say) leaves the documents that show users alone.
SHOWN_COLUMNS = (
    "email",
    "preferred_name",
    "first_name",
    "last_name",
    "username",
    "verified",
    "phone",
    "address_line1",
    "address_line2",
    "address_city",
    "address_state",
    "address_zipcode",
    "address_country",
)
# What a record is rendered from: the columns it shows, not the whole row (parsing timestamps
# and dates no record shows was half the reading of a demo's 100,000 users).
SHOWN = (USERS.c.id, *(USERS.c[name] for name in SHOWN_COLUMNS))


def user_documents(bind: Bind, ids: Iterable[int]) -> dict[int, str]:
    """The JSON records of the users with these ids (those that exist), from the table."""
    wanted = sorted(ids)
    rendered = {}
    bind = core_connection(bind)
    for start in range(0, len(wanted), BATCH):
        chunk = wanted[start : start + BATCH]
        for row in bind.execute(select(*SHOWN).where(among(bind, USERS.c.id, chunk))):
            rendered[row.id] = as_json(render_user(row))
    return rendered


DOCUMENT = Document(
    kind="user",
    records="users",
    render=user_documents,
    stale=(Stale("users", "SELECT R.id", ("INSERT", "UPDATE"), SHOWN_COLUMNS),),
)


@dataclass(frozen=True)
class UserFilters:
    role_id: int | None = None
    email: str | None = None
    username: str | None = None


def get_user(bind: Bind, user_id: int) -> Row[Any] | None:
    return bind.execute(select(USERS).where(USERS.c.id == user_id)).first()


USER_DOCUMENT = DOCUMENT.read(
    "SELECT u.id, {body} FROM users u{documents} WHERE u.id = :user_id", "u.id"
)


async def user_document(reads: LoopReads, user_id: int) -> str | None:
    """The JSON record (api.md 2.2) of the user with this id, if there is one."""
    row = await reads.first(USER_DOCUMENT, user_id=user_id)
    found = complete(reads, [(row[0], row[1])], DOCUMENT) if row is not None else []
    return found[0] if found else None


def _search_query(role: bool, email: bool, username: bool) -> Page:
    """The page query for one combination of filters, members combined with AND."""
    # Keyed on user_roles.user_id with a role filter, so that the page walks
    # ix_user_roles_role_id_user_id in order and stops after `limit` rows (keyed on users.id,
    # SQLite would sort every holder).
    key = "ur.user_id" if role else "u.id"
    sql = "SELECT u.id, {body} FROM users u"
    if role:
        sql += " JOIN user_roles ur ON ur.user_id = u.id AND ur.role_id = :role_id"
    sql += f"{{documents}} WHERE {key} > :after"
    # Both sides lowered by the database, as its unique indexes are: Python's lower() folds
    # letters SQLite's does not ("É"), and the stored value would not find itself.
    if email:
        sql += " AND lower(u.email) = lower(:email)"
    if username:
        # The lower() term lets the case-insensitive unique index find the row.
        sql += " AND lower(u.username) = lower(:username) AND u.username = :username"
    return DOCUMENT.page(f"{sql} ORDER BY {key} LIMIT :limit", "u.id")


SEARCHES = {
    (role, email, username): _search_query(role, email, username)
    for role in (False, True)
    for email in (False, True)
    for username in (False, True)
}


async def search_users(
    reads: LoopReads, filters: UserFilters, after_id: int, limit: int
) -> tuple[bytes, int | None]:
    """The JSON records of the users in id order after `after_id` that match every filter,
    joined by commas, and the id to continue after when more follow."""
    if filters.role_id is not None and not 0 < filters.role_id <= ID_MAX:
        return b"", None  # no role has such an id (and PostgreSQL could not compare it)
    query = SEARCHES[
        (filters.role_id is not None, filters.email is not None, filters.username is not None)
    ]
    parameters = {"role_id": filters.role_id, "email": filters.email, "username": filters.username}
    return await read_page(
        reads,
        query,
        DOCUMENT,
        limit,
        after=after_id,
        **{name: parameters[name] for name in query.joined.names if name in parameters},
    )
