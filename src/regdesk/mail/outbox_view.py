"""The mail in the outbox as organizers read it: the admin area's page and `regdesk mail list`
share `list_mail`. Only a message's recipient and subject are read, never its bodies: their
links are secrets (a sign-in link, a password reset), kept sealed (mail/service.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from regdesk.mail.service import CHANNEL
from regdesk.mail.smtp import SmtpServer
from regdesk.outbox.models import OutboxMessage, OutboxStatus

STATUSES = [status.value for status in OutboxStatus]


@dataclass(frozen=True)
class Mail:
    """One message as listed: to whom, about what, and how its delivery goes."""

    id: int
    status: str
    to: str
    subject: str
    attempts: int
    created_at: dt.datetime
    sent_at: dt.datetime | None
    last_error: str | None


@dataclass(frozen=True)
class MailPage:
    """Messages newest first; `older` is the `before_id` of the next page, None on the last."""

    messages: list[Mail]
    older: int | None


_LISTED = select(
    OutboxMessage.id,
    OutboxMessage.status,
    OutboxMessage.payload["to"].as_string(),
    OutboxMessage.payload["subject"].as_string(),
    OutboxMessage.attempts,
    OutboxMessage.created_at,
    OutboxMessage.sent_at,
    OutboxMessage.last_error,
).where(OutboxMessage.channel == CHANNEL)


def list_mail(
    session: Session,
    *,
    status: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> MailPage:
    """The messages of `status` (any when None), newest first, keyset-paginated by id."""
    query = _LISTED
    if status is not None:
        query = query.where(OutboxMessage.status == status)
    if before_id is not None:
        query = query.where(OutboxMessage.id < before_id)
    rows = session.execute(query.order_by(OutboxMessage.id.desc()).limit(limit + 1))
    found = [Mail(*row) for row in rows]
    older = found[limit - 1].id if len(found) > limit else None
    return MailPage(found[:limit], older)


def find_mail(session: Session, message_id: int) -> Mail | None:
    row = session.execute(_LISTED.where(OutboxMessage.id == message_id)).one_or_none()
    return None if row is None else Mail(*row)


def count_mail(session: Session) -> dict[str, int]:
    """How many messages each status holds, every status named (0 when none)."""
    counts = dict.fromkeys(STATUSES, 0)
    counts.update(
        session.execute(
            select(OutboxMessage.status, func.count())
            .where(OutboxMessage.channel == CHANNEL)
            .group_by(OutboxMessage.status)
        ).all()
    )
    return counts


def server_address(smtp_url: str) -> str:
    """`host:port` of REGDESK_SMTP_URL's server, without its user or password."""
    server = SmtpServer.from_url(smtp_url)
    host = f"[{server.host}]" if ":" in server.host else server.host  # IPv6
    return f"{host}:{server.port}"
