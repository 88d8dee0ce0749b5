"""Accounts people make themselves (accounts.md, Sign-up and verification): the form's rules,
the new user, and the e-mail verification by mailed link.

The names and the address follow the rules every other way of making a user follows
(users.service.create_user: case-insensitive unique username and e-mail; a taken one is said
to be taken, never whose it is), the password the one rule (accounts.password_rule). A new
account's address is not verified until the mailed link is followed; a changed address
replaces the old one only then.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy.orm import Session

from regdesk.accounts.links import LinkPurpose, issue_link, newest_link_address, use_link
from regdesk.accounts.password_rule import password_problem
from regdesk.audit.service import Actor, record_event
from regdesk.errors import Invalid
from regdesk.fields import date
from regdesk.security import hash_password
from regdesk.users.fields import EMAIL, PREFERRED_NAME
from regdesk.users.models import User
from regdesk.users.service import NewUser, create_user, find_by_login

OLDEST = dt.date(1900, 1, 1)


@dataclass(frozen=True)
class SignUp:
    """The form as typed."""

    username: str
    first_name: str
    last_name: str
    preferred_name: str
    email: str
    born: str  # YYYY-MM-DD
    password: str
    terms_agreed: bool


def sign_up(
    session: Session, actor: Actor, form: SignUp, *, terms_required: bool, today: dt.date
) -> tuple[User, str]:
    """The new user and the token of their verification link (to mail), or Invalid naming
    every field that cannot be as typed."""
    errors: dict[str, str] = {}
    problem = password_problem(form.password, username=form.username, email=form.email)
    if problem is not None:
        errors["password"] = problem
    born = _born(form.born, today, errors)
    preferred = None
    try:
        preferred = PREFERRED_NAME(form.preferred_name) or None
    except ValueError as error:
        errors["preferredName"] = str(error)
    if terms_required and not form.terms_agreed:
        errors["terms"] = "must be agreed to"
    new = NewUser(
        username=form.username,
        email=form.email,
        first_name=form.first_name,
        last_name=form.last_name,
        password=None,  # hashed below, once every field is right
    )
    # Every field's rules, even when another is wrong already: a savepoint that only stays
    # when the whole form is right.
    savepoint = session.begin_nested()
    try:
        user = create_user(session, actor, new)
    except Invalid as invalid:
        errors = {**invalid.errors, **errors}
    if errors:
        savepoint.rollback()
        _note_taken(session, form, errors)
        raise Invalid(errors)
    savepoint.commit()
    user.password_hash = hash_password(form.password)
    user.preferred_name = preferred
    user.born_at = born
    user.verified = False
    session.flush()
    record_event(session, actor, "user.signed_up", target_type="user", target_id=user.id)
    return user, issue_link(session, user.id, LinkPurpose.VERIFY_EMAIL, email=user.email)


def _born(typed: str, today: dt.date, errors: dict[str, str]) -> dt.date | None:
    try:
        born: dt.date = date(typed.strip())
    except ValueError as error:
        errors["bornAt"] = str(error)
        return None
    if not OLDEST <= born <= today:
        errors["bornAt"] = f"must be a date between {OLDEST:%Y-%m-%d} and today"
        return None
    return born


def _note_taken(session: Session, form: SignUp, errors: dict[str, str]) -> None:
    """A username or address already in use, said so without saying whose (create_user only
    looks when every field is good)."""
    for field, typed in (("username", form.username), ("email", form.email)):
        if field not in errors and typed.strip() and find_by_login(session, typed.strip()):
            errors[field] = "is taken" if field == "username" else "belongs to another account"


def request_email_change(session: Session, actor: Actor, user: User, typed: str) -> str:
    """The token of a link that makes `typed` the user's address once followed (the current
    one stays until then), or Invalid for the `email` field."""
    try:
        address: str = EMAIL(typed)
    except ValueError as error:
        raise Invalid({"email": str(error)}) from None
    if address.casefold() == user.email.casefold():
        raise Invalid({"email": "is already your address"})
    holder = find_by_login(session, address)
    if holder is not None and holder.id != user.id:
        raise Invalid({"email": "belongs to another account"})
    record_event(
        session, actor, "user.email_change_requested", target_type="user", target_id=user.id
    )
    return issue_link(session, user.id, LinkPurpose.VERIFY_EMAIL, email=address)


def waiting_address(session: Session, user: User) -> str | None:
    """The address the user's newest verification link would confirm, while it works: a new
    account's own, or the one it changes to."""
    return newest_link_address(session, user.id, LinkPurpose.VERIFY_EMAIL)


@dataclass(frozen=True)
class Verified:
    user: User
    previous: str | None  # the address it replaced, when it changed


def verify_email(session: Session, actor: Actor, token: str) -> Verified | None:
    """The mailed link followed: its address becomes the user's, verified. None when the link
    is unknown, used or expired, or its address was meanwhile taken by another account."""
    link = use_link(session, token, LinkPurpose.VERIFY_EMAIL)
    if link is None or link.email is None:
        return None
    user = session.get(User, link.user_id)
    if user is None:
        return None
    holder = find_by_login(session, link.email)
    if holder is not None and holder.id != user.id:
        return None
    changed = user.email.casefold() != link.email.casefold()
    before = user.email
    user.email, user.verified = link.email, True
    record_event(
        session,
        actor,
        "user.email_verified",
        target_type="user",
        target_id=user.id,
        details={"changed": changed, **({"previous": before} if changed else {})},
    )
    session.flush()
    return Verified(user, before if changed else None)
