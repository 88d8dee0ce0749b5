"""Signed-in browser sessions, kept in the database so every server process shares them.

The cookie holds a random id (256 bits); the table holds only its SHA-256, so a copy of the
database signs no one in. A session dies after `IDLE_TIMEOUT` without a request, or at
`ABSOLUTE_TIMEOUT` after login whatever happens. Every login starts a new id (no fixation).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.orm import Session

from regdesk.db import utcnow
from regdesk.security import new_secret, token_hash
from regdesk.web.models import WebSession

COOKIE_NAME = "regdesk_session"
IDLE_TIMEOUT = dt.timedelta(hours=2)
ABSOLUTE_TIMEOUT = dt.timedelta(hours=12)
# last_seen_at is written at most this often: a page view need not always be a write.
TOUCH_INTERVAL = dt.timedelta(minutes=1)
MAX_COOKIE_LENGTH = 100  # ours are 43 characters; anything much longer is not ours
MAX_USER_AGENT = 300


@dataclass(frozen=True)
class LiveSession:
    """A session that is alive now: its raw id (from the cookie), whose it is, and when they
    signed in (every sign-in starts a session: OpenID Connect's `auth_time`)."""

    session_id: str
    user_id: int
    signed_in_at: dt.datetime

    @property
    def sid(self) -> str:
        """OpenID Connect's `sid`: stable for the session, and not the cookie (nor a way to it)."""
        return token_hash(f"regdesk sid|{token_hash(self.session_id)}")


def start_session(
    db: Session, user_id: int, *, ip_address: str | None, user_agent: str | None
) -> LiveSession:
    """A new session for a user who just proved who they are."""
    session_id = new_secret(32)
    now = utcnow()
    # Sessions of this user that died on their own are of no more use: tidy them here.
    db.execute(
        delete(WebSession).where(WebSession.user_id == user_id, _dead(now)),
        execution_options={"synchronize_session": False},
    )
    db.add(
        WebSession(
            session_hash=token_hash(session_id),
            user_id=user_id,
            created_at=now,
            last_seen_at=now,
            expires_at=now + ABSOLUTE_TIMEOUT,
            ip_address=(ip_address or None) and ip_address[:45],
            user_agent=(user_agent or None) and user_agent[:MAX_USER_AGENT],
        )
    )
    db.flush()
    return LiveSession(session_id, user_id, now)


def find_session(db: Session, session_id: str | None) -> LiveSession | None:
    """The live session a cookie names, noting that it was seen; None if there is none."""
    if not session_id or len(session_id) > MAX_COOKIE_LENGTH:
        return None
    now = utcnow()
    row = db.scalars(
        select(WebSession).where(WebSession.session_hash == token_hash(session_id))
    ).one_or_none()
    if row is None:
        return None
    if row.expires_at <= now or row.last_seen_at + IDLE_TIMEOUT <= now:
        db.delete(row)
        return None
    if now - row.last_seen_at >= TOUCH_INTERVAL:
        db.execute(update(WebSession).where(WebSession.id == row.id).values(last_seen_at=now))
    return LiveSession(session_id, row.user_id, row.created_at)


def end_session(db: Session, session_id: str | None) -> int | None:
    """Log out: the session is deleted server-side. Returns its user's id, if it existed."""
    if not session_id or len(session_id) > MAX_COOKIE_LENGTH:
        return None
    named = WebSession.session_hash == token_hash(session_id)
    user_id = db.scalars(select(WebSession.user_id).where(named)).one_or_none()
    if user_id is not None:
        db.execute(delete(WebSession).where(named))
    return user_id


def end_sessions_of(db: Session, user_id: int, *, keep: str | None = None) -> int:
    """Every session of this user ends (their password was reset), but the one whose id is
    `keep` (theirs, who changed it): how many ended."""
    which = WebSession.user_id == user_id
    if keep is not None:
        which &= WebSession.session_hash != token_hash(keep)
    result = db.execute(delete(WebSession).where(which))
    return int(getattr(result, "rowcount", 0) or 0)


def purge_sessions(db: Session) -> int:
    """Delete every session that has died (for a periodic clean-up such as `tokens purge`)."""
    result = db.execute(delete(WebSession).where(_dead(utcnow())))
    return int(getattr(result, "rowcount", 0) or 0)


def _dead(now: dt.datetime) -> ColumnElement[bool]:
    return or_(WebSession.expires_at <= now, WebSession.last_seen_at <= now - IDLE_TIMEOUT)
