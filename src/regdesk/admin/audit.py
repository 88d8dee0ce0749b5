"""The audit log in the admin area (issue 8): every recorded event, newest first, filtered by
action, actor, target and dates, a page at a time (keyset: `before` is the last id shown).

The query is `regdesk.audit.service.search_events`, which `regdesk audit` uses too.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from regdesk.admin.access import AdminDep
from regdesk.admin.pages import staff_context
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import (
    EventPage,
    recorded_actions,
    recorded_target_types,
    search_events,
)
from regdesk.formats import format_timestamp
from regdesk.schemas import record_id
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/audit")

PAGE_SIZE = 50
MAX_TEXT = 200  # the actor column's length; longer filters cannot match
# Where a target or an actor of these kinds is shown in the admin area.
PAGES = {
    "user": "/admin/users/{}",
    "application": "/admin/applications/{}",
    "department": "/admin/departments/{}",
    "product": "/admin/products/{}",
    "order": "/admin/orders/{}",  # by its number
    "registration": "/admin/registrations/{}",
}

TextQuery = Annotated[str, Query()]


@dataclass
class Filters:
    """The filter form as typed, what is wrong with it, and the values to search with."""

    action: str = ""
    actor: str = ""
    target_type: str = ""
    target_id: str = ""
    since: str = ""
    until: str = ""
    errors: dict[str, str] = field(default_factory=dict)

    def day(self, key: str) -> dt.date | None:
        text: str = getattr(self, key)
        if not text:
            return None
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            self.errors[key] = f"{text!r} is not a date: write it as 2026-07-04."
            return None

    def check(self) -> tuple[dt.datetime | None, dt.datetime | None]:
        """The date range as [since, until) in UTC; `until` takes in the whole of its day."""
        for key in ("actor", "target_id"):
            if len(getattr(self, key)) > MAX_TEXT:
                self.errors[key] = f"At most {MAX_TEXT} characters."
        first, last = self.day("since"), self.day("until")
        since = _midnight(first) if first else None
        until = _midnight(last) + dt.timedelta(days=1) if last else None
        if since and until and since >= until:
            self.errors["until"] = "The end date comes before the start date."
        return since, until

    def query(self, **more: str) -> str:
        """These filters (and `more`) as a query string, leaving out the empty ones."""
        values = {
            "action": self.action,
            "actor": self.actor,
            "target_type": self.target_type,
            "target_id": self.target_id,
            "since": self.since,
            "until": self.until,
            **more,
        }
        return urlencode({key: value for key, value in values.items() if value})


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Row:
    """One event as the table shows it."""

    event: AuditEvent
    time: str
    actor_page: str | None
    target: str
    target_page: str | None
    details: list[tuple[str, str]]


def _row(event: AuditEvent) -> Row:
    target = f"{event.target_type} {event.target_id}" if event.target_type else ""
    if event.target_id is not None and not event.target_type:
        target = event.target_id
    return Row(
        event=event,
        time=format_timestamp(event.occurred_at),
        actor_page=_page_of("user", event.actor_user_id),
        target=target,
        target_page=_page_of(event.target_type, event.target_id),
        details=[(key, _shown(value)) for key, value in sorted(event.details.items())],
    )


def _page_of(kind: str | None, identifier: object) -> str | None:
    if kind not in PAGES or identifier is None or record_id(str(identifier)) is None:
        return None
    return PAGES[kind].format(identifier)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@router.get("")
def audit_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    action: TextQuery = "",
    actor: TextQuery = "",
    target_type: TextQuery = "",
    target_id: TextQuery = "",
    since: TextQuery = "",
    until: TextQuery = "",
    before: TextQuery = "",
) -> HTMLResponse:
    filters = Filters(
        action=action.strip(),
        actor=actor.strip(),
        target_type=target_type.strip(),
        target_id=target_id.strip(),
        since=since.strip(),
        until=until.strip(),
    )
    start, end = filters.check()
    page = EventPage([], None)
    if not filters.errors:
        page = search_events(
            db,
            actions=[filters.action] if filters.action else (),
            actor=filters.actor or None,
            target_type=filters.target_type or None,
            target_id=filters.target_id or None,
            since=start,
            until=end,
            before_id=record_id(before),
            limit=PAGE_SIZE,
        )
    return render(
        request,
        "admin/audit.html",
        staff_context(
            staffer,
            filters=filters,
            actions=_with(recorded_actions(db), filters.action),
            target_types=_with(recorded_target_types(db), filters.target_type),
            rows=[_row(event) for event in page.events],
            older=f"?{filters.query(before=str(page.older))}" if page.older else None,
            newest=f"?{filters.query()}" if before else None,
        ),
        status_code=400 if filters.errors else 200,
    )


def _with(known: list[str], chosen: str) -> list[str]:
    """The choices of a select, keeping one chosen from a link even when it is not known."""
    return known if not chosen or chosen in known else [*known, chosen]
