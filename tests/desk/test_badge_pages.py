"""The badge pages (desk/badge_pages.py): who may open them, what a badge shows (its name in
large type, the product, the ticket's QR code) and how it prints (4 x 3 in, one to a sheet,
nothing else on paper), marking one or a batch printed with the staff member recorded, and
the CSRF token on each form. Pages: SQLite only (test_badges.py runs the queries on both)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine
from sqlalchemy.orm import Session

import regdesk.web
from regdesk.db import write_session
from regdesk.desk.badge_pages import BADGE_QR_SCALE
from regdesk.desk.badges import PRINTED
from regdesk.oauth.permissions import DESK
from regdesk.registrations.models import Registration
from regdesk.registrations.ticket_codes import ticket_of
from regdesk.web.qr import qr_svg
from tests.admin.support import People, Person, person
from tests.client import TestClient
from tests.desk.support import Printing, printing
from tests.web.support import audit, form, forms

STYLESHEET = Path(regdesk.web.__file__).parent / "static" / "badges.css"


@pytest.fixture
def badges(engine: Engine) -> Printing:
    return printing(engine)


@pytest.fixture
def dee(app: FastAPI, engine: Engine, people: People) -> Person:
    return person(app, engine, "dee", permissions=[DESK])


def badge_url(registration_id: int) -> str:
    return f"/desk/registrations/{registration_id}/badge"


def printed_at(engine: Engine, registration_id: int) -> object:
    with Session(engine) as session:
        return session.get_one(Registration, registration_id).badge_printed_at


def badge_names(html: str) -> list[str]:
    return re.findall(r'<p class="badge-name badge-name-\w+">([^<]*)</p>', html)


def test_only_desk_staff_and_administrators_open_the_badge_pages(
    people: People, dee: Person, client: TestClient, badges: Printing, engine: Engine
) -> None:
    for path in (badge_url(badges.id("fox")), "/desk/badges"):
        signed_out = client.get(path, follow_redirects=False)
        assert signed_out.status_code == 303
        assert signed_out.headers["location"].startswith("/login?next=")
        assert people.attendee.get(path).status_code == 403
        assert people.security_lead.get(path).status_code == 403  # a lead, not desk staff
        assert dee.get(path).status_code == 200
        assert people.admin.get(path).status_code == 200
    for path in (f"{badge_url(badges.id('fox'))}/printed", "/desk/badges/printed"):
        assert people.attendee.post(path, {"registration": badges.id("fox")}).status_code == 403
    assert printed_at(engine, badges.id("fox")) is None


def test_a_badge_shows_its_name_large_the_product_and_the_ticket_qr_code(
    dee: Person, badges: Printing, engine: Engine
) -> None:
    page = dee.get(badge_url(badges.id("fox")))
    assert page.status_code == 200
    assert badge_names(page.text) == ["Fae the Fox"]
    assert '<p class="badge-name badge-name-short">Fae the Fox</p>' in page.text
    assert '<p class="badge-product">Attendee</p>' in page.text
    with write_session(engine) as session:
        code = session.get_one(Registration, badges.id("fox")).ticket_code
        ticket = ticket_of(session, code)
    assert str(qr_svg(ticket, "badge-qr", scale=BADGE_QR_SCALE)) in page.text  # scans as a ticket
    assert '<link rel="stylesheet" href="/static/badges.css">' in page.text
    elk = dee.get(badge_url(badges.id("elk")))
    assert badge_names(elk.text) == ["Fae Elk"]  # no badge name: the person's name


def test_the_badge_prints_on_four_by_three_inch_stock_one_to_a_sheet_and_alone(
    client: TestClient,
) -> None:
    css = client.get("/static/badges.css")
    assert css.status_code == 200
    assert css.text == STYLESHEET.read_text()
    rules = " ".join(css.text.split())
    assert "@page { size: 4in 3in; margin: 0; }" in rules  # no browser margins or headers
    assert ".badge { width: 4in; height: 3in;" in rules
    printed = rules.split("@media print {", 1)[1]
    assert ".site-header, .desk-nav, .no-print { display: none !important; }" in printed
    assert ".badge { border: 0; break-after: page; page-break-after: always; }" in printed


def test_a_long_badge_name_gets_smaller_type(dee: Person, badges: Printing, engine: Engine) -> None:
    with write_session(engine) as session:
        session.get_one(Registration, badges.id("fox")).badge_name = "Fae " * 20
    page = dee.get(badge_url(badges.id("fox")))
    assert re.search(r'<p class="badge-name badge-name-long">(Fae ){19}Fae ?</p>', page.text)


def test_marking_a_badge_printed_records_when_and_by_whom(
    dee: Person, badges: Printing, engine: Engine
) -> None:
    page = dee.get(badge_url(badges.id("fox")))
    assert "Not printed yet." in page.text
    action = f"{badge_url(badges.id('fox'))}/printed"
    assert form(page.text, action).buttons[0]["text"] == "Mark printed"
    done = dee.post(action)
    assert done.status_code == 303
    assert done.headers["location"] == f"/desk/{badges.id('fox')}?done=printed"
    card = dee.get(done.headers["location"])
    assert "The badge is marked printed." in card.text
    assert re.search(
        r'<dd id="badge-printed">Printed \d{4}-\d\d-\d\d \d\d:\d\d UTC</dd>', card.text
    )
    assert printed_at(engine, badges.id("fox")) is not None
    (event,) = audit(engine, PRINTED)
    assert (event.target_id, event.actor_user_id) == (str(badges.id("fox")), dee.user_id)
    again = dee.get(badge_url(badges.id("fox")))
    assert form(again.text, action).buttons[0]["text"] == "Mark printed again"  # a reprint
    assert dee.post(action).status_code == 303
    assert len(audit(engine, PRINTED)) == 2


def test_an_unpaid_or_cancelled_registration_has_no_badge_to_print(
    dee: Person, badges: Printing, engine: Engine
) -> None:
    for name in ("owl", "cat"):
        page = dee.get(badge_url(badges.id(name)))
        assert page.status_code == 200
        assert "No badge: the order is not paid" in page.text
        assert badge_names(page.text) == []
        assert 'class="badge-qr"' not in page.text
        refused = dee.post(f"{badge_url(badges.id(name))}/printed")
        assert refused.status_code == 409
        assert "Nothing was recorded." in refused.text
        assert printed_at(engine, badges.id(name)) is None
    owl_card = dee.get(f"/desk/{badges.id('owl')}")
    assert badge_url(badges.id("owl")) not in owl_card.text
    fox_card = dee.get(f"/desk/{badges.id('fox')}")
    assert f'href="{badge_url(badges.id("fox"))}">Print badge</a>' in fox_card.text
    assert audit(engine, PRINTED) == []


def test_the_batch_is_chosen_printed_and_marked_in_one_go(
    dee: Person, badges: Printing, engine: Engine
) -> None:
    page = dee.get("/desk/badges")  # not yet printed, every product: the live, paid ones
    assert badge_names(page.text) == ["Fae the Fox", "Fae Elk", "Ram"]
    assert 'id="batch-count" role="status">3 badges below.' in page.text
    assert badge_names(dee.get(f"/desk/badges?product={badges.sponsor}").text) == ["Fae Elk"]
    assert badge_names(dee.get(f"/desk/badges?flag={badges.fursuits}").text) == ["Fae the Fox"]
    two = dee.get(f"/desk/badges?product={badges.attendee}&limit=1")
    assert badge_names(two.text) == ["Fae the Fox"]
    assert (
        f'href="/desk/badges?product={badges.attendee}&amp;printed=no&amp;limit=1&amp;after={badges.id("fox")}"'
        in two.text
    )

    mark = form(page.text, "/desk/badges/printed")
    assert mark.buttons[0]["text"] == "Mark these 3 printed"
    sent = [f for f in forms(page.text) if f.action == "/desk/badges/printed"]
    assert len(sent) == 1
    ids = re.findall(r'<input type="hidden" name="registration" value="(\d+)">', page.text)
    assert ids == [str(badges.id(n)) for n in ("fox", "elk", "ram")]
    done = dee.post("/desk/badges/printed", {"registration": ids, "printed": "no"})
    assert done.status_code == 303
    after = dee.get(done.headers["location"])
    assert "3 badges marked printed." in after.text
    assert badge_names(after.text) == []  # every badge printed: none left
    assert "No badge to print with these choices." in after.text
    assert badge_names(dee.get("/desk/badges?printed=any").text) == [
        "Fae the Fox",
        "Fae Elk",
        "Ram",
    ]
    recorded = audit(engine, PRINTED)
    assert sorted(int(e.target_id or 0) for e in recorded) == sorted(map(int, ids))
    assert {(e.actor_user_id, e.details["batch"]) for e in recorded} == {(dee.user_id, 3)}


def test_the_badge_forms_need_the_sessions_csrf_token(
    dee: Person, badges: Printing, engine: Engine, people: People
) -> None:
    for path, data in (
        (f"{badge_url(badges.id('fox'))}/printed", {}),
        ("/desk/badges/printed", {"registration": str(badges.id("fox"))}),
    ):
        for token in ("", people.admin.csrf_token()):  # none, and another session's
            assert dee.post(path, data, token=token).status_code == 403, path
    assert printed_at(engine, badges.id("fox")) is None
    assert audit(engine, PRINTED) == []


def test_an_unknown_registration_has_no_badge_page(dee: Person) -> None:
    for path in (badge_url(999_999), "/desk/registrations/abc/badge"):
        assert dee.get(path).status_code == 404
    assert dee.post(f"{badge_url(999_999)}/printed").status_code == 404
