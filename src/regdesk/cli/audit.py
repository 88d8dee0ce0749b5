"""`regdesk audit`: the audit trail, newest first, filtered (operator.md, Command line)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from regdesk.audit.models import AuditEvent
from regdesk.cli import Context, emit, json_option, main, pass_context
from regdesk.formats import format_timestamp


class Moment(click.ParamType[dt.datetime, Any]):
    """An ISO date (`2026-07-04`) or date and time (`2026-07-04T18:30`, UTC unless it says)."""

    name = "date"

    def __init__(self, *, end_of_day: bool) -> None:
        self.end_of_day = end_of_day  # --until DATE takes in the whole of that day

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> dt.datetime:
        if isinstance(value, dt.datetime):
            return value
        text = str(value).strip()
        try:
            if len(text) == len("2026-07-04"):
                day = dt.date.fromisoformat(text)
                moment = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
                return moment + dt.timedelta(days=1) if self.end_of_day else moment
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{text!r} is not an ISO date (2026-07-04) or date and time", param, ctx)
        return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment


def audit_target(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    kind, _, identifier = value.partition(":")
    if not kind.strip() or not identifier.strip():
        raise click.BadParameter(f"{value!r} is not TYPE:ID (for example application:3)")
    return kind.strip(), identifier.strip()


def audit_event_document(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "occurred_at": format_timestamp(event.occurred_at),
        "action": event.action,
        "actor": event.actor,
        "actor_user_id": event.actor_user_id,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "ip_address": event.ip_address,
        "details": event.details,
    }


def audit_event_text(event: AuditEvent) -> str:
    target = f"{event.target_type}:{event.target_id}" if event.target_type else "-"
    details = json.dumps(event.details, ensure_ascii=False, sort_keys=True) if event.details else ""
    return "  ".join(
        (
            format_timestamp(event.occurred_at),
            f"{event.action:<26}",
            f"{event.actor:<14}",
            f"{target:<16}",
            f"{event.ip_address or '-':<15}",
            details,
        )
    ).rstrip()


@main.command()
@click.option("--action", "actions", multiple=True, help="e.g. user.login_failed (repeatable).")
@click.option("--actor", help="Who acted, as the log writes it: user:17, cli:alice, app:3.")
@click.option("--target", callback=audit_target, help="What was acted on: TYPE:ID.")
@click.option("--user", "user_id", type=click.IntRange(1), help="Events by or about this user id.")
@click.option("--since", type=Moment(end_of_day=False), help="From this date or time (UTC).")
@click.option("--until", type=Moment(end_of_day=True), help="Up to this date (inclusive) or time.")
@click.option("--before", "before_id", type=click.IntRange(1), help="Events older than this id.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000))
@json_option
@pass_context
def audit(
    context: Context,
    actions: tuple[str, ...],
    actor: str | None,
    target: tuple[str, str] | None,
    user_id: int | None,
    since: dt.datetime | None,
    until: dt.datetime | None,
    before_id: int | None,
    limit: int,
    as_json: bool,
) -> None:
    """The audit trail, newest first: sign-ins, grants, revocations, changes of records."""
    from regdesk.audit.service import search_events

    if since is not None and until is not None and since >= until:
        raise click.UsageError("--since must come before --until")
    with context.reading() as session:
        page = search_events(
            session,
            actions=actions,
            actor=actor,
            user_id=user_id,
            target_type=target[0] if target else None,
            target_id=target[1] if target else None,
            since=since,
            until=until,
            before_id=before_id,
            limit=limit,
        )
    lines = [audit_event_text(event) for event in page.events] or ["no events"]
    if page.older is not None:
        lines.append(f"(older events: --before {page.older})")
    emit(
        as_json,
        {
            "events": [audit_event_document(event) for event in page.events],
            "older": page.older,
        },
        "\n".join(lines),
    )
