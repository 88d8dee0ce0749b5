"""The admin area's home tells an administrator of every webhook endpoint regdesk disabled
because its deliveries failed for 3 days (events.md, Delivery: "the admin area says so"),
naming the application and linking to the endpoint; not one disabled by hand, not once it is
enabled again, and not to a department lead, who cannot manage applications."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from tests.admin.support import People, seed_people
from tests.client import TestClient
from tests.conftest import PUBLIC_URL
from tests.web.support import make_user
from tests.webhooks.support import Clock, Receiver, application, endpoint, fail_for_three_days

from regdesk.app import create_app
from regdesk.audit.models import AuditEvent
from regdesk.config import load_settings
from regdesk.db import read_session

# Its query is its own (the endpoints with their applications, by the reason's beginning).
pytestmark = pytest.mark.postgresql_too

NOTICE = 'id="failing-webhooks"'


@pytest.fixture
def app(engine: Engine, database_url: str) -> FastAPI:
    return create_app(
        load_settings(database_url=database_url, public_url=PUBLIC_URL, webhooks_allow_private="on")
    )


@pytest.fixture
def people(engine: Engine, app: FastAPI, client: TestClient) -> People:
    return seed_people(engine, app, client)


def notice(html: str) -> str:
    found = re.search(rf"<section[^>]*{NOTICE}.*?</section>", html, re.S)
    return found.group(0) if found else ""


@pytest.fixture
def failing(engine: Engine, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """The Badge Printer's endpoint, disabled by regdesk: an event it refused for 3 days. Made
    before the app's own delivery thread starts (`people` starts it), so that one sender
    alone drives the attempts: (its application's id, its id)."""
    clock = Clock(monkeypatch)
    tools = application(engine, "Badge Printer")
    endpoint_id = endpoint(engine, receiver.url, client_id=tools)
    make_user(engine, "fox", password=None)
    fail_for_three_days(engine, receiver, clock)
    return tools, endpoint_id


def test_the_admin_home_names_an_endpoint_disabled_for_failing(
    failing: tuple[int, int], people: People, receiver: Receiver
) -> None:
    tools, endpoint_id = failing
    admin = people.admin
    shown = notice(admin.get("/admin").text)
    assert "Badge Printer" in shown
    here = f"/admin/applications/{tools}/webhooks/{endpoint_id}"
    assert f'href="{here}"' in shown
    assert receiver.url in shown
    assert "failed for 3 days" in shown
    # The link leads to the endpoint's page, which says why it is disabled.
    assert "every delivery failed for 3 days; the last: HTTP 503" in admin.get(here).text

    # A department lead manages no application: no notice for them.
    assert NOTICE not in people.security_lead.get("/admin").text

    # Enabled again by an administrator: the notice is gone.
    assert admin.post(f"{here}/enable").status_code == 303
    assert NOTICE not in admin.get("/admin").text


def test_an_endpoint_disabled_by_hand_is_not_named_on_the_admin_home(
    engine: Engine, people: People, receiver: Receiver
) -> None:
    admin = people.admin
    assert NOTICE not in admin.get("/admin").text
    tools = application(engine, "Discord roles")
    endpoint_id = endpoint(engine, receiver.url, client_id=tools)
    here = f"/admin/applications/{tools}/webhooks/{endpoint_id}"
    assert admin.post(f"{here}/disable").status_code == 303
    assert "This endpoint is disabled" in admin.get(here).text
    assert NOTICE not in admin.get("/admin").text


def test_regdesk_records_in_the_audit_log_that_it_disabled_a_failing_endpoint(
    engine: Engine, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    tools = application(engine, "Volunteer sync")
    endpoint_id = endpoint(engine, receiver.url, client_id=tools)
    make_user(engine, "fox", password=None)
    fail_for_three_days(engine, receiver, clock)
    with read_session(engine) as session:
        [event] = session.scalars(
            select(AuditEvent).where(AuditEvent.action == "webhook.endpoint_disabled")
        )
    assert (event.actor, event.target_type, event.target_id) == (
        "regdesk",
        "application",
        str(tools),
    )
    assert event.details == {"endpoint": endpoint_id, "reason": "every delivery failed for 3 days"}
