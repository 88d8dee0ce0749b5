"""Events written in the writer's transaction (events.md: no change without its event, no event
without its change), whoever wrote it: the API, a page, the admin area, an import, the CLI, the
desk.

One seam sees every change: the record documents' refresh (regdesk.documents), which runs
before every write commits and knows which user, volunteer and registration records the
transaction changed. Those give `user-updated`, `registration-updated` (created, changed, paid,
cancelled, checked in: each moves the record's `updatedAt` or what it shows) and
`volunteer-updated`. What a record cannot tell (that a volunteer was submitted, deleted,
assigned to or unassigned from a department) the triggers of migration 0015 note in
`webhook_changes`, in the statement that made the change (cascades included), while an endpoint
is enabled; this hook takes those notes in the same transaction.

An event is written only for the enabled endpoints that want it: one outbox message per
(event, endpoint), its body's bytes fixed now (`body`), its `webhook-id` made now and kept on
every retry. Without an endpoint the cost is one query on an empty table.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from regdesk.departments.records import DOCUMENT as DEPARTMENT
from regdesk.documents.refresh import after_refresh
from regdesk.outbox.service import enqueue_many
from regdesk.registrations.models import Registration
from regdesk.registrations.records import DOCUMENT as REGISTRATION
from regdesk.users.records import DOCUMENT as USER
from regdesk.volunteers.models import Volunteer
from regdesk.volunteers.records import DOCUMENT as VOLUNTEER
from regdesk.webhooks.event_names import (
    REGISTRATION_UPDATED,
    USER_UPDATED,
    VOLUNTEER_ASSIGNED,
    VOLUNTEER_DELETED,
    VOLUNTEER_SUBMITTED,
    VOLUNTEER_UNASSIGNED,
    VOLUNTEER_UPDATED,
)
from regdesk.webhooks.models import WebhookChange, WebhookEndpoint

CHANNEL = "webhook"


def install() -> None:
    """Write events with every write from now on (the app and the command line, at start)."""
    after_refresh(capture, select(WebhookChange.event).exists())


@dataclass(frozen=True)
class Event:
    name: str
    data: str  # the `data` member's JSON text, exactly as the body holds it


def body(name: str, data: str) -> str:
    """events.md: exactly `{"event":"<name>","data":{...}}`."""
    return f'{{"event":{json.dumps(name)},"data":{data}}}'


def new_webhook_id() -> str:
    return f"msg_{secrets.token_urlsafe(18)}"


def write(
    session: Session, endpoints: Sequence[tuple[int, list[str] | None]], events: Iterable[Event]
) -> int:
    """One outbox message per event and endpoint that wants it; how many."""
    payloads = [
        message(endpoint_id, event.name, event.data)
        for event in events
        for endpoint_id, wanted in endpoints
        if wanted is None or event.name in wanted
    ]
    enqueue_many(session, CHANNEL, payloads)
    return len(payloads)


def message(
    endpoint_id: int, name: str, data: str, webhook_id: str | None = None
) -> dict[str, object]:
    return {
        "endpoint": endpoint_id,
        "webhookId": webhook_id or new_webhook_id(),
        "event": name,
        "body": body(name, data),
    }


def capture(session: Session, changed: dict[str, set[int]]) -> None:
    """documents.refresh's hook: the events of what this transaction changed."""
    notes = session.execute(
        delete(WebhookChange).returning(
            WebhookChange.event, WebhookChange.volunteer_id, WebhookChange.department_id
        )
    ).all()
    if not notes and not any(changed.values()):
        return
    endpoints = [
        (endpoint_id, events)
        for endpoint_id, events in session.execute(
            select(WebhookEndpoint.id, WebhookEndpoint.events).where(WebhookEndpoint.enabled)
        )
    ]
    if not endpoints:
        return
    wanted = _wanted(endpoints)
    events = _events(session, changed, notes, wanted)
    write(session, endpoints, events)


def _wanted(endpoints: Sequence[tuple[int, list[str] | None]]) -> set[str] | None:
    """The events any endpoint wants (None: every one)."""
    names: set[str] = set()
    for _, events in endpoints:
        if events is None:
            return None
        names.update(events)
    return names


def _events(
    session: Session,
    changed: dict[str, set[int]],
    notes: Sequence[tuple[str, int, int | None]],
    wanted: set[str] | None,
) -> list[Event]:
    def wants(name: str) -> bool:
        return wanted is None or name in wanted

    deleted = {volunteer for event, volunteer, _ in notes if event == VOLUNTEER_DELETED}
    submitted = {v for e, v, _ in notes if e == VOLUNTEER_SUBMITTED} - deleted
    # A state removed and set again in one transaction (a form saved as it was) is no change.
    net: Counter[tuple[int, int]] = Counter()
    for event, volunteer, department in notes:
        if department is not None and volunteer not in deleted:
            net[volunteer, department] += 1 if event == VOLUNTEER_ASSIGNED else -1
    moved = {(v, d): count for (v, d), count in net.items() if count}
    updated = changed.get("volunteer", set()) - submitted - deleted - {v for v, _ in moved}

    named: list[tuple[str, int, int | None]] = [
        (VOLUNTEER_SUBMITTED, volunteer, None) for volunteer in sorted(submitted)
    ]
    named += [(VOLUNTEER_UPDATED, volunteer, None) for volunteer in sorted(updated)]
    named += [
        (VOLUNTEER_ASSIGNED if count > 0 else VOLUNTEER_UNASSIGNED, volunteer, department)
        for (volunteer, department), count in sorted(moved.items())
    ]
    named = [(name, v, d) for name, v, d in named if wants(name)]
    records = _volunteer_records(session, {volunteer for _, volunteer, _ in named})
    departments = DEPARTMENT.render(session, {d for _, _, d in named if d is not None})
    events: list[Event] = []
    for name, volunteer, department in named:
        if volunteer not in records:  # deleted since, with its user
            continue
        data = f'{{"volunteer":{records[volunteer]}'
        if department is not None:
            gone = json.dumps({"id": str(department)})  # deleted with its department
            data += f',"department":{departments.get(department, gone)}'
        events.append(Event(name, f"{data}}}"))
    if wants(VOLUNTEER_DELETED):
        events.extend(
            Event(VOLUNTEER_DELETED, f'{{"volunteer":{{"id":"{volunteer}"}}}}')
            for volunteer in sorted(deleted)
        )
    if wants(REGISTRATION_UPDATED) and changed.get("registration"):
        events.extend(_registration_events(session, changed["registration"]))
    if wants(USER_UPDATED) and changed.get("user"):
        rendered = USER.render(session, changed["user"])
        events.extend(
            Event(USER_UPDATED, f'{{"user":{rendered[user]}}}') for user in sorted(rendered)
        )
    return events


def _volunteer_records(session: Session, ids: set[int]) -> dict[int, str]:
    """`"volunteer":...,"user":...` of each volunteer that exists, as events.md shows them:
    the API's volunteer record with its `id`, and its user's record."""
    if not ids:
        return {}
    rendered = VOLUNTEER.render(session, ids)
    owners: dict[int, int] = dict(
        session.execute(
            select(Volunteer.id, Volunteer.user_id).where(Volunteer.id.in_(sorted(rendered)))
        ).all()
    )
    users = USER.render(session, set(owners.values()))
    return {
        volunteer: f'{_with_id(volunteer, record)},"user":{users[owners[volunteer]]}'
        for volunteer, record in rendered.items()
        if owners.get(volunteer) in users
    }


def _with_id(record_id: int, record: str) -> str:
    """A record's JSON with `"id"` first (the API's volunteer record has none of its own)."""
    return f'{{"id":"{record_id}",{record[1:]}' if record != "{}" else f'{{"id":"{record_id}"}}'


def _registration_events(session: Session, ids: set[int]) -> list[Event]:
    rendered = REGISTRATION.render(session, ids)
    owners: dict[int, int] = dict(
        session.execute(
            select(Registration.id, Registration.user_id).where(
                Registration.id.in_(sorted(rendered))
            )
        ).all()
    )
    users = USER.render(session, set(owners.values()))
    return [
        Event(
            REGISTRATION_UPDATED,
            f'{{"registration":{rendered[registration]},"user":{users[owners[registration]]}}}',
        )
        for registration in sorted(rendered)
        if owners.get(registration) in users
    ]
