"""Creating, finding and changing users (`regdesk users create`, the API, the admin area)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    union,
)
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor, record_changes, record_event
from regdesk.db import ID_MAX, table_of
from regdesk.errors import Invalid
from regdesk.fields import Parser, boolean, text
from regdesk.oauth.models import UserPermission
from regdesk.oauth.permissions import ADMIN, check_permission, permissions_of
from regdesk.roles.models import Role, RoleScope, UserRole
from regdesk.security import hash_password
from regdesk.users.fields import (
    EMAIL,
    FIRST_NAME,
    LAST_NAME,
    PREFERRED_NAME,
    USERNAME,
    normalize_country,
    normalize_phone,
)
from regdesk.users.models import User
from regdesk.users.schemas import ADDRESS_FIELDS

USERS = table_of(User)


@dataclass(frozen=True)
class NewUser:
    username: str
    email: str
    first_name: str
    last_name: str
    password: str | None = None
    roles: Sequence[str] = ()
    permissions: Sequence[str] = ()


# Lowered by the database on both sides, as the unique indexes are (SQLite folds ASCII only).
# Built once, the login bound at each call: built at each, they were half of its time (216 ->
# 111 µs on SQLite, these machines).
_BY_EMAIL = select(User).where(func.lower(User.email) == func.lower(bindparam("login")))
_BY_USERNAME = select(User).where(func.lower(User.username) == func.lower(bindparam("login")))


def find_by_login(session: Session, login: str) -> User | None:
    """The user whose username or e-mail is `login`, whatever its case."""
    if "\x00" in login:  # in no one's name, and PostgreSQL cannot even compare it
        return None
    by = _BY_EMAIL if "@" in login else _BY_USERNAME
    return session.scalars(by, {"login": login}).first()


def create_user(session: Session, actor: Actor, new: NewUser) -> User:
    """A new user, or Invalid naming every field that cannot be as asked."""
    errors: dict[str, str] = {}

    def parsed(field: str, parse: Parser, value: Any) -> Any:
        try:
            return parse(value)
        except ValueError as exc:
            errors[field] = str(exc)
            return None

    username = parsed("username", USERNAME, new.username)
    email = parsed("email", EMAIL, new.email)
    first_name = parsed("firstName", FIRST_NAME, new.first_name)
    last_name = parsed("lastName", LAST_NAME, new.last_name)
    if username is not None and find_by_login(session, username) is not None:
        errors["username"] = f"{username!r} is taken"
    if email is not None and find_by_login(session, email) is not None:
        errors["email"] = f"{email!r} belongs to another user"
    permissions = parsed(
        "permissions", lambda names: sorted({check_permission(p) for p in names}), new.permissions
    )
    roles = parsed("roles", lambda names: _roles_by_name(session, names), new.roles)
    if errors:
        raise Invalid(errors)

    user = User(
        username=username,
        email=email,
        first_name=first_name,
        last_name=last_name,
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
        raise ValueError(f"no role named {missing[0]!r} (roles: {', '.join(known) or 'none yet'})")
    return [found[n] for n in wanted]


# --- the admin area: finding users, and an administrator's changes --------------------------

ADMIN_PAGE = 50
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def starts_with(column: Any, prefix: str) -> ColumnElement[bool]:
    """lower(column) starts with `prefix`, as a range that the lower(column) index serves.

    Both sides are lowered by the database, as the indexes are (SQLite folds ASCII only); the
    range's end is the prefix with its last letter moved one on, and the substr() term drops
    anything a linguistic collation sorts into the range without starting with the prefix.
    """
    prefix = prefix.translate(_ASCII_LOWER)
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    lowered, start = func.lower(column), func.lower(prefix)
    return and_(
        lowered >= start,
        lowered < func.lower(upper),
        func.substr(lowered, 1, func.length(start)) == start,
    )


def find_users(
    session: Session,
    typed: str,
    after_id: int,
    limit: int = ADMIN_PAGE,
    *,
    role_id: int | None = None,
) -> tuple[list[User], int | None]:
    """Users matching what an administrator typed (and holding `role_id`, if given), in id
    order after `after_id`, and the id to continue after when more follow.

    Every branch is an index lookup (no scan of the users table, whatever its size): an
    e-mail address matches exactly; otherwise the start of a username, first, last or
    preferred name, "first last" both names, and a number the user's id.
    """
    words = typed.split()
    if not words:
        conditions: list[ColumnElement[bool]] = [User.id > 0]
    elif "@" in typed:
        conditions = [func.lower(User.email) == func.lower(typed.strip())]
    else:
        phrase = " ".join(words)
        conditions = [
            starts_with(User.username, phrase),
            starts_with(User.first_name, phrase),
            starts_with(User.last_name, phrase),
            starts_with(User.preferred_name, phrase),
        ]
        if len(words) == 2:
            conditions.append(
                and_(starts_with(User.first_name, words[0]), starts_with(User.last_name, words[1]))
            )
        if phrase.isascii() and phrase.isdigit() and int(phrase) <= ID_MAX:
            conditions.append(User.id == int(phrase))
    if role_id is not None and not words:
        # The role's holders in user order: ix_user_roles_role_id_user_id, read in order.
        branches = [
            select(UserRole.user_id.label("id")).where(
                UserRole.role_id == role_id, UserRole.user_id > after_id
            )
        ]
    else:
        holds_role = (
            [exists().where(UserRole.user_id == User.id, UserRole.role_id == role_id)]
            if role_id is not None
            else []
        )
        branches = [
            select(User.id).where(condition, User.id > after_id, *holds_role)
            for condition in conditions
        ]
    matched = union(*branches).subquery() if len(branches) > 1 else branches[0].subquery()
    ids = list(session.scalars(select(matched.c.id).order_by(matched.c.id).limit(limit + 1)))
    page = ids[:limit]
    found = {u.id: u for u in session.scalars(select(User).where(User.id.in_(page)))}
    return [found[i] for i in page], (page[-1] if len(ids) > limit else None)


def recent_events(session: Session, user_id: int, limit: int = 20) -> list[AuditEvent]:
    """The newest audit events about this user or done by them."""
    return list(
        session.scalars(
            select(AuditEvent)
            .where(
                or_(
                    and_(AuditEvent.target_type == "user", AuditEvent.target_id == str(user_id)),
                    AuditEvent.actor_user_id == user_id,
                )
            )
            .order_by(AuditEvent.id.desc())
            .limit(limit)
        )
    )


# Fields of api.md 2.2 an administrator may change: API name -> (column, parser, nullable).
# The parsers are the import's (transfer/records.py, users/fields.py), so both refuse alike.
_EDITABLE: dict[str, tuple[str, Parser, bool]] = {
    "username": ("username", USERNAME, False),
    "email": ("email", EMAIL, False),
    "firstName": ("first_name", FIRST_NAME, False),
    "lastName": ("last_name", LAST_NAME, False),
    "preferredName": ("preferred_name", PREFERRED_NAME, True),
    "verified": ("verified", boolean, False),
    **{
        name: (column, text(USERS.c[column]), True)
        for name, column in ADDRESS_FIELDS
        if name != "addressCountry"
    },
    "addressCountry": (
        "address_country",
        text(USERS.c.address_country, normalize=normalize_country),
        True,
    ),
}
EDITABLE_FIELDS = (*_EDITABLE, "phone")


def update_user(
    session: Session, actor: Actor, user: User, changes: dict[str, Any], phone_region: str
) -> list[str]:
    """Sets the fields given (API names, see EDITABLE_FIELDS; None empties a nullable one).

    Raises Invalid naming every bad field; returns the names of the fields that changed.
    """
    errors: dict[str, str] = {}
    values: dict[str, Any] = {}
    for name, value in changes.items():
        if name not in EDITABLE_FIELDS:
            raise ValueError(f"{name!r} is not a field an administrator edits")
        column, parse, nullable = _EDITABLE.get(name, ("phone", None, True))
        if value is None:
            if nullable:
                values[column] = None
            else:
                errors[name] = "may not be empty"
        elif parse is not None:
            try:
                values[column] = parse(value)
            except ValueError as exc:
                errors[name] = str(exc)
    if changes.get("phone") is not None:
        # A national number is read in the user's country (as the import does).
        country = values.get("address_country", user.address_country) or phone_region
        try:
            values["phone"] = normalize_phone(changes["phone"], country)
        except ValueError as exc:
            errors["phone"] = str(exc)
    for name, column in (("username", "username"), ("email", "email")):
        if values.get(column) is not None:
            holder = find_by_login(session, values[column])
            if holder is not None and holder.id != user.id:
                errors[name] = f"{values[column]!r} belongs to another user"
    if errors:
        raise Invalid(errors)
    edited = [name for name in EDITABLE_FIELDS if name in changes]
    return record_changes(
        session,
        actor,
        user,
        {_column(name): values[_column(name)] for name in edited},
        action="user.updated",
        target_type="user",
        names={_column(name): name for name in edited},
    )


def _column(name: str) -> str:
    return _EDITABLE[name][0] if name in _EDITABLE else name


def set_permissions(
    session: Session, actor: Actor, user_id: int, names: Iterable[str]
) -> tuple[list[str], list[str]]:
    """The user holds exactly these permissions afterwards: returns (granted, revoked).

    An administrator cannot take `admin` from themselves: the area would lock them out, and
    perhaps everyone.
    """
    try:
        wanted = {check_permission(name) for name in names}
    except ValueError as exc:
        raise Invalid({"permissions": str(exc)}) from None
    held = set(permissions_of(session, user_id))
    granted, revoked = sorted(wanted - held), sorted(held - wanted)
    if ADMIN in revoked and actor.user_id == user_id:
        raise Invalid(
            {
                "permissions": "you cannot take the admin permission from yourself; ask another"
                " administrator"
            }
        )
    if revoked:
        session.execute(
            delete(UserPermission).where(
                UserPermission.user_id == user_id, UserPermission.name.in_(revoked)
            )
        )
    if granted:
        session.execute(insert(UserPermission), [{"user_id": user_id, "name": n} for n in granted])
    if granted or revoked:
        record_event(
            session,
            actor,
            "user.permissions_changed",
            target_type="user",
            target_id=user_id,
            details={"granted": granted, "revoked": revoked},
        )
    return granted, revoked
