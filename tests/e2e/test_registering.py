"""Registering, in a real browser against `regdesk serve` (registrations.md, Pages): an
attendee picks a product, a badge name and an answer, reads their order number and how to pay,
changes their badge name, finds the ticket's QR code on /account, and cancels. Each step is
checked in the database too. Screenshots: build/screenshots/register-*.png, account-ticket.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.registrations.models import (
    Order,
    Product,
    Registration,
    RegistrationOption,
    RegistrationOptionValue,
)
from regdesk.users.service import NewUser, create_user
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, log_in, open_event, screenshot
from tests.helpers import live_server

EVENT = "FurCon 2027"
INSTRUCTIONS = (
    "Pay by bank transfer to IBAN DE00 1234 5678 9000.\nPut your order number in the reference."
)


@dataclass(frozen=True)
class Site:
    base: str
    engine: Engine
    shirt_option: int


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e-registering") / "regdesk.sqlite3")
    engine = make_engine(url)
    with write_session(engine) as session:
        create_user(
            session,
            Actor("test"),
            NewUser(
                username="fox",
                email="fox@example.org",
                first_name="Fox",
                last_name="Tester",
                password=PASSWORD,
            ),
        )
        event = open_event(session, EVENT)
        session.add_all(
            [
                Product(
                    event_id=event.id,
                    name="sponsor",
                    display_name="Sponsor",
                    description="A sponsor's badge and gift.",
                    price=12000,
                    capacity=0,
                    position=2,
                ),
                Product(
                    event_id=event.id,
                    name="staff",
                    display_name="Staff",
                    price=0,
                    public=False,
                    position=3,
                ),
            ]
        )
        shirt = RegistrationOption(
            event_id=event.id, name="T-shirt size", type="select", choices=["S", "M", "L"]
        )
        session.add(shirt)
        session.add(RegistrationOption(event_id=event.id, name="Nights", type="number"))
        session.flush()
        shirt_option = shirt.id
    settings = {"REGDESK_CURRENCY": "EUR", "REGDESK_PAYMENT_INSTRUCTIONS": INSTRUCTIONS}
    try:
        with live_server(url, settings) as base:
            yield Site(base, engine, shirt_option)
    finally:
        engine.dispose()


def live_registration(site: Site) -> tuple[Order, Registration] | None:
    with Session(site.engine) as session:
        row = session.execute(
            select(Order, Registration)
            .join(Registration, Registration.order_id == Order.id)
            .where(Registration.ended_at.is_(None))
        ).first()
        return (row[0], row[1]) if row else None


def test_an_attendee_registers_edits_sees_the_ticket_and_cancels(page: Page, site: Site) -> None:
    page.goto(f"{site.base}/account")
    log_in(page, "fox")
    page.get_by_role("link", name=f"Register for {EVENT}").click()
    expect(page.get_by_role("heading", name=f"Register for {EVENT}")).to_be_visible()
    products = page.get_by_role("group", name="Product")
    expect(products.get_by_text("€65.00")).to_be_visible()
    expect(products.get_by_text("500 left")).to_be_visible()
    expect(products.get_by_role("radio", name=re.compile("^Sponsor"))).to_be_disabled()
    expect(products.get_by_text("Sold out")).to_be_visible()
    expect(products.get_by_role("radio", name=re.compile("^Staff"))).to_have_count(0)

    products.get_by_role("radio", name=re.compile("^Attendee")).check()
    page.get_by_label("Badge name").fill("Fae the Fox")
    page.get_by_role("group", name="T-shirt size").get_by_label("M", exact=True).check()
    page.get_by_label("Nights").fill("3")
    screenshot(page, "register-form")
    page.get_by_role("button", name="Register").click()

    expect(page.get_by_role("heading", name="Your registration")).to_be_visible()
    held = live_registration(site)
    assert held is not None
    order, registration = held
    assert (order.amount, order.currency, order.status) == (6500, "EUR", "unpaid")
    assert registration.badge_name == "Fae the Fox"
    summary = page.locator("dl.order-summary")
    expect(summary).to_contain_text(order.number)
    expect(summary).to_contain_text("€65.00")
    expect(summary).to_contain_text("Unpaid")
    instructions = page.locator(".payment-instructions")
    expect(instructions).to_have_text(INSTRUCTIONS)
    lines = instructions.evaluate("(element) => element.getClientRects().length")
    height = instructions.evaluate("(element) => element.getBoundingClientRect().height")
    assert lines == 1
    assert height > 40, "the instructions' two lines are shown as two lines"
    screenshot(page, "register-order")

    page.get_by_label("Badge name").fill("Fae")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_have_text("Your changes were saved.")
    expect(page.get_by_label("Badge name")).to_have_value("Fae")
    expect(
        page.get_by_role("group", name="T-shirt size").get_by_label("M", exact=True)
    ).to_be_checked()
    with Session(site.engine) as session:
        assert session.get_one(Registration, registration.id).badge_name == "Fae"
        rows = session.execute(
            select(RegistrationOptionValue.option_id, RegistrationOptionValue.value).where(
                RegistrationOptionValue.registration_id == registration.id
            )
        )
        answers = {row.option_id: row.value for row in rows}
        assert answers[site.shirt_option] == "M"

    page.get_by_role("link", name="your account page").click()
    ticket = page.get_by_role("img", name=re.compile("QR code of your ticket code"))
    expect(ticket).to_be_visible()
    box = ticket.bounding_box()
    assert box is not None
    assert min(box["width"], box["height"]) >= 150
    expect(page.locator("code.ticket-code")).to_have_text(registration.ticket_code)
    font = page.locator("code.ticket-code").evaluate("(e) => getComputedStyle(e).fontFamily")
    assert "monospace" in font
    expect(page.get_by_text("Fae", exact=True)).to_be_visible()
    screenshot(page, "account-ticket")

    page.get_by_role("link", name="Your registration").click()
    page.get_by_role("link", name="Cancel this order").click()
    expect(page.get_by_role("heading", name=f"Cancel order {order.number}?")).to_be_visible()
    page.get_by_role("button", name="Yes, cancel my order").click()
    expect(page.get_by_role("status")).to_contain_text("Your order was cancelled.")
    expect(page.get_by_role("heading", name=f"Register for {EVENT}")).to_be_visible()
    screenshot(page, "register-cancelled")
    assert live_registration(site) is None
    with Session(site.engine) as session:
        assert session.get_one(Order, order.id).status == "cancelled"

    page.goto(f"{site.base}/account")
    expect(page.get_by_role("img", name=re.compile("QR code"))).to_have_count(0)
    expect(page.get_by_role("link", name=f"Register for {EVENT}")).to_be_visible()
