"""The ticket API's reads (desk/tickets.py): the live registration of the current event that
holds a ticket's code, as its record plus `checkedInAt`, or as the row a check-in changes."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.db import naive_utc
from regdesk.db.driver import LoopReads
from regdesk.documents.reading import complete
from regdesk.events.models import CURRENT_EVENT_ID
from regdesk.events.service import current_event
from regdesk.formats import format_timestamp
from regdesk.registrations.models import Registration
from regdesk.registrations.records import DOCUMENT

# The live registration of the current event holding a code, with its rendered record.
BY_CODE = DOCUMENT.read(
    f"""
    SELECT r.id, {{body}}, r.checked_in_at
    FROM registrations r{{documents}}
    WHERE r.ticket_code = :code AND r.event_id = {CURRENT_EVENT_ID} AND r.ended_at IS NULL
    """,  # noqa: S608 (the current event's subquery)
    "r.id",
)


async def record_by_code(reads: LoopReads, code: str) -> dict[str, Any] | None:
    row = await reads.first(BY_CODE, code=code)
    if row is None:
        return None
    registration_id, body, checked_in_at = row
    found = complete(reads, [(registration_id, body)], DOCUMENT)
    if not found:
        return None
    checked = (
        None
        if checked_in_at is None
        else format_timestamp(naive_utc(checked_in_at).replace(tzinfo=dt.UTC))
    )
    return {**json.loads(found[0]), "checkedInAt": checked}


def live_registration(db: Session, code: str) -> Registration | None:
    event = current_event(db)
    if event is None:
        return None
    return db.scalars(
        select(Registration).where(
            Registration.ticket_code == code,
            Registration.event_id == event.id,
            Registration.ended_at.is_(None),
        )
    ).one_or_none()
