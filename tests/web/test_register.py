"""The attendee's registration page (/register, web/registering.py) and the ticket on /account,
on both databases, through the app as a browser uses it: registering for a product with a
badge name and answers, what is offered and refused, editing until the deadline, cancelling,
and the ticket's QR code (registrations.md, Pages)."""

from __future__ import annotations

import datetime as dt
import html
import re
from typing import Any
from urllib.parse import unquote

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.app import create_app
from regdesk.audit.service import Actor
from regdesk.config import load_settings
from regdesk.db import write_session
from regdesk.registrations.models import Order, OrderStatus, PaymentMethod
from regdesk.registrations.ordering import mark_paid
from regdesk.registrations.ticket_codes import ticket_of
from tests.admin.support import Person, person
from tests.client import TestClient
from tests.conftest import PUBLIC_URL
from tests.volunteers.support import field_error, is_checked
from tests.web.registering_support import (
    EVENT,
    HOUR,
    add_options,
    add_product,
    answers,
    form,
    live,
    orders,
    page_error,
    product_input,
    segno_path,
    set_edits_until,
    ticket_qr_path,
)
from tests.web.support import audit

INSTRUCTIONS = "Bank transfer to IBAN DE00 1234 5678 9000\nReference: your order number"


@pytest.fixture
def app(engine: Engine, database_url: str) -> FastAPI:
    """The app of tests/conftest.py, selling in euros, with payment instructions."""
    settings = load_settings(
        database_url=database_url,
        public_url=PUBLIC_URL,
        currency="EUR",
        payment_instructions=INSTRUCTIONS,
    )
    return create_app(settings)


@pytest.fixture
def products(engine: Engine) -> dict[str, int]:
    now = dt.datetime.now(dt.UTC)
    return {
        "attendee": add_product(engine, "attendee", display_name="Attendee", capacity=100),
        "sponsor": add_product(engine, "sponsor", display_name="Sponsor", price=12000, capacity=1),
        "day": add_product(engine, "day", display_name="Day pass", price=2550),  # unlimited
        "staff": add_product(engine, "staff", display_name="Staff", price=0, public=False),
        "early": add_product(engine, "early", display_name="Early bird", closes_at=now - HOUR),
        "late": add_product(engine, "late", display_name="At the door", opens_at=now + HOUR),
    }


@pytest.fixture
def options(engine: Engine, products: dict[str, int]) -> dict[str, int]:
    return add_options(engine)


@pytest.fixture
def fox(app: FastAPI, engine: Engine, client: TestClient) -> Person:
    """`client` runs the app's lifespan; fox has a browser (a client) of their own."""
    return person(app, engine, "fox")


@pytest.fixture
def owl(app: FastAPI, engine: Engine, client: TestClient) -> Person:
    return person(app, engine, "owl")


# --- registering --------------------------------------------------------------------------


def test_a_signed_out_visitor_is_sent_to_log_in_and_back(
    client: TestClient, engine: Engine, products: dict[str, int]
) -> None:
    page = client.get("/register", follow_redirects=False)
    assert page.status_code == 303
    assert unquote(page.headers["location"]) == "/login?next=/register"
    sent = client.post("/register", data={"product": products["attendee"]}, follow_redirects=False)
    assert sent.status_code == 303
    assert sent.headers["location"].startswith("/login?")
    assert orders(engine) == 0


def test_the_form_offers_public_products_on_sale_with_price_and_places_left(
    fox: Person, owl: Person, products: dict[str, int], options: dict[str, int]
) -> None:
    assert owl.post("/register", form(products["sponsor"], options)).status_code == 303
    page = fox.get("/register")
    assert page.status_code == 200
    assert f"Register for {EVENT}" in page.text
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.text))
    assert "Attendee €65.00 100 left" in text
    assert "Sponsor €120.00 Sold out" in text
    assert re.search(r"Day pass €25\.50 (?!\d+ left)", text)  # unlimited: no count
    assert " disabled" in product_input(page.text, products["sponsor"])
    assert " disabled" not in product_input(page.text, products["attendee"])
    for hidden in ("Staff", "Early bird", "At the door"):  # staff-only, closed, not yet open
        assert hidden not in text
    for name, option in options.items():
        assert name in text
        assert f'name="option-{option}"' in page.text


def test_an_attendee_registers_and_sees_the_order_and_how_to_pay(
    fox: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    sent = form(
        products["attendee"],
        options,
        {"T-shirt size": "M", "Diet": ["Vegan", "No nuts"], "Fursuit": "Red fox", "Nights": "3"},
    )
    response = fox.post("/register", sent)
    assert response.status_code == 303
    assert response.headers["location"] == "/register"

    held = live(engine, fox.user_id)
    assert held is not None
    order, registration = held
    assert (order.amount, order.currency, order.status) == (6500, "EUR", "unpaid")
    assert order.product_id == products["attendee"]
    assert registration.badge_name == "Fae the Fox"
    assert answers(engine, registration.id) == {
        options["T-shirt size"]: "M",
        options["Diet"]: ["Vegan", "No nuts"],
        options["Fursuit"]: "Red fox",
        options["Nights"]: 3,
    }
    (created,) = audit(engine, "order.created")
    assert created.actor == f"user:{fox.user_id}"
    assert created.target_id == order.number

    page = fox.get("/register")
    assert page.status_code == 200
    assert "Your registration" in page.text
    assert f'<dd class="order-number">{order.number}</dd>' in page.text
    assert "<dd>Attendee</dd>" in page.text
    assert "<dd>€65.00</dd>" in page.text
    assert ">Unpaid</span>" in page.text
    # The instructions as plain text, escaped, their line break kept (white-space: pre-line).
    assert f'<p class="payment-instructions">{html.escape(INSTRUCTIONS)}</p>' in page.text
    assert 'value="Fae the Fox"' in page.text
    assert is_checked(page.text, f"option-{options['T-shirt size']}-1")  # M
    assert 'href="/register/cancel">Cancel this order</a>' in page.text


def test_sold_out_is_shown_and_refused_and_what_was_typed_is_kept(
    fox: Person, owl: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    assert owl.post("/register", form(products["sponsor"], options)).status_code == 303
    refused = fox.post("/register", form(products["sponsor"], options, {"T-shirt size": "L"}))
    assert refused.status_code == 400
    assert field_error(refused.text, "product") == "Sold out."
    assert 'value="Fae the Fox"' in refused.text
    assert is_checked(refused.text, f"option-{options['T-shirt size']}-2")  # L
    assert live(engine, fox.user_id) is None
    assert orders(engine) == 1


@pytest.mark.parametrize(
    ("product", "message"),
    [
        ("staff", "This product is sold at the desk only."),
        ("early", "This product is not on sale now."),
        ("late", "This product is not on sale now."),
        ("999999", "No such product."),
        ("", "Choose a product."),
        ("cheap", "No such product."),
    ],
)
def test_a_product_not_offered_is_refused_if_posted(
    fox: Person,
    engine: Engine,
    products: dict[str, int],
    options: dict[str, int],
    product: str,
    message: str,
) -> None:
    sent = {**form(0, options), "product": str(products.get(product, product))}
    refused = fox.post("/register", sent)
    assert refused.status_code == 400
    assert field_error(refused.text, "product") == message
    assert orders(engine) == 0


def test_one_already_registered_is_refused(
    fox: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    assert fox.post("/register", form(products["attendee"], options)).status_code == 303
    again = fox.post("/register", form(products["day"], options))
    assert again.status_code == 400
    assert page_error(again.text) == "You are already registered for this event."
    assert "Your registration" in again.text  # and the page shows the order they hold
    assert orders(engine) == 1


def test_answers_and_the_badge_name_are_checked_and_what_was_typed_is_kept(
    fox: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    sent = {
        **form(
            products["attendee"],
            options,
            {"T-shirt size": "XXL", "Nights": "many", "Fursuit": "ok"},
        ),
        "badgeName": "x" * 101,
    }
    refused = fox.post("/register", sent)
    assert refused.status_code == 400
    assert field_error(refused.text, f"option-{options['T-shirt size']}") == (
        "Choose among the choices given."
    )
    assert field_error(refused.text, f"option-{options['Nights']}") == (
        "Enter a number, such as 12 or 7.5."
    )
    assert field_error(refused.text, "badgeName").startswith("The badge name ")
    assert re.search(rf'id="option-{options["Nights"]}"[^>]*value="many"', refused.text)
    assert re.search(rf'id="option-{options["Fursuit"]}"[^>]*value="ok"', refused.text)
    assert orders(engine) == 0

    diet = {**form(products["attendee"], options), f"option-{options['Diet']}": ["Paleo"]}
    refused = fox.post("/register", diet)
    assert field_error(refused.text, f"option-{options['Diet']}") == (
        "Choose among the choices given."
    )
    assert orders(engine) == 0


# --- editing and cancelling ----------------------------------------------------------------


def test_badge_name_and_answers_can_be_changed_until_the_deadline(
    app: FastAPI, fox: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    fox.post("/register", form(products["attendee"], options, {"T-shirt size": "M", "Nights": "2"}))
    set_edits_until(app, dt.datetime(2999, 6, 1, tzinfo=dt.UTC))
    page = fox.get("/register")
    assert "You can change these until 1 June 2999 at 00:00 UTC." in page.text

    changed = {"badgeName": "Fae", f"option-{options['T-shirt size']}": "L"}
    saved = fox.post("/register/edit", changed)
    assert saved.status_code == 303
    assert saved.headers["location"] == "/register?saved"
    held = live(engine, fox.user_id)
    assert held is not None
    assert held[1].badge_name == "Fae"
    # Every option is on the form: "Nights", left empty, is no longer answered.
    assert answers(engine, held[1].id) == {options["T-shirt size"]: "L"}
    (updated,) = audit(engine, "registration.updated")
    assert updated.details == {"fields": ["badgeName", "T-shirt size", "Nights"]}
    assert "Your changes were saved." in fox.get("/register?saved").text

    bad = fox.post("/register/edit", {"badgeName": "Fae\u0007"})
    assert bad.status_code == 400
    assert field_error(bad.text, "badgeName") == "The badge name may not hold control characters."

    set_edits_until(app, dt.datetime.now(dt.UTC) - HOUR)
    closed = fox.get("/register")
    assert 'action="/register/edit"' not in closed.text
    assert "Changes closed on " in closed.text
    assert "<dd>Fae</dd>" in closed.text
    refused = fox.post("/register/edit", {"badgeName": "Too late"})
    assert refused.status_code == 400
    assert page_error(refused.text) == "Registrations can no longer be changed."
    held = live(engine, fox.user_id)
    assert held is not None
    assert held[1].badge_name == "Fae"


def test_cancelling_an_unpaid_order_frees_its_place_and_lets_the_user_register_again(
    fox: Person, owl: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    assert fox.post("/register", form(products["sponsor"], options)).status_code == 303
    assert "Sold out" in owl.get("/register").text
    held = live(engine, fox.user_id)
    assert held is not None
    number = held[0].number

    confirm = fox.get("/register/cancel")
    assert confirm.status_code == 200
    assert f"Cancel order {number}?" in confirm.text
    assert f'name="order" value="{number}"' in confirm.text
    cancelled = fox.post("/register/cancel", {"order": number})
    assert cancelled.status_code == 303
    assert cancelled.headers["location"] == "/register?cancelled"
    assert live(engine, fox.user_id) is None
    with Session(engine) as session:
        assert session.scalars(select(Order.status)).one() == OrderStatus.CANCELLED
    (event,) = audit(engine, "order.cancelled")
    assert event.actor == f"user:{fox.user_id}"
    assert "Your order was cancelled." in fox.get("/register?cancelled").text

    # The place is free again: owl takes it, and fox registers again for another product.
    assert owl.post("/register", form(products["sponsor"], options)).status_code == 303
    assert fox.post("/register", form(products["attendee"], options)).status_code == 303
    assert live(engine, fox.user_id) is not None
    # A form for the cancelled order cancels nothing newer.
    assert fox.post("/register/cancel", {"order": number}).status_code == 303
    assert live(engine, fox.user_id) is not None


def test_a_paid_order_cannot_be_cancelled_by_the_attendee(
    fox: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    fox.post("/register", form(products["attendee"], options))
    with write_session(engine) as session:
        order = session.scalars(select(Order)).one()
        mark_paid(session, Actor("test"), order, method=PaymentMethod.DESK, reference=None)
        number = order.number
    page = fox.get("/register")
    assert ">Paid</span>" in page.text
    assert "contact the organizers for a refund" in page.text
    assert "Cancel this order" not in page.text
    assert "payment-instructions" not in page.text  # paid: nothing more to pay
    assert fox.get("/register/cancel").status_code == 303

    refused = fox.post("/register/cancel", {"order": number})
    assert refused.status_code == 400
    assert page_error(refused.text) == (
        "A paid order cannot be cancelled here: contact the organizers for a refund."
    )
    with Session(engine) as session:
        assert session.scalars(select(Order.status)).one() == OrderStatus.PAID
    assert audit(engine, "order.cancelled") == []


@pytest.mark.parametrize("token", [None, "", "0" * 64])
def test_every_form_needs_the_sessions_csrf_token(
    fox: Person,
    engine: Engine,
    products: dict[str, int],
    options: dict[str, int],
    token: str | None,
) -> None:
    def post(path: str, data: dict[str, Any]) -> int:
        fields = data if token is None else {**data, "csrf_token": token}
        return fox.client.post(path, data=fields, follow_redirects=False).status_code

    assert post("/register", form(products["attendee"], options)) == 403
    assert orders(engine) == 0
    assert fox.post("/register", form(products["attendee"], options)).status_code == 303
    held = live(engine, fox.user_id)
    assert held is not None
    assert post("/register/edit", {"badgeName": "Forged"}) == 403
    assert post("/register/cancel", {"order": held[0].number}) == 403
    after = live(engine, fox.user_id)
    assert after is not None
    assert after[1].badge_name == "Fae the Fox"


# --- amounts and the ticket ----------------------------------------------------------------


def test_amounts_are_shown_in_the_instances_currency(
    app: FastAPI, fox: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    app.state.settings = app.state.settings.model_copy(update={"currency": "JPY"})
    offer = fox.get("/register").text
    assert "¥6,500" in offer
    assert "¥12,000" in offer
    fox.post("/register", form(products["day"], options))
    with Session(engine) as session:
        assert session.scalars(select(Order.currency)).one() == "JPY"
    assert "<dd>¥2,550</dd>" in fox.get("/register").text


def test_the_account_page_shows_the_registration_and_its_ticket_as_a_qr_code(
    fox: Person, owl: Person, engine: Engine, products: dict[str, int], options: dict[str, int]
) -> None:
    before = fox.get("/account").text
    assert f'<a href="/register">Register for {EVENT}</a>' in before
    assert "ticket-qr" not in before

    fox.post("/register", form(products["sponsor"], options))
    held = live(engine, fox.user_id)
    assert held is not None
    order, registration = held
    account = fox.get("/account")
    assert account.status_code == 200
    assert "Content-Security-Policy" in account.headers
    text = account.text
    for shown in ("<dd>Sponsor</dd>", f"<dd>{order.number}</dd>", ">Unpaid</span>"):
        assert shown in text
    assert "<dd>Fae the Fox</dd>" in text
    assert f'<code class="ticket-code">{registration.ticket_code}</code>' in text
    # The QR code holds the ticket: the code signed, as the desk's scanner verifies it.
    with write_session(engine) as session:
        ticket = ticket_of(session, registration.ticket_code)
    assert ticket.startswith(registration.ticket_code)
    assert len(ticket) > len(registration.ticket_code)
    assert ticket_qr_path(text) == segno_path(ticket)
    assert "<script" not in text

    # Owl, registered too, sees only their own ticket; fox's code is nowhere on owl's page.
    owl.post("/register", form(products["attendee"], options))
    theirs = live(engine, owl.user_id)
    assert theirs is not None
    owl_page = owl.get("/account").text
    assert registration.ticket_code not in owl_page
    with write_session(engine) as session:
        owls = ticket_of(session, theirs[1].ticket_code)
    assert ticket_qr_path(owl_page) == segno_path(owls)
    assert ticket_qr_path(owl_page) != segno_path(ticket)
