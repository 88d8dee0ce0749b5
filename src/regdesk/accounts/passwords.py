"""Checking and setting passwords: the one check of a typed password (login, the change on
/account), a person's own new one (a change on /account, a reset by a mailed link), and an
administrator's reset for them, the usual answer to a taken-over account. A chosen password
meets the one rule (password_rule.py); each new one ends web sessions and is an audit event
that never holds it; a person's own change is mailed to them (accounts.md, Second factor)."""

from __future__ import annotations

import functools
import os
import secrets
import threading
from dataclasses import dataclass

from sqlalchemy.orm import Session

from regdesk.accounts import throttle
from regdesk.accounts.links import LinkPurpose, issue_link, peek_link, use_link
from regdesk.accounts.password_rule import password_problem
from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.errors import Invalid
from regdesk.fields import PASSWORD_MAX
from regdesk.mail.service import queue_mail
from regdesk.oauth.grants import end_access
from regdesk.security import hash_password, new_secret, verify_password
from regdesk.users.models import User
from regdesk.users.service import find_by_login
from regdesk.web.mail_templates import render_mail
from regdesk.web.sessions import end_sessions_of

RESET = LinkPurpose.RESET_PASSWORD
# Read aloud at a desk or copied from a screen: lower case, and no 0, 1 or l to mistake.
_PASSWORD_ALPHABET = "23456789abcdefghijkmnopqrstuvwxyz"

# --- checking ------------------------------------------------------------------------------

# Each argon2 check takes 64 MiB for its moment: a storm of logins waits its turn for a core
# rather than taking the server's memory.
_PASSWORD_CHECKS = threading.BoundedSemaphore(os.cpu_count() or 2)


@functools.cache
def _stand_in_hash() -> str:
    return hash_password("regdesk: no such account")


def password_matches(user: User | None, password: str) -> bool:
    """Whether `password` is `user`'s, at the cost of one argon2 check whoever asks."""
    with _PASSWORD_CHECKS:
        if user is None or not user.password_hash or len(password) > PASSWORD_MAX:
            # The same argon2 work as a real check, so that timing does not tell who exists.
            verify_password(_stand_in_hash(), password[:PASSWORD_MAX])
            return False
        return verify_password(user.password_hash, password)


def check_new_password(user: User, password: str, again: str) -> None:
    """Invalid, naming the field, when `password` breaks the rule or `again` differs."""
    problem = password_problem(password, username=user.username, email=user.email)
    if problem is not None:
        raise Invalid({"password": problem})
    if again != password:
        raise Invalid({"password_again": "does not match the new password"})


# --- an administrator's reset ------------------------------------------------------------


def generated_password() -> str:
    """Four groups of four (about 80 bits), such as `k7qm-x3vd-9hwa-t2np`."""
    return "-".join("".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(4)) for _ in range(4))


@dataclass(frozen=True)
class PasswordReset:
    password: str  # the new password: shown once to the administrator, never stored
    sessions_ended: int
    grants_revoked: int


def reset_password(
    session: Session, actor: Actor, user: User, password: str | None, *, site: str
) -> PasswordReset:
    """Sets `password`, or a generated one when None; every web session of the user ends, and
    every application they connected loses its access (grants, tokens, unredeemed codes): the
    answer to a takeover must not leave the intruder's own tool connected (ASVS V3.3.3). The
    audit event says whether the password was generated, never what it is; the user is told
    by mail (accounts.md: every change is), never of the password itself."""
    if password is not None:
        problem = password_problem(password, username=user.username, email=user.email)
        if problem is not None:
            raise Invalid({"password": problem})
    new = password if password is not None else generated_password()
    user.password_hash = hash_password(new)
    ended = end_sessions_of(session, user.id)
    revoked = end_access(session, reason="password_reset", user_id=user.id)
    record_event(
        session,
        actor,
        "user.password_reset",
        target_type="user",
        target_id=user.id,
        details={
            "generated": password is None,
            "sessions_ended": ended,
            "grants_revoked": len(revoked),
        },
    )
    _mail_changed(session, user, "by an organizer", site, by_organizer=True)
    session.flush()
    return PasswordReset(new, ended, len(revoked))


# --- the person's own: a mailed link, a change on /account --------------------------------


def request_reset(
    session: Session, login: str, *, address: str | None, site: str, limited: bool
) -> None:
    """Mails the account that `login` names (its username or e-mail address), if there is
    one, a link to `site`'s page that sets a new password (single use, 1 h; only the newest
    works). The caller answers the same words whatever happened, and the work here is the same
    either way but for writing the link and the mail (no argon2 on either), so that neither the
    answer nor its time tells who has an account. When `limited`, a request over the throttle's
    limits (throttle.py) mails nothing."""
    if limited and not throttle.link_request_allowed(session, login, address):
        return
    user = find_by_login(session, login)
    token = issue_link(session, user.id, RESET) if user is not None else new_secret()
    # Written for a stranger too, then dropped: the same work as for an account.
    text, html = render_mail(
        "password_reset",
        {
            "name": _name(user) if user is not None else login,
            "username": user.username if user is not None else login,
            "link": f"{site}/password/reset/{token}",
            "site": site,
        },
    )
    if user is not None:
        queue_mail(session, to=user.email, subject="Set a new password", text=text, html=html)


def reset_user(session: Session, token: str) -> User | None:
    """The user whose password a reset link sets, while the link works (it stays unused)."""
    link = peek_link(session, token, RESET)
    return session.get(User, link.user_id) if link is not None else None


def reset_by_link(
    session: Session, token: str, password: str, again: str, *, address: str | None, site: str
) -> User | None:
    """The link's user gets `password`, and the link is used up: every web session of theirs
    ends; the applications they connected keep their access (accounts.md, Password reset: an
    administrator's reset is the answer to a takeover). None when the link does not work;
    Invalid, the link still unused, when the password is refused."""
    user = reset_user(session, token)
    if user is None:
        return None
    check_new_password(user, password, again)
    new_hash = hash_password(password)  # before any write: argon2 holds no lock
    if use_link(session, token, RESET) is None:  # another click took it meanwhile
        return None
    user.password_hash = new_hash
    ended = end_sessions_of(session, user.id)
    actor = Actor(label=f"user:{user.id}", user_id=user.id, ip_address=address)
    how = "with a link sent to you by e-mail"
    _changed(session, actor, user, "user.password_reset_by_link", how, ended, site)
    return user


def change_password(
    session: Session,
    actor: Actor,
    user: User,
    password: str,
    again: str,
    *,
    keep_session: str,
    site: str,
) -> None:
    """The user's own change on /account, once the caller has checked their current password:
    their other web sessions end, `keep_session` (the one they changed it in) stays."""
    check_new_password(user, password, again)
    user.password_hash = hash_password(password)
    ended = end_sessions_of(session, user.id, keep=keep_session)
    _changed(session, actor, user, "user.password_changed", "on your account page", ended, site)


def _changed(
    session: Session,
    actor: Actor,
    user: User,
    action: str,
    how: str,
    sessions_ended: int,
    site: str,
) -> None:
    """The audit event of a person's own new password, and the mail that tells them `how` it
    was changed."""
    record_event(
        session,
        actor,
        action,
        target_type="user",
        target_id=user.id,
        details={"sessions_ended": sessions_ended},
    )
    _mail_changed(session, user, how, site)


def _mail_changed(
    session: Session, user: User, how: str, site: str, *, by_organizer: bool = False
) -> None:
    """The mail that tells the user their password was changed, and `how` (never to what)."""
    text, html = render_mail(
        "password_changed",
        {
            "name": _name(user),
            "username": user.username,
            "how": how,
            "when": utcnow().strftime("%Y-%m-%d at %H:%M UTC"),
            "forgot": f"{site}/password/forgot",
            "site": site,
            "by_organizer": by_organizer,
        },
    )
    queue_mail(session, to=user.email, subject="Your password was changed", text=text, html=html)


def _name(user: User) -> str:
    return user.preferred_name or user.first_name
