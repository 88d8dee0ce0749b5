"""Setting a person's password for them: an administrator's reset, the usual answer to a
taken-over account."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.errors import Invalid
from regdesk.fields import PASSWORD_MAX
from regdesk.oauth.grants import end_access
from regdesk.security import hash_password
from regdesk.users.models import User
from regdesk.web.sessions import end_sessions_of

PASSWORD_MIN = 8
# Read aloud at a desk or copied from a screen: lower case, and no 0, 1 or l to mistake.
_PASSWORD_ALPHABET = "23456789abcdefghijkmnopqrstuvwxyz"


def generated_password() -> str:
    """Four groups of four (about 80 bits), such as `k7qm-x3vd-9hwa-t2np`."""
    return "-".join("".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(4)) for _ in range(4))


@dataclass(frozen=True)
class PasswordReset:
    password: str  # the new password: shown once to the administrator, never stored
    sessions_ended: int
    grants_revoked: int


def reset_password(
    session: Session, actor: Actor, user: User, password: str | None
) -> PasswordReset:
    """Sets `password`, or a generated one when None; every web session of the user ends, and
    every application they connected loses its access (grants, tokens, unredeemed codes): the
    answer to a takeover must not leave the intruder's own tool connected (ASVS V3.3.3). The
    audit event says whether the password was generated, never what it is."""
    if password is not None and not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise Invalid({"password": f"must be {PASSWORD_MIN} to {PASSWORD_MAX} characters"})
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
    session.flush()
    return PasswordReset(new, ended, len(revoked))
