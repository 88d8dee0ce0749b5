"""An application's webhook endpoints in the admin area (events.md, Admin area and CLI): added
on the application's page; each endpoint's own page with its last deliveries, "Send test
event", "Redeliver", enable/disable, remove. A disabled endpoint says why.

The writes are `regdesk.webhooks.endpoints`' own, which `regdesk webhooks` uses too.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, Response

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.application_form import ApplicationForm
from regdesk.admin.applications import _application, _application_page
from regdesk.admin.pages import admin_page, missing, path_number, see_other
from regdesk.config import Settings
from regdesk.errors import Invalid
from regdesk.oauth.models import Application
from regdesk.web.visitor import PageDb
from regdesk.webhooks import endpoints as service
from regdesk.webhooks.models import WebhookEndpoint

router = APIRouter(prefix="/applications/{client_id}/webhooks")

SECTION = "applications"
NOTICES = {
    "added": "The endpoint was added: it is sent the events it wants from now on.",
    "enabled": "The endpoint is enabled: it is sent the events it wants from now on.",
    "disabled": "The endpoint is disabled: no event is written for it until it is enabled.",
    "removed": "The endpoint was removed.",
    "pinged": "A test event (ping) is on its way: its delivery shows below in a moment.",
    "redelivered": "The event is sent again, with the same webhook-id.",
}


def _endpoint(
    request: Request, staffer: Staffer, db: PageDb, client_id: str, endpoint_id: str
) -> tuple[Application, WebhookEndpoint]:
    """The application and its endpoint of the page's path, or the 404 page."""
    application = _application(request, staffer, db, client_id)
    try:
        return application, service.get_endpoint(db, path_number(endpoint_id), application.id)
    except service.EndpointNotFound:
        raise missing(request, staffer, SECTION, "webhook endpoint", endpoint_id) from None


def _here(application: Application, endpoint: WebhookEndpoint) -> str:
    return f"/admin/applications/{application.id}/webhooks/{endpoint.id}"


@router.post("")
def add_endpoint(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    client_id: str,
    url: Annotated[str, Form()] = "",
    events: Annotated[list[str], Form()] = [],  # noqa: B006 (FastAPI copies defaults)
) -> Response:
    """An endpoint for the events ticked (none ticked: every event)."""
    application = _application(request, staffer, db, client_id)
    settings: Settings = request.app.state.settings
    try:
        endpoint = service.add_endpoint(
            db,
            staffer.actor,
            application.id,
            url,
            events,
            allow_private=settings.webhooks_allow_private == "on",
        )
    except Invalid as refused:
        return _application_page(
            request,
            staffer,
            application,
            ApplicationForm.of(application),
            status_code=400,
            webhook_form={"url": url, "events": events, "errors": refused.errors},
        )
    return see_other(_here(application, endpoint), "added")


@router.get("/{endpoint_id}")
def endpoint_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    client_id: str,
    endpoint_id: str,
    done: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    application, endpoint = _endpoint(request, staffer, db, client_id, endpoint_id)
    return admin_page(
        request,
        "admin/webhook_endpoint.html",
        staffer,
        SECTION,
        application=application,
        endpoint=endpoint,
        attempts=service.last_deliveries(db, endpoint.id),
        notice=NOTICES.get(done or ""),
        refused=None,
    )


@router.post("/{endpoint_id}/enable")
def enable_endpoint(
    request: Request, staffer: AdminDep, db: PageDb, client_id: str, endpoint_id: str
) -> Response:
    application, endpoint = _endpoint(request, staffer, db, client_id, endpoint_id)
    service.set_enabled(db, staffer.actor, endpoint, True)
    return see_other(_here(application, endpoint), "enabled")


@router.post("/{endpoint_id}/disable")
def disable_endpoint(
    request: Request, staffer: AdminDep, db: PageDb, client_id: str, endpoint_id: str
) -> Response:
    application, endpoint = _endpoint(request, staffer, db, client_id, endpoint_id)
    service.set_enabled(db, staffer.actor, endpoint, False)
    return see_other(_here(application, endpoint), "disabled")


@router.post("/{endpoint_id}/remove")
def remove_endpoint(
    request: Request, staffer: AdminDep, db: PageDb, client_id: str, endpoint_id: str
) -> Response:
    application, endpoint = _endpoint(request, staffer, db, client_id, endpoint_id)
    service.remove_endpoint(db, staffer.actor, endpoint)
    return see_other(f"/admin/applications/{application.id}", "endpoint_removed")


@router.post("/{endpoint_id}/ping")
def send_test_event(
    request: Request, staffer: AdminDep, db: PageDb, client_id: str, endpoint_id: str
) -> Response:
    application, endpoint = _endpoint(request, staffer, db, client_id, endpoint_id)
    try:
        service.send_test(db, staffer.actor, endpoint)
    except Invalid as refused:
        return _refused(request, staffer, db, application, endpoint, refused)
    return see_other(_here(application, endpoint), "pinged")


@router.post("/{endpoint_id}/redeliver")
def redeliver_event(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    client_id: str,
    endpoint_id: str,
    message: Annotated[str, Form()] = "",
) -> Response:
    application, endpoint = _endpoint(request, staffer, db, client_id, endpoint_id)
    try:
        service.redeliver(db, staffer.actor, endpoint, path_number(message))
    except Invalid as refused:
        return _refused(request, staffer, db, application, endpoint, refused)
    return see_other(_here(application, endpoint), "redelivered")


def _refused(
    request: Request,
    staffer: Staffer,
    db: PageDb,
    application: Application,
    endpoint: WebhookEndpoint,
    refused: Invalid,
) -> HTMLResponse:
    return admin_page(
        request,
        "admin/webhook_endpoint.html",
        staffer,
        SECTION,
        status_code=400,
        application=application,
        endpoint=endpoint,
        attempts=service.last_deliveries(db, endpoint.id),
        notice=None,
        refused=" ".join(refused.errors.values()),
    )
