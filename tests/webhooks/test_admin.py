"""The admin area's webhooks (events.md, Admin area and CLI): on an application's page its
endpoints and a form to add one; per endpoint the last deliveries, "Send test event",
"Redeliver", enable/disable (a disabled endpoint says why), remove. Forms carry the CSRF token."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from tests.admin.support import People, seed_people
from tests.client import TestClient
from tests.conftest import PUBLIC_URL
from tests.webhooks.support import Receiver, application, logged

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import read_session
from regdesk.webhooks.models import WebhookDelivery, WebhookEndpoint


@pytest.fixture
def app(engine: Engine, database_url: str) -> FastAPI:
    return create_app(
        load_settings(database_url=database_url, public_url=PUBLIC_URL, webhooks_allow_private="on")
    )


@pytest.fixture
def people(engine: Engine, app: FastAPI, client: TestClient) -> People:
    return seed_people(engine, app, client)


def endpoint_ids(engine: Engine) -> list[int]:
    with read_session(engine) as session:
        return list(session.scalars(select(WebhookEndpoint.id)))


def message_ids(engine: Engine) -> list[int]:
    with read_session(engine) as session:
        return list(session.scalars(select(WebhookDelivery.message_id)))


def test_an_administrator_adds_tests_redelivers_disables_and_removes(
    engine: Engine, people: People, receiver: Receiver
) -> None:
    admin = people.admin
    client_id = application(engine)
    page = f"/admin/applications/{client_id}"
    added = admin.post(f"{page}/webhooks", {"url": receiver.url, "events": ["ping"]})
    assert added.status_code == 303
    [endpoint_id] = endpoint_ids(engine)
    here = f"{page}/webhooks/{endpoint_id}"
    assert added.headers["location"] == f"{here}?done=added"
    assert receiver.url in admin.get(page).text

    assert admin.post(f"{here}/ping").status_code == 303
    [ping] = receiver.wait_for(1)
    assert ping.event == "ping"
    logged(engine, 1)
    shown = admin.get(here).text
    assert "HTTP 200" in shown
    assert "answer 200" in shown
    assert "Redeliver" in shown

    [message_id] = message_ids(engine)
    assert admin.post(f"{here}/redeliver", {"message": str(message_id)}).status_code == 303
    again = receiver.wait_for(2)[1]
    assert again.headers["webhook-id"] == ping.headers["webhook-id"]

    assert admin.post(f"{here}/disable").status_code == 303
    disabled = admin.get(here).text
    assert re.search(r"This endpoint is disabled.*disabled by", disabled, re.S)
    refused = admin.post(f"{here}/ping")
    assert refused.status_code == 400
    assert "enable it first" in refused.text
    assert admin.post(f"{here}/enable").status_code == 303
    assert "This endpoint is disabled" not in admin.get(here).text

    assert admin.post(f"{here}/remove").status_code == 303
    assert endpoint_ids(engine) == []
    assert admin.get(here).status_code == 404


def test_a_refused_url_is_shown_on_the_form(engine: Engine, people: People) -> None:
    client_id = application(engine)
    answer = people.admin.post(
        f"/admin/applications/{client_id}/webhooks", {"url": "ftp://files.example.org/"}
    )
    assert answer.status_code == 400
    assert "The URL must be absolute" in answer.text or "must be absolute" in answer.text
    assert 'aria-invalid="true"' in answer.text
    assert endpoint_ids(engine) == []


def test_a_forged_form_changes_nothing(engine: Engine, people: People, receiver: Receiver) -> None:
    client_id = application(engine)
    answer = people.admin.post(
        f"/admin/applications/{client_id}/webhooks", {"url": receiver.url}, token="forged"
    )
    assert answer.status_code == 403
    assert endpoint_ids(engine) == []


def test_an_endpoint_of_another_application_is_not_found(
    engine: Engine, people: People, receiver: Receiver
) -> None:
    mine, other = application(engine), application(engine, "Other")
    people.admin.post(f"/admin/applications/{mine}/webhooks", {"url": receiver.url})
    [endpoint_id] = endpoint_ids(engine)
    assert (
        people.admin.get(f"/admin/applications/{other}/webhooks/{endpoint_id}").status_code == 404
    )
