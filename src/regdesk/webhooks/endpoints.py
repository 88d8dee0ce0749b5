"""An application's webhook endpoints (events.md, Subscriptions; Admin area and CLI): add,
list, enable or disable, remove, send a test event, redeliver an event; and those regdesk
disabled itself, failing for 3 days, which the admin area's home names. The admin pages and
`regdesk webhooks` both call these; each change records its audit event."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.errors import Invalid
from regdesk.oauth.applications import get_application
from regdesk.oauth.models import Application
from regdesk.outbox.models import OutboxMessage, OutboxStatus
from regdesk.outbox.service import enqueue
from regdesk.webhooks.capture import CHANNEL, message
from regdesk.webhooks.event_names import EVENT_NAMES, PING
from regdesk.webhooks.models import WebhookDelivery, WebhookEndpoint
from regdesk.webhooks.targets import TargetRefused, resolve


class EndpointNotFound(LookupError):
    pass


def add_endpoint(
    session: Session,
    actor: Actor,
    application_id: int,
    url: str,
    events: Sequence[str] = (),
    *,
    allow_private: bool,
) -> WebhookEndpoint:
    """A new enabled endpoint of the application, for `events` (none named: every event).
    The URL is refused unless its host resolves to allowed addresses (webhooks.targets)."""
    application = get_application(session, application_id)  # ApplicationNotFound
    unknown = sorted(set(events) - set(EVENT_NAMES))
    if unknown:
        raise Invalid({"events": f"no such event: {', '.join(unknown)}"})
    try:
        target = resolve(url, allow_private=allow_private)
    except TargetRefused as refused:
        raise Invalid({"url": f"{refused}"}) from None
    chosen = [name for name in EVENT_NAMES if name in set(events)] or None
    endpoint = WebhookEndpoint(application_id=application.id, url=target.url, events=chosen)
    session.add(endpoint)
    session.flush()
    record_event(
        session,
        actor,
        "webhook.endpoint_added",
        target_type="application",
        target_id=application.id,
        details={"endpoint": endpoint.id, "url": endpoint.url, "events": chosen},
    )
    return endpoint


def list_endpoints(session: Session, application_id: int | None = None) -> list[WebhookEndpoint]:
    query = select(WebhookEndpoint).order_by(WebhookEndpoint.id)
    if application_id is not None:
        query = query.where(WebhookEndpoint.application_id == application_id)
    return list(session.scalars(query))


def get_endpoint(
    session: Session, endpoint_id: int, application_id: int | None = None
) -> WebhookEndpoint:
    """The endpoint (of that application, when given: each sees only its own)."""
    endpoint = session.get(WebhookEndpoint, endpoint_id)
    if endpoint is None or application_id not in (None, endpoint.application_id):
        raise EndpointNotFound(f"no webhook endpoint {endpoint_id}")
    return endpoint


def set_enabled(
    session: Session, actor: Actor, endpoint: WebhookEndpoint, enabled: bool, reason: str = ""
) -> None:
    if endpoint.enabled == enabled:
        return
    endpoint.enabled = enabled
    endpoint.disabled_at = None if enabled else utcnow()
    endpoint.disabled_reason = None if enabled else reason or f"disabled by {actor.label}"
    record_event(
        session,
        actor,
        "webhook.endpoint_enabled" if enabled else "webhook.endpoint_disabled",
        target_type="application",
        target_id=endpoint.application_id,
        details={"endpoint": endpoint.id},
    )


def remove_endpoint(session: Session, actor: Actor, endpoint: WebhookEndpoint) -> None:
    """The endpoint and its delivery log go; its undelivered events are given up when their
    turn comes (the outbox keeps them, marked failed)."""
    session.delete(endpoint)
    record_event(
        session,
        actor,
        "webhook.endpoint_removed",
        target_type="application",
        target_id=endpoint.application_id,
        details={"endpoint": endpoint.id, "url": endpoint.url},
    )


FAILING = "every delivery failed for 3 days"  # how a disabled endpoint's reason begins
SERVICE = Actor("regdesk")  # the audit log's actor when regdesk disables an endpoint itself


def disable_failing(session: Session, endpoint_id: int, since: dt.datetime, error: str) -> bool:
    """The endpoint disabled, unless a delivery to it succeeded since `since` (events.md: an
    endpoint failing for 3 days is disabled, and the admin area says so); True when it was."""
    succeeded = session.scalar(
        select(WebhookDelivery.id)
        .where(
            WebhookDelivery.endpoint_id == endpoint_id,
            WebhookDelivery.attempted_at >= since,
            WebhookDelivery.status_code.between(200, 299),
        )
        .limit(1)
    )
    if succeeded is not None:
        return False
    now = utcnow()
    application_id = session.scalar(
        update(WebhookEndpoint)
        .where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.enabled)
        .values(
            enabled=False,
            disabled_at=now,
            disabled_reason=f"{FAILING}; the last: {error}"[:2000],
        )
        .returning(WebhookEndpoint.application_id)
    )
    if application_id is None:
        return False
    record_event(
        session,
        SERVICE,
        "webhook.endpoint_disabled",
        target_type="application",
        target_id=application_id,
        details={"endpoint": endpoint_id, "reason": FAILING},
    )
    return True


@dataclass(frozen=True)
class Failing:
    """An endpoint regdesk disabled because every delivery to it failed, with its application."""

    application_id: int
    application_name: str
    endpoint_id: int
    url: str
    disabled_at: dt.datetime | None


def disabled_by_failure(session: Session) -> list[Failing]:
    """The endpoints disabled for failing (not by hand), most recent first: the admin area's
    home names them until each is enabled again or removed."""
    rows = session.execute(
        select(
            Application.id,
            Application.name,
            WebhookEndpoint.id,
            WebhookEndpoint.url,
            WebhookEndpoint.disabled_at,
        )
        .join(Application, Application.id == WebhookEndpoint.application_id)
        .where(
            WebhookEndpoint.enabled.is_(False),
            WebhookEndpoint.disabled_reason.startswith(FAILING, autoescape=True),
        )
        .order_by(WebhookEndpoint.disabled_at.desc(), WebhookEndpoint.id.desc())
    )
    return [Failing(*row) for row in rows]


# --- test events and redeliveries -----------------------------------------------------------


def send_test(session: Session, actor: Actor, endpoint: WebhookEndpoint) -> int:
    """A `ping` to this endpoint, whatever events it wants: its outbox message's id."""
    if not endpoint.enabled:
        raise Invalid({"endpoint": "the endpoint is disabled: enable it first"})
    message_id = enqueue(session, CHANNEL, message(endpoint.id, PING, "{}"))
    record_event(
        session,
        actor,
        "webhook.test_sent",
        target_type="application",
        target_id=endpoint.application_id,
        details={"endpoint": endpoint.id, "message": message_id},
    )
    return message_id


def redeliver(session: Session, actor: Actor, endpoint: WebhookEndpoint, message_id: int) -> int:
    """A new attempt of an event already delivered or given up on, with the same `webhook-id`
    and body, on a schedule of its own: the new outbox message's id."""
    if not endpoint.enabled:
        raise Invalid({"endpoint": "the endpoint is disabled: enable it first"})
    found = session.get(OutboxMessage, message_id)
    if found is None or found.channel != CHANNEL or found.payload.get("endpoint") != endpoint.id:
        raise Invalid({"message": f"no event {message_id} for this endpoint"})
    if found.status == OutboxStatus.PENDING:
        raise Invalid({"message": "this event is still being delivered"})
    new_id = enqueue(session, CHANNEL, dict(found.payload))
    record_event(
        session,
        actor,
        "webhook.redelivered",
        target_type="application",
        target_id=endpoint.application_id,
        details={"endpoint": endpoint.id, "message": message_id, "as": new_id},
    )
    return new_id


# --- the delivery log -----------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One line of the delivery log, with where its event stands now."""

    delivery: WebhookDelivery
    status: str  # the outbox message's: pending, sent, failed


def last_deliveries(session: Session, endpoint_id: int, limit: int = 25) -> list[Attempt]:
    rows = session.execute(
        select(WebhookDelivery, OutboxMessage.status)
        .outerjoin(OutboxMessage, OutboxMessage.id == WebhookDelivery.message_id)
        .where(WebhookDelivery.endpoint_id == endpoint_id)
        .order_by(WebhookDelivery.id.desc())
        .limit(limit)
    ).all()
    return [Attempt(delivery, status or OutboxStatus.SENT.value) for delivery, status in rows]
