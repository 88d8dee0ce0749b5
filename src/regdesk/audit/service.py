"""Recording audit events, in the same transaction as the change they describe."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.db import utcnow


@dataclass(frozen=True)
class Actor:
    """Who is acting: an organizer at the command line, a signed-in user, or an application."""

    label: str
    user_id: int | None = None
    ip_address: str | None = None

    @classmethod
    def command_line(cls) -> Actor:
        try:
            name = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry, as in some containers
            name = "unknown"
        return cls(label=f"cli:{name}")


def record_event(
    session: Session,
    actor: Actor,
    action: str,
    *,
    target_type: str | None = None,
    target_id: object | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    session.execute(
        insert(AuditEvent).values(
            occurred_at=utcnow(),
            action=action,
            actor=actor.label,
            actor_user_id=actor.user_id,
            ip_address=actor.ip_address,
            target_type=target_type,
            target_id=None if target_id is None else str(target_id),
            details=details or {},
        )
    )
