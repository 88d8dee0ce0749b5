"""Creating and finding users (the organizer's `regdesk users create`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, func, insert, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import ID_MAX, LoopReads, Query
from regdesk.departments.models import DepartmentLead
from regdesk.documents.reading import complete
from regdesk.events.models import Event
from regdesk.formats import as_json
from regdesk.roles.models import Role, RoleScope, UserRole
from regdesk.security import hash_password
from regdesk.users.fields import check_username, normalize_email
from regdesk.users.models import User, UserPermission
from regdesk.users.permissions import check_permission
from regdesk.users.schemas import render_user
from regdesk.volunteers.models import Volunteer


class UserError(ValueError):
    """A user that cannot be created as asked; the message names the field."""


@dataclass(frozen=True)
class NewUser:
    username: str
    email: str
    first_name: str
    last_name: str
    password: str | None = None
    roles: Sequence[str] = ()
    permissions: Sequence[str] = ()


def find_by_login(session: Session, login: str) -> User | None:
    """The user whose username or e-mail is `login`, whatever its case."""
    column = User.email if "@" in login else User.username
    # Lowered by the database on both sides, as the unique indexes are (SQLite folds ASCII only).
    return session.scalars(select(User).where(func.lower(column) == func.lower(login))).first()


def create_user(session: Session, actor: Actor, new: NewUser) -> User:
    try:
        username = check_username(new.username)
    except ValueError as exc:
        raise UserError(f"username: {exc}") from None
    try:
        email = normalize_email(new.email)
    except ValueError as exc:
        raise UserError(f"email: {exc}") from None
    for field, value in (("first name", new.first_name), ("last name", new.last_name)):
        if not value.strip() or len(value) > 100:
            raise UserError(f"{field}: must be 1 to 100 characters")
    if find_by_login(session, username) is not None:
        raise UserError(f"username: {username!r} is taken")
    if find_by_login(session, email) is not None:
        raise UserError(f"email: {email!r} belongs to another user")
    try:
        permissions = sorted({check_permission(p) for p in new.permissions})
    except ValueError as exc:
        raise UserError(f"permission: {exc}") from None
    roles = _roles_by_name(session, new.roles)

    user = User(
        username=username,
        email=email,
        first_name=new.first_name.strip(),
        last_name=new.last_name.strip(),
        password_hash=hash_password(new.password) if new.password else None,
    )
    session.add(user)
    session.flush()
    if permissions:
        session.execute(
            insert(UserPermission), [{"user_id": user.id, "name": p} for p in permissions]
        )
    if roles:
        session.execute(
            insert(UserRole),
            [{"user_id": user.id, "role_id": r.id, "scope": RoleScope.CONVENTION} for r in roles],
        )
    record_event(
        session,
        actor,
        "user.created",
        target_type="user",
        target_id=user.id,
        details={"roles": [r.name for r in roles], "permissions": permissions},
    )
    return user


def _roles_by_name(session: Session, names: Sequence[str]) -> list[Role]:
    wanted = list(dict.fromkeys(names))
    found = {r.name: r for r in session.scalars(select(Role).where(Role.name.in_(wanted)))}
    missing = [n for n in wanted if n not in found]
    if missing:
        known = session.scalars(select(Role.name).order_by(Role.name)).all()
        raise UserError(
            f"role: no role named {missing[0]!r} (roles: {', '.join(known) or 'none yet'})"
        )
    return [found[n] for n in wanted]


def permissions_of(session: Bind, user_id: int) -> list[str]:
    return list(
        session.scalars(
            select(UserPermission.name)
            .where(UserPermission.user_id == user_id)
            .order_by(UserPermission.name)
        )
    )


# --- reading users (api.md 4.6, 4.7) --------------------------------------------------------


@dataclass(frozen=True)
class UserFilters:
    role_id: int | None = None
    email: str | None = None
    username: str | None = None


USERS = User.__table__
BATCH = 2000
Bind = Session | Connection


def get_user(bind: Bind, user_id: int) -> Row[Any] | None:
    return bind.execute(select(USERS).where(USERS.c.id == user_id)).first()


USER_DOCUMENT = Query("""
    SELECT u.id, (SELECT body FROM user_documents d WHERE d.user_id = u.id
                  AND NOT EXISTS (SELECT 1 FROM document_queue q
                                  WHERE q.kind = 'user' AND q.key = u.id))
    FROM users u WHERE u.id = :user_id
""")


def user_document(reads: LoopReads, user_id: int) -> str | None:
    """The JSON record (api.md 2.2) of the user with this id, if there is one."""
    row = reads.first(USER_DOCUMENT, user_id=user_id)
    found = complete(reads, [(row[0], row[1])], user_documents) if row is not None else []
    return found[0] if found else None


def _search_query(role: bool, email: bool, username: bool) -> Query:
    """The page query for one combination of filters, members combined with AND."""
    # Keyed on user_roles.user_id with a role filter, so that the page walks
    # ix_user_roles_role_id_user_id in order and stops after `limit` rows (keyed on users.id,
    # SQLite would sort every holder).
    key = "ur.user_id" if role else "u.id"
    # Each body looked up by key (as a join, PostgreSQL merges from the first document on).
    # A record still queued (see documents/models.py) is rendered from its table.
    sql = (
        "SELECT u.id, (SELECT body FROM user_documents d WHERE d.user_id = u.id AND NOT EXISTS"
        " (SELECT 1 FROM document_queue q WHERE q.kind = 'user' AND q.key = u.id)) FROM users u"
    )
    if role:
        sql += " JOIN user_roles ur ON ur.user_id = u.id AND ur.role_id = :role_id"
    sql += f" WHERE {key} > :after"
    # Both sides lowered by the database, as its unique indexes are: Python's lower() folds
    # letters SQLite's does not ("É"), and the stored value would not find itself.
    if email:
        sql += " AND lower(u.email) = lower(:email)"
    if username:
        # The lower() term lets the case-insensitive unique index find the row.
        sql += " AND lower(u.username) = lower(:username) AND u.username = :username"
    return Query(f"{sql} ORDER BY {key} LIMIT :limit")


SEARCHES = {
    (role, email, username): _search_query(role, email, username)
    for role in (False, True)
    for email in (False, True)
    for username in (False, True)
}


def search_users(
    reads: LoopReads, filters: UserFilters, after_id: int, limit: int
) -> tuple[list[str], int | None]:
    """The JSON records of the users in id order after `after_id` that match every filter, and
    the id to continue after when more follow."""
    if filters.role_id is not None and not 0 < filters.role_id <= ID_MAX:
        return [], None  # no role has such an id (and PostgreSQL could not compare it)
    query = SEARCHES[
        (filters.role_id is not None, filters.email is not None, filters.username is not None)
    ]
    parameters = {"role_id": filters.role_id, "email": filters.email, "username": filters.username}
    rows = reads.all(
        query,
        after=after_id,
        limit=limit + 1,
        **{name: parameters[name] for name in query.names if name in parameters},
    )
    page = rows[:limit]
    bodies = complete(reads, page, user_documents)
    return bodies, (page[-1][0] if len(rows) > limit else None)


def user_documents(bind: Bind, ids: Iterable[int]) -> dict[int, str]:
    """The JSON records of the users with these ids (those that exist), from the table."""
    wanted = sorted(ids)
    rendered = {}
    for start in range(0, len(wanted), BATCH):
        chunk = wanted[start : start + BATCH]
        for row in bind.execute(select(USERS).where(USERS.c.id.in_(chunk))):
            rendered[row.id] = as_json(render_user(row))
    return rendered


def current_user_facts(session: Bind, user_id: int) -> dict[str, Any]:
    """What the current-user record (api.md 2.4) adds to the user's own columns."""
    roles = [
        {"id": role_id, "name": name}
        for role_id, name in session.execute(
            select(Role.id, Role.name)
            .join(UserRole, UserRole.role_id == Role.id)
            .where(UserRole.user_id == user_id)
            .order_by(Role.id)
        )
    ]
    is_volunteer = session.scalar(
        select(Volunteer.id)
        .join(Event, Event.id == Volunteer.event_id)
        .where(Volunteer.user_id == user_id, Event.is_current.is_(True))
    )
    is_lead = session.scalar(
        select(DepartmentLead.department_id).where(DepartmentLead.user_id == user_id).limit(1)
    )
    return {
        "roles": roles,
        "permissions": permissions_of(session, user_id),
        "is_volunteer": is_volunteer is not None,
        "is_department_lead": is_lead is not None,
    }
