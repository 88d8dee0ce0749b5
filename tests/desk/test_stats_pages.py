"""The desk's statistics page (desk/stats_pages.py): for desk staff and administrators only, it
shows desk/stats.py's figures (test_stats.py checks them on both databases) in tables, each
bar a <meter>. Pages: SQLite only."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.db import write_session
from regdesk.oauth.permissions import DESK
from regdesk.registrations.models import Registration
from tests.admin.registering import make_product, paid, registered
from tests.admin.support import People, Person, person
from tests.client import TestClient
from tests.web.support import make_user

STATS = "/desk/stats"


@pytest.fixture
def dee(app: FastAPI, engine: Engine, people: People) -> Person:
    return person(app, engine, "dee", permissions=[DESK])


def cells(html: str, table_id: str) -> list[list[str]]:
    table = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1]
    return [
        [
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_only_desk_staff_and_administrators_see_the_statistics(
    people: People, dee: Person, client: TestClient
) -> None:
    assert client.get(STATS, follow_redirects=False).headers["location"] == (
        "/login?next=%2Fdesk%2Fstats"
    )
    assert people.attendee.get(STATS).status_code == 403
    assert people.security_lead.get(STATS).status_code == 403
    assert dee.get(STATS).status_code == 200
    assert people.admin.get(STATS).status_code == 200
    assert 'href="/desk/stats"' in dee.get("/desk").text


def test_the_page_shows_each_hour_and_product(dee: Person, engine: Engine) -> None:
    attendee = make_product(engine, "attendee", display_name="Attendee")
    held = [registered(engine, make_user(engine, name), attendee) for name in ("fox", "elk", "yak")]
    for each in held:
        paid(engine, each)
    with write_session(engine) as session:
        for each, minute in zip(held[:2], (5, 125), strict=True):
            moment = dt.datetime(2026, 7, 3, 9, tzinfo=dt.UTC) + dt.timedelta(minutes=minute)
            session.get_one(Registration, each.registration_id).checked_in_at = moment
    page = dee.get(STATS)
    assert page.status_code == 200
    totals = re.sub(r"\s+", " ", page.text.split('id="totals"', 1)[1].split("</dl>", 1)[0])
    assert "<dt>Checked in</dt> <dd>2</dd>" in totals
    assert "<dt>Still to come</dt> <dd>1 " in totals
    assert "<dt>Sold</dt> <dd>3 " in totals
    assert cells(page.text, "products") == [["Attendee", "2", "3", "1", "2 of 3"]]
    assert "Friday 2026-07-03: 2 checked in" in page.text
    hours = cells(page.text.split("desk-hours", 1)[1], "day-2026-07-03")
    assert [row[:2] for row in hours] == [
        ["09:00–10:00", "1"],
        ["10:00–11:00", "0"],
        ["11:00–12:00", "1"],
    ]
    assert '<meter min="0" max="1" value="0"' in page.text  # the empty hour, against the busiest


def test_before_anyone_comes_the_page_says_so(dee: Person, engine: Engine) -> None:
    make_product(engine, "attendee")
    page = dee.get(STATS)
    assert "Nobody is checked in yet." in page.text
