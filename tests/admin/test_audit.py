"""The audit log page (issue 8): every event newest first, filtered by action, actor, target
and dates, a page at a time."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

import pytest
from sqlalchemy import Engine, update

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor, record_event
from regdesk.db import write_session
from regdesk.registrations.models import Registration
from regdesk.registrations.service import edit_registration
from tests.admin.registering import ACTOR, make_product, registered
from tests.admin.support import People
from tests.client import TestClient
from tests.conftest import Apps
from tests.web.support import log_in

ROW = re.compile(
    r"<tr>\s*<td class=\"nowrap\"><time datetime=\"([^\"]+)\">[^<]+</time></td>\s*"
    r"<td><code>([^<]+)</code></td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*"
    r"<td>(.*?)</td>\s*</tr>",
    re.S,
)


def rows(page: str) -> list[dict[str, str]]:
    """The table as text: time, action, actor, target, ip, details."""
    found = []
    for time, action, actor, target, ip, details in ROW.findall(page):
        plain = [re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", cell))).strip()
                 for cell in (actor, target, ip, details)]  # fmt: skip
        found.append(
            {
                "time": time,
                "action": action,
                "actor": plain[0],
                "target": plain[1],
                "ip": plain[2],
                "details": plain[3],
                "actor_html": actor,
                "target_html": target,
            }
        )
    return found


def test_the_log_shows_each_event_newest_first_with_who_what_where(
    people: People, client: TestClient, apps: Apps
) -> None:
    log_in(client, "ada", "wrong password")
    registered = apps.register(name="Badge Printer")
    page = people.admin.get("/admin/audit")
    assert page.status_code == 200
    shown = rows(page.text)
    assert [row["action"] for row in shown[:2]] == ["app.created", "user.login_failed"]
    created, failed = shown[0], shown[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", created["time"])
    assert created["target"] == f"application {registered.client_id}"
    assert f'href="/admin/applications/{registered.client_id}"' in created["target_html"]
    assert "name: Badge Printer" in created["details"]
    assert failed["actor"] == "anonymous"
    assert failed["ip"] == "testclient"
    assert failed["target"] == f"user {people.admin.user_id}"
    assert f'href="/admin/users/{people.admin.user_id}"' in failed["target_html"]
    assert failed["details"] == "reason: wrong_password"
    logins = [row for row in shown if row["action"] == "user.login"]
    assert f'href="/admin/users/{people.admin.user_id}"' in logins[-1]["actor_html"]
    times = [row["time"] for row in shown]
    assert times == sorted(times, reverse=True)


def test_filtering_by_action_lists_the_recorded_actions(people: People, client: TestClient) -> None:
    log_in(client, "ann", "wrong password")
    page = people.admin.get("/admin/audit", params={"action": "user.login_failed"})
    options = re.findall(r'<option value="([^"]*)"( selected)?>', page.text)
    assert ("user.login_failed", " selected") in options
    assert ("user.created", "") in options
    shown = rows(page.text)
    assert [row["action"] for row in shown] == ["user.login_failed"]
    assert shown[0]["target"] == f"user {people.attendee.user_id}"


@pytest.mark.postgresql_too
def test_filtering_by_actor_and_by_target(people: People, apps: Apps) -> None:
    first = apps.register(name="One")
    apps.register(name="Two")
    by_actor = rows(people.admin.get("/admin/audit", params={"actor": "test"}).text)
    assert {"app.created", "user.created"} <= {row["action"] for row in by_actor}
    assert all(row["actor"] == "test" for row in by_actor)
    by_target = rows(
        people.admin.get(
            "/admin/audit", params={"target_type": "application", "target_id": first.client_id}
        ).text
    )
    assert [(row["action"], row["details"]) for row in by_target] == [
        ("app.created", "imported_credentials: false name: One")
    ]
    nothing = people.admin.get("/admin/audit", params={"actor": "user:999"})
    assert rows(nothing.text) == []
    assert "No event matches these filters." in nothing.text


@pytest.mark.postgresql_too
def test_filtering_by_dates_takes_in_whole_days_in_utc(people: People, engine: Engine) -> None:
    with write_session(engine) as session:
        record_event(session, Actor("cli:old"), "demo.loaded")
        session.execute(
            update(AuditEvent)
            .where(AuditEvent.actor == "cli:old")
            .values(occurred_at=dt.datetime(2025, 3, 1, 23, 59, 59, tzinfo=dt.UTC))
        )
    day = {"since": "2025-03-01", "until": "2025-03-01"}
    assert [row["actor"] for row in rows(people.admin.get("/admin/audit", params=day).text)] == [
        "cli:old"
    ]
    later = {"since": "2025-03-02"}
    shown = rows(people.admin.get("/admin/audit", params=later).text)
    assert shown
    assert "cli:old" not in [row["actor"] for row in shown]
    earlier = {"until": "2025-02-28"}
    assert rows(people.admin.get("/admin/audit", params=earlier).text) == []


def test_bad_dates_are_shown_on_the_form(people: People) -> None:
    page = people.admin.get("/admin/audit", params={"since": "yesterday", "until": "2025-03-01"})
    assert page.status_code == 400
    assert "&#39;yesterday&#39; is not a date" in page.text
    assert re.search(
        r'id="since"[^>]*aria-describedby="since-error" aria-invalid="true"', page.text
    )
    assert 'value="yesterday"' in page.text
    backwards = people.admin.get(
        "/admin/audit", params={"since": "2025-03-02", "until": "2025-03-01"}
    )
    assert backwards.status_code == 400
    assert "The end date comes before the start date." in backwards.text


@pytest.mark.postgresql_too
def test_pages_follow_one_another_without_gaps_or_repeats(people: People, engine: Engine) -> None:
    with write_session(engine) as session:
        for n in range(120):
            record_event(session, Actor("cli:bulk"), "data.imported", details={"n": n})
    seen: list[str] = []
    path = "/admin/audit?actor=cli%3Abulk"
    pages = 0
    while path:
        page = people.admin.get(path)
        assert page.status_code == 200
        seen.extend(row["details"] for row in rows(page.text))
        pages += 1
        older = re.search(r'<a href="(/admin/audit\?[^"]+)" rel="next">Older events</a>', page.text)
        path = unescape(older.group(1)) if older else ""
        if pages > 1:
            assert "Newest events" in page.text
        if path:
            assert "actor=cli%3Abulk" in path
            assert "before=" in path
    assert pages == 3
    assert seen == [f"n: {n}" for n in reversed(range(120))]


def test_only_administrators_may_read_the_log(people: People) -> None:
    for person in (people.security_lead, people.attendee):
        assert person.get("/admin/audit").status_code == 403


def test_a_registrations_events_link_to_its_product_order_and_registration(
    people: People, engine: Engine
) -> None:
    """The targets of the sales' events are links to their pages in the admin area, and each
    link leads to the page of that very record."""
    product = make_product(engine, "sponsor")
    held = registered(engine, people.attendee.user_id, product, badge="Ann")
    with write_session(engine) as session:
        registration = session.get(Registration, held.registration_id)
        assert registration is not None
        edit_registration(session, ACTOR, registration, badge="Ann the Owl", answers={})
    shown = rows(people.admin.get("/admin/audit").text)
    links = {row["action"]: re.search(r'href="([^"]+)"', row["target_html"]) for row in shown}
    expected = {
        "product.created": f"/admin/products/{product}",
        "order.created": f"/admin/orders/{held.number}",
        "registration.updated": f"/admin/registrations/{held.registration_id}",
    }
    for action, path in expected.items():
        link = links[action]
        assert link is not None, action
        assert link.group(1) == path
        assert people.admin.get(path).status_code == 200, path
