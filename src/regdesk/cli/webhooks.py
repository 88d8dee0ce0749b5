"""`regdesk webhooks`: an application's webhook endpoints (events.md, Admin area and CLI)."""

from __future__ import annotations

from typing import Any

import click

from regdesk.audit.service import Actor
from regdesk.cli import Context, emit, json_option, main, pass_context
from regdesk.formats import format_timestamp
from regdesk.webhooks import endpoints as service
from regdesk.webhooks.event_names import EVENT_NAMES
from regdesk.webhooks.models import WebhookEndpoint


def endpoint_document(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": endpoint.id,
        "client_id": str(endpoint.application_id),
        "url": endpoint.url,
        "events": endpoint.events,  # null: every event
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "created_at": format_timestamp(endpoint.created_at),
    }


def endpoint_text(endpoint: WebhookEndpoint) -> str:
    state = "enabled" if endpoint.enabled else f"DISABLED ({endpoint.disabled_reason})"
    events = " ".join(endpoint.events) if endpoint.events else "all events"
    return f"{endpoint.id:>6}  app {endpoint.application_id}  {endpoint.url}  {events}  {state}"


@main.group()
def webhooks() -> None:
    """Webhook endpoints: where an application is sent events."""


@webhooks.command("add")
@click.argument("client_id", type=int)
@click.option("--url", required=True, help="https://... (http on loopback when allowed)")
@click.option(
    "--event",
    "events",
    multiple=True,
    type=click.Choice(EVENT_NAMES),
    help="An event it wants (repeatable); none: every event.",
)
@json_option
@pass_context
def webhooks_add(
    context: Context, client_id: int, url: str, events: tuple[str, ...], as_json: bool
) -> None:
    """Add an endpoint to the application CLIENT_ID."""
    allow_private = context.settings.webhooks_allow_private == "on"
    with context.writing() as session:
        endpoint = service.add_endpoint(
            session, Actor.command_line(), client_id, url, events, allow_private=allow_private
        )
    emit(as_json, endpoint_document(endpoint), endpoint_text(endpoint))


@webhooks.command("list")
@click.argument("client_id", type=int, required=False)
@json_option
@pass_context
def webhooks_list(context: Context, client_id: int | None, as_json: bool) -> None:
    """Every endpoint, or those of the application CLIENT_ID. Only reads."""
    with context.reading() as session:
        found = service.list_endpoints(session, client_id)
    emit(
        as_json,
        {"endpoints": [endpoint_document(endpoint) for endpoint in found]},
        "\n".join(endpoint_text(endpoint) for endpoint in found) or "no webhook endpoints",
    )


@webhooks.command("remove")
@click.argument("endpoint_id", type=int)
@json_option
@pass_context
def webhooks_remove(context: Context, endpoint_id: int, as_json: bool) -> None:
    """Remove an endpoint: nothing more is sent to it."""
    with context.writing() as session:
        try:
            endpoint = service.get_endpoint(session, endpoint_id)
        except service.EndpointNotFound as exc:
            raise click.ClickException(str(exc)) from None
        service.remove_endpoint(session, Actor.command_line(), endpoint)
    emit(as_json, {"id": endpoint_id, "removed": True}, f"endpoint {endpoint_id} removed")
