"""The desk's pages (registrations.md, Pages): who may use them, the one search box for every
kind of input, checking in (once), the unpaid rule with the payment taken at the desk, and
the CSRF token on every form. Pages run the same code on either database: SQLite only here
(test_search.py runs the search's queries on both)."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.oauth.permissions import DESK
from tests.admin.registering import order_row
from tests.admin.support import People, Person, person
from tests.client import TestClient
from tests.desk.support import Queue, queue
from tests.web.support import audit, form

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def line(engine: Engine) -> Queue:
    return queue(engine)


@pytest.fixture
def dee(app: FastAPI, engine: Engine, people: People) -> Person:
    """Desk staff: `registration:desk`, nothing else (not an organizer)."""
    return person(app, engine, "dee", permissions=[DESK])


def standing(html: str) -> str:
    found = re.search(r'<p id="standing"[^>]*>(.*?)</p>', html, re.S)
    assert found, "no status on the page"
    return " ".join(found.group(1).split())


def search_box_has_focus(html: str) -> bool:
    return re.search(r'<input id="q" name="q" type="search" value="" autofocus', html) is not None


# --- who may use it -------------------------------------------------------------------------


def test_desk_staff_and_administrators_may_use_the_desk_and_no_one_else(
    people: People, dee: Person, client: TestClient, app: FastAPI, engine: Engine
) -> None:
    signed_out = client.get("/desk", follow_redirects=False)
    assert signed_out.status_code == 303
    assert signed_out.headers["location"] == "/login?next=%2Fdesk"
    assert people.attendee.get("/desk").status_code == 403
    assert people.security_lead.get("/desk").status_code == 403  # a lead, not desk staff
    assert dee.get("/desk").status_code == 200
    assert people.admin.get("/desk").status_code == 200
    assert 'href="/desk"' in dee.get("/account").text
    assert 'href="/desk"' not in people.attendee.get("/account").text
    assert dee.get("/admin").status_code == 403


# --- the search box -------------------------------------------------------------------------


def test_a_scanned_code_or_an_order_id_opens_the_card_at_once(
    people: People, line: Queue, engine: Engine
) -> None:
    code = line.code(engine, line.fox)
    page = people.admin.get("/desk")
    assert search_box_has_focus(page.text)
    assert form(page.text, "/desk").method == "get"  # Enter submits it: no click, no script
    for typed in (code, code.lower(), f"  {code}\n", line.fox.number):
        card = people.admin.get("/desk", params={"q": typed})
        assert card.status_code == 200
        assert '<h1 id="person">Fae Fox</h1>' in card.text
        assert standing(card.text) == "Paid"
        assert search_box_has_focus(card.text)  # empty: the next scan starts afresh
    owl = people.admin.get("/desk", params={"q": line.code(engine, line.owl)})
    assert standing(owl.text) == "Unpaid: $65.00 due"
    cat = people.admin.get("/desk", params={"q": line.cat.number})
    assert standing(cat.text) == "Cancelled"


def test_a_forged_code_is_said_to_be_one(people: People, line: Queue, engine: Engine) -> None:
    code = line.code(engine, line.fox)
    page = people.admin.get("/desk", params={"q": code[:-1] + ("A" if code[-1] != "A" else "B")})
    assert "its signature does not verify" in page.text
    assert "Fae Fox" not in page.text


def test_names_e_mails_and_badge_names_list_the_matches(people: People, line: Queue) -> None:
    def listed(typed: str) -> list[str]:
        page = people.admin.get("/desk", params={"q": typed})
        assert page.status_code == 200
        return re.findall(r'<a href="/desk/\d+">([^<]+)</a>', page.text)

    assert listed("fae") == ["Fae Fox", "Fae Owl", "Fae Cat"]  # first name; cancelled too
    assert listed("OWL") == ["Fae Owl"]  # a username or last name, any case
    assert listed("fae fox") == ["Fae Fox"]  # "first last"
    assert listed("olive@example.org") == ["Fae Owl"]  # a whole e-mail
    assert listed("night") == ["Fae Owl"]  # a badge name's start
    assert listed("nobody") == []
    assert "Nobody of the current event matches" in people.admin.get("/desk?q=zz").text
    assert listed("99999999") == []  # digits: an order id, which no order has


# --- checking in ----------------------------------------------------------------------------


def test_check_in_then_a_second_desk_is_told_who_did_it(
    people: People, dee: Person, line: Queue, engine: Engine
) -> None:
    card = f"/desk/{line.fox.registration_id}"
    page = people.admin.get(card)
    assert form(page.text, f"{card}/check-in").method == "post"
    done = dee.post(f"{card}/check-in")
    assert done.status_code == 303
    assert done.headers["location"] == f"{card}?done=checked-in"
    after = dee.get(done.headers["location"])
    assert standing(after.text) == "Checked in"
    assert "by Fae Dee (dee)" in after.text
    assert search_box_has_focus(after.text)  # for the next person
    # The admin's card was opened before: their click comes second.
    again = people.admin.post(f"{card}/check-in")
    assert again.status_code == 409
    assert "Already checked in" in again.text
    assert "by Fae Dee (dee). Nothing was done." in again.text
    rescanned = people.admin.get("/desk", params={"q": line.code(engine, line.fox)})
    assert standing(rescanned.text) == "Already checked in"
    assert f'action="/desk/{line.fox.registration_id}/check-in"' not in rescanned.text
    (event,) = audit(engine, "registration.checked_in")
    assert event.target_id == str(line.fox.registration_id)
    assert event.actor_user_id == line.registration(engine, line.fox).checked_in_by


def test_an_unpaid_order_is_paid_at_the_desk_before_check_in(
    dee: Person, line: Queue, engine: Engine
) -> None:
    card = f"/desk/{line.owl.registration_id}"
    page = dee.get(card)
    assert standing(page.text) == "Unpaid: $65.00 due"
    assert f'action="{card}/check-in"' not in page.text  # no override for desk staff
    refused = dee.post(f"{card}/check-in", {"override": "yes"})
    assert refused.status_code == 409
    assert "the order is unpaid" in refused.text
    assert line.registration(engine, line.owl).checked_in_at is None
    paid = dee.post(f"{card}/pay", {"reference": "R-17"})
    assert paid.status_code == 303
    order = order_row(engine, line.owl)
    assert (order.status, order.payment_method, order.payment_reference) == ("paid", "desk", "R-17")
    (event,) = [e for e in audit(engine, "order.paid") if e.target_id == line.owl.number]
    assert event.details["after"] == {"status": "paid", "method": "desk"}
    assert event.actor_user_id == dee.user_id
    assert standing(dee.get(card).text) == "Paid"
    assert dee.post(f"{card}/check-in").status_code == 303


def test_an_administrator_may_override_and_it_is_recorded(
    people: People, line: Queue, engine: Engine
) -> None:
    card = f"/desk/{line.cat.registration_id}"
    page = people.admin.get(card)
    assert "Check in anyway" in page.text
    done = people.admin.post(f"{card}/check-in", {"override": "yes"})
    assert done.status_code == 303
    (event,) = audit(engine, "registration.checked_in_by_override")
    assert (event.actor_user_id, event.details["orderStatus"]) == (
        people.admin.user_id,
        "cancelled",
    )


def test_every_form_needs_the_sessions_csrf_token(
    dee: Person, line: Queue, engine: Engine, people: People
) -> None:
    for path, data in (
        (f"/desk/{line.fox.registration_id}/check-in", {}),
        (f"/desk/{line.owl.registration_id}/pay", {"reference": "x"}),
    ):
        for token in ("", people.admin.csrf_token()):  # none, and another session's
            answer = dee.post(path, data, token=token)
            assert answer.status_code == 403, path
    assert line.registration(engine, line.fox).checked_in_at is None
    assert order_row(engine, line.owl).status == "unpaid"
    assert audit(engine, "registration.checked_in") == []


def test_an_unknown_registration_is_a_404(dee: Person) -> None:
    for path in ("/desk/999999", "/desk/abc"):
        assert dee.get(path).status_code == 404
    assert dee.post("/desk/999999/check-in").status_code == 404
