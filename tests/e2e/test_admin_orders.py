"""Orders, products and registrations in the admin area, in a real browser against
`regdesk serve`.

An organizer finds an attendee's order by its number, marks it paid at the desk with a
receipt's reference, and the attendee's registration reads paid, as a service integration
sees it (registrations.md, API). Then they add a product, and correct a badge name. Each
result is checked through the API. Screenshots: build/screenshots/admin-order*.png,
admin-products.png, admin-registration.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.applications import create_application
from regdesk.registrations.products import ProductSpec, create_product
from regdesk.registrations.service import register
from regdesk.users.models import User
from tests.e2e.admin_site import AdminSite, admin_site
from tests.e2e.support import screenshot


@dataclass(frozen=True)
class Shop:
    site: AdminSite
    fox_id: int
    number: str  # fox's unpaid order
    registration_id: int
    client_id: str  # a service integration holding registration:read
    secret: str

    def registration(self) -> Any:
        """Fox's registration record, as a client reads it."""
        granted = self.site.token(self.client_id, self.secret)
        assert granted.status_code == 200, granted.text
        answer = self.site.api(
            "GET", f"/api/v0/users/{self.fox_id}/registration", granted.json()["access_token"]
        )
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    with admin_site(tmp_path_factory.mktemp("e2e-admin-orders")) as site:
        actor = Actor("test")
        with write_session(site.engine) as session:
            attendee = create_product(
                session, actor, ProductSpec("attendee", "Attendee", price="65.00"), "USD"
            )
            fox_id = session.scalars(select(User.id).where(User.username == "fox")).one()
            placed = register(
                session,
                actor,
                user_id=fox_id,
                product_id=attendee.id,
                currency="USD",
                badge="Fox",
            )
            reader, secret = create_application(
                session, actor, name="Badge Printer", service_scopes="registration:read"
            )
            numbers = (placed.order.number, placed.registration.id)
        yield Shop(site, fox_id, numbers[0], numbers[1], str(reader.id), secret)


def test_an_organizer_finds_an_order_and_marks_it_paid_at_the_desk(page: Page, shop: Shop) -> None:
    assert shop.registration()["status"] == "unpaid"
    shop.site.sign_in(page, "/admin/orders")
    search = page.get_by_role("search", name="Find orders")
    search.get_by_label("Order number, name or e-mail").fill(shop.number)
    search.get_by_role("button", name="Search").click()
    table = page.get_by_role("table", name="Orders, newest first")
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table).to_contain_text("fox@example.org")
    expect(table).to_contain_text("$65.00")
    screenshot(page, "admin-orders")

    table.get_by_role("link", name=shop.number, exact=True).click()
    expect(page.get_by_role("heading", name=f"Order {shop.number}", level=1)).to_be_visible()
    page.get_by_label("How it was paid").select_option(label="At the desk")
    page.get_by_label("Reference").fill("Receipt 0042")
    page.get_by_role("button", name="Mark paid").click()
    expect(page.get_by_role("status")).to_have_text("The order was marked paid.")
    expect(page.locator("#status")).to_have_text("paid")
    expect(page.get_by_role("button", name="Mark paid")).to_have_count(0)
    expect(page.get_by_role("table")).to_contain_text("order.paid")
    screenshot(page, "admin-order-paid")

    record = shop.registration()
    assert (record["status"], record["order"]) == (
        "paid",
        {"orderId": shop.number, "status": "paid"},
    )


def test_an_organizer_adds_a_product_and_corrects_a_badge_name(page: Page, shop: Shop) -> None:
    shop.site.sign_in(page, "/admin/products")
    page.get_by_role("link", name="Add a product").click()
    page.get_by_label("Name", exact=True).fill("sponsor")
    page.get_by_label("Display name").fill("Sponsor")
    page.get_by_label("Price (USD)").fill("120.00")
    page.get_by_label("Capacity").fill("300")
    page.get_by_role("button", name="Add the product").click()
    expect(page.get_by_role("status")).to_have_text("The product was created.")
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Products").click()
    row = page.get_by_role("row").filter(has_text="sponsor")
    expect(row).to_contain_text("$120.00")
    expect(row).to_contain_text("300")
    screenshot(page, "admin-products")

    nav = page.get_by_role("navigation", name="Admin")
    nav.get_by_role("link", name="Registrations", exact=True).click()
    page.get_by_role("table", name="Registrations").get_by_role("link", name="Fox Tester").click()
    expect(page.get_by_role("heading", name="Fox Tester", level=1)).to_be_visible()
    page.get_by_role("textbox", name="Badge name").fill("Fae the Fox")
    page.get_by_role("button", name="Save badge name and answers").click()
    expect(page.get_by_role("status")).to_have_text("The registration was saved.")
    expect(page.get_by_role("textbox", name="Badge name")).to_have_value("Fae the Fox")
    screenshot(page, "admin-registration")
    assert shop.registration()["badgeName"] == "Fae the Fox"
