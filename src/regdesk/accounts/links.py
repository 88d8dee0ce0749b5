"""The links regdesk mails a person (accounts.md): to verify an e-mail address (48 h), to set
a new password (1 h). Each carries a random token that only the mail holds: the database keeps
its SHA-256, so a copy of the database opens nothing. A link is used once: taking it is one
conditional UPDATE, so of two clicks racing, one wins. The challenges of security keys
(WebAuthn) are kept here too, for the same reasons: random, single use, newest only, expiring."""

from __future__ import annotations

import datetime as dt
import enum
import secrets
from dataclasses import dataclass

from sqlalchemy import ColumnElement, ForeignKey, Index, Integer, String, and_, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow
from regdesk.security import token_hash


class LinkPurpose(enum.StrEnum):
    VERIFY_EMAIL = "verify_email"  # also a changed address, until it is verified
    RESET_PASSWORD = "reset_password"
    # A WebAuthn challenge (security_keys.py): never mailed, but as single-use and short-lived.
    SECURITY_KEY_ADD = "security_key_add"
    SECURITY_KEY_LOGIN = "security_key_login"


LIFETIMES = {
    LinkPurpose.VERIFY_EMAIL: dt.timedelta(hours=48),
    LinkPurpose.RESET_PASSWORD: dt.timedelta(hours=1),
    LinkPurpose.SECURITY_KEY_ADD: dt.timedelta(minutes=5),
    LinkPurpose.SECURITY_KEY_LOGIN: dt.timedelta(minutes=5),
}


class AccountLink(Base):
    __tablename__ = "account_links"
    __table_args__ = (Index("ix_account_links_user_id_purpose", "user_id", "purpose"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    purpose: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    email: Mapped[str | None] = mapped_column(String(320))  # the address a link verifies
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


@dataclass(frozen=True)
class Link:
    user_id: int
    purpose: LinkPurpose
    email: str | None


def issue_link(
    session: Session, user_id: int, purpose: LinkPurpose, *, email: str | None = None
) -> str:
    """A new link's token (to put in the mail; never stored). The user's earlier unused links
    of the same purpose stop working: only the newest mail counts."""
    now = utcnow()
    session.execute(
        update(AccountLink)
        .where(
            AccountLink.user_id == user_id,
            AccountLink.purpose == purpose.value,
            AccountLink.used_at.is_(None),
        )
        .values(used_at=now)
    )
    token = secrets.token_urlsafe(32)
    session.add(
        AccountLink(
            purpose=purpose.value,
            user_id=user_id,
            token_hash=token_hash(token),
            email=email,
            created_at=now,
            expires_at=now + LIFETIMES[purpose],
        )
    )
    session.flush()
    return token


def peek_link(session: Session, token: str, purpose: LinkPurpose) -> Link | None:
    """What a link would do, if it still works (to show its form), without using it."""
    row = session.execute(
        select(AccountLink.user_id, AccountLink.email).where(_usable(token, purpose, utcnow()))
    ).first()
    return Link(row.user_id, purpose, row.email) if row is not None else None


def newest_link_address(session: Session, user_id: int, purpose: LinkPurpose) -> str | None:
    """The address of the user's working link of `purpose` (only the newest works), if any."""
    return session.scalar(
        select(AccountLink.email).where(
            AccountLink.user_id == user_id,
            AccountLink.purpose == purpose.value,
            AccountLink.used_at.is_(None),
            AccountLink.expires_at > utcnow(),
        )
    )


def use_link(session: Session, token: str, purpose: LinkPurpose) -> Link | None:
    """The link, used up (in the session's transaction): None when it is unknown, used,
    expired or for another purpose."""
    now = utcnow()
    row = session.execute(
        update(AccountLink)
        .where(_usable(token, purpose, now))
        .values(used_at=now)
        .returning(AccountLink.user_id, AccountLink.email)
    ).first()
    return Link(row.user_id, purpose, row.email) if row is not None else None


def _usable(token: str, purpose: LinkPurpose, now: dt.datetime) -> ColumnElement[bool]:
    return and_(
        AccountLink.token_hash == token_hash(token),
        AccountLink.purpose == purpose.value,
        AccountLink.used_at.is_(None),
        AccountLink.expires_at > now,
    )
