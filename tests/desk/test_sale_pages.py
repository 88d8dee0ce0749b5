"""The on-site sale page (desk/sale_pages.py): reached from a search that found nobody, one
submit that makes the person, sells, takes the payment and checks in, landing on the card with
"Print badge"; a refusal (sold out, a taken username) shown at its field with nothing written
and nothing typed lost; staff-only products on offer. Pages: SQLite only (test_sale.py runs
the service on both databases)."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from regdesk.oauth.permissions import DESK
from regdesk.registrations.models import Order, Registration
from regdesk.users.models import User
from regdesk.users.service import find_by_login
from tests.admin.registering import make_product, paid, registered
from tests.admin.support import People, Person, person
from tests.client import TestClient
from tests.web.support import Form, audit, form, forms, make_user

SALE = "/desk/sale"


@pytest.fixture
def dee(app: FastAPI, engine: Engine, people: People) -> Person:
    return person(app, engine, "dee", permissions=[DESK])


def standing(html: str) -> str:
    found = re.search(r'<p id="standing"[^>]*>(.*?)</p>', html, re.S)
    assert found, "no status on the page"
    return " ".join(found.group(1).split())


def rows(engine: Engine) -> tuple[int, int]:
    with Session(engine) as session:
        users = session.scalar(select(func.count()).select_from(User)) or 0
        orders = session.scalar(select(func.count()).select_from(Order)) or 0
        return users, orders


def sale_form(html: str) -> Form:
    """The sale itself (the page's other form, GET, finds the person)."""
    (found,) = [f for f in forms(html) if f.action == SALE and f.method == "post"]
    return found


def new_person(product: int, **more: str) -> dict[str, str]:
    return {
        "person": "new",
        "username": "zed",
        "email": "zed@example.org",
        "first_name": "Zed",
        "last_name": "Zebra",
        "product": str(product),
        "check_in": "yes",
        **more,
    }


def test_only_desk_staff_and_administrators_sell(
    people: People, dee: Person, client: TestClient, engine: Engine
) -> None:
    attendee = make_product(engine, "attendee")
    signed_out = client.get(SALE, follow_redirects=False)
    assert signed_out.headers["location"] == "/login?next=%2Fdesk%2Fsale"
    assert people.attendee.get(SALE).status_code == 403
    assert people.security_lead.get(SALE).status_code == 403
    assert dee.get(SALE).status_code == 200
    assert people.admin.get(SALE).status_code == 200
    assert people.attendee.post(SALE, new_person(attendee)).status_code == 403
    assert rows(engine)[1] == 0


def test_a_search_that_finds_nobody_leads_to_a_sale_with_what_was_typed(
    dee: Person, engine: Engine
) -> None:
    make_product(engine, "attendee")
    desk = dee.get("/desk", params={"q": "zed@example.org"})
    assert "Nobody of the current event matches" in desk.text
    assert 'href="/desk/sale?q=zed%40example.org"' in desk.text
    page = dee.get("/desk/sale?q=zed%40example.org")
    sale = sale_form(page.text)
    assert sale.fields["email"] == "zed@example.org"  # guessed from the search
    assert re.search(r'id="person-new" name="person" type="radio" value="new" checked', page.text)
    named = sale_form(dee.get("/desk/sale?q=Zed+Zebra").text).fields
    assert (named["first_name"], named["last_name"]) == ("Zed", "Zebra")
    assert 'href="/desk/sale"' in dee.get("/desk").text  # "New sale" from every desk page


def test_one_submit_sells_takes_the_payment_checks_in_and_opens_the_card(
    dee: Person, engine: Engine
) -> None:
    attendee = make_product(engine, "attendee", price="65.00", display_name="Attendee")
    done = dee.post(SALE, new_person(attendee, badge_name="Zed!", reference="Card 77"))
    assert done.status_code == 303
    location = done.headers["location"]
    assert re.fullmatch(r"/desk/\d+\?done=sold-checked-in", location)
    card = dee.get(location)
    assert "Sold, paid at the desk, and checked in." in card.text
    assert standing(card.text) == "Checked in"
    assert "by Fae Dee (dee)" in card.text
    registration_id = int(location.split("/")[2].split("?")[0])
    assert f'href="/desk/registrations/{registration_id}/badge">Print badge</a>' in card.text
    with Session(engine) as session:
        zed = find_by_login(session, "zed")
        assert zed is not None
        registration = session.get_one(Registration, registration_id)
        order = session.get_one(Order, registration.order_id)
    assert registration.user_id == zed.id
    assert (order.status, order.payment_method, order.payment_reference) == (
        "paid",
        "desk",
        "Card 77",
    )
    for action in ("user.created", "order.created", "order.paid", "registration.checked_in"):
        (event,) = [e for e in audit(engine, action) if e.actor_user_id == dee.user_id]
        assert event.target_id in (str(zed.id), order.number, str(registration_id)), action


def test_without_checking_in_the_card_waits_with_check_in_and_print_badge(
    dee: Person, engine: Engine
) -> None:
    attendee = make_product(engine, "attendee")
    owl = make_user(engine, "owl")
    page = dee.get(SALE, params={"q": "owl"})
    assert f'<input id="person-{owl}" name="person" type="radio" value="{owl}">' in page.text
    done = dee.post(SALE, {"person": str(owl), "product": str(attendee), "q": "owl"})
    assert done.status_code == 303
    assert done.headers["location"].endswith("?done=sold")
    card = dee.get(done.headers["location"])
    assert standing(card.text) == "Paid"
    assert "Sold: the order is paid at the desk." in card.text
    registration_id = done.headers["location"].split("/")[2].split("?")[0]
    assert form(card.text, f"/desk/{registration_id}/check-in").method == "post"
    assert f"/desk/registrations/{registration_id}/badge" in card.text


def test_a_sold_out_product_is_refused_in_the_form_and_nothing_is_written(
    dee: Person, engine: Engine
) -> None:
    last = make_product(engine, "last", capacity="1", display_name="Last one")
    registered(engine, make_user(engine, "fox"), last)
    page = dee.get(SALE)
    assert re.search(rf'<option value="{last}" disabled>Last one, \$65.00 \(sold out\)', page.text)
    before = rows(engine)
    refused = dee.post(SALE, new_person(last, badge_name="Zed!"))
    assert refused.status_code == 400
    assert '<a href="#product">Sold out.</a>' in refused.text
    assert '<p class="field-error" id="product-error">Sold out.</p>' in refused.text
    fields = sale_form(refused.text).fields
    assert (fields["username"], fields["email"], fields["badge_name"]) == (
        "zed",
        "zed@example.org",
        "Zed!",
    )
    assert rows(engine) == before  # no account, no order


def test_a_taken_username_is_said_at_its_field(dee: Person, engine: Engine) -> None:
    attendee = make_product(engine, "attendee")
    make_user(engine, "zed", email="other@example.org")
    before = rows(engine)
    refused = dee.post(SALE, new_person(attendee))
    assert refused.status_code == 400
    assert "The username &#39;zed&#39; is taken." in refused.text
    assert 'id="username" name="username" type="text" value="zed"' in refused.text
    assert rows(engine) == before
    nobody = dee.post(SALE, {"product": str(attendee)})
    assert nobody.status_code == 400
    assert "Choose the person, or a new one." in nobody.text
    no_product = dee.post(SALE, {"person": "new"})
    assert "Choose a product." in no_product.text


def test_staff_only_products_are_on_offer_at_the_desk(dee: Person, engine: Engine) -> None:
    crew = make_product(engine, "crew", price="0", public=False, display_name="Crew")
    page = dee.get(SALE)
    assert re.search(rf'<option value="{crew}">Crew, \$0.00 \(staff only\)</option>', page.text)
    done = dee.post(SALE, new_person(crew))
    assert done.status_code == 303


def test_someone_registered_already_is_shown_with_their_card_not_sold_again(
    dee: Person, engine: Engine
) -> None:
    attendee = make_product(engine, "attendee")
    fox = make_user(engine, "fox")
    held = registered(engine, fox, attendee)
    paid(engine, held)
    page = dee.get(SALE, params={"q": "fox"})
    assert f'registered already. <a href="/desk/{held.registration_id}">Open their card</a>' in (
        page.text
    )
    assert f'value="{fox}"' not in page.text
    refused = dee.post(SALE, {"person": str(fox), "product": str(attendee)})
    assert refused.status_code == 400
    assert "Already registered for this event." in refused.text


def test_the_sale_form_needs_the_sessions_csrf_token(
    dee: Person, engine: Engine, people: People
) -> None:
    attendee = make_product(engine, "attendee")
    for token in ("", people.admin.csrf_token()):
        assert dee.post(SALE, new_person(attendee), token=token).status_code == 403
    assert rows(engine)[1] == 0
