"""A session at the registration desk, in a real browser against `regdesk serve`
(registrations.md, Pages; issue 17).

A desk staff member scans a ticket (its code typed into the focused search box and Enter, as a
USB scanner does), checks the person in, and the second scan of the same ticket says "already
checked in" with when and by whom. Then someone without a registration buys one at the door:
the search finds nobody, the sale form makes their account, sells, takes the payment and checks
them in in one submit, and their badge prints: 4 x 3 in, one sheet, nothing else on it (the
browser's own PDF of the page says so), and is marked printed. The night before, a batch
prints one badge to a sheet. Each result is checked in the database too. Screenshots:
build/screenshots/desk-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.oauth.permissions import DESK
from regdesk.registrations.models import Order, PaymentMethod, Product, Registration
from regdesk.registrations.ordering import mark_paid
from regdesk.registrations.service import register
from regdesk.registrations.ticket_codes import ticket_of
from regdesk.users.models import User
from regdesk.users.service import NewUser, create_user
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, log_in, open_event, screenshot
from tests.helpers import live_server

SEARCH_LABEL = "Scan a ticket, or type an order id, a name, an e-mail or a badge name"
# A badge is 4 x 3 in: 288 x 216 PDF points, 384 x 288 CSS pixels.
BADGE_POINTS = (288, 216)
BADGE_PIXELS = (384, 288)


@dataclass(frozen=True)
class Desk:
    base: str
    engine: Engine
    staff_id: int
    ticket: str  # fox's, as the QR code on their phone holds it
    fox_registration: int


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e-desk") / "regdesk.sqlite3")
    engine = make_engine(url)
    actor = Actor("test")
    with write_session(engine) as session:
        staff = create_user(
            session,
            actor,
            NewUser("dee", "dee@example.org", "Dee", "Desk", PASSWORD, permissions=[DESK]),
        )
        fox = create_user(session, actor, NewUser("fox", "fox@example.org", "Fae", "Fox"))
        open_event(session, "FurCon 2027")
        session.flush()
        attendee = session.scalars(select(Product.id).where(Product.name == "attendee")).one()
        placed = register(
            session,
            actor,
            user_id=fox.id,
            product_id=attendee,
            currency="USD",
            badge="Fae the Fox",
        )
        mark_paid(session, actor, placed.order, method=PaymentMethod.TRANSFER, reference=None)
        ticket = ticket_of(session, placed.registration.ticket_code)
        ids = (staff.id, placed.registration.id)
    try:
        with live_server(url) as base:
            yield Desk(base, engine, ids[0], ticket, ids[1])
    finally:
        engine.dispose()


def sign_in_at_the_desk(page: Page, desk: Desk) -> None:
    page.goto(f"{desk.base}/desk")
    log_in(page, "dee")
    page.wait_for_url(f"{desk.base}/desk")


def scan(page: Page, typed: str) -> None:
    """What a USB scanner does: types into the field that has the focus, then Enter."""
    expect(page.get_by_label(SEARCH_LABEL)).to_be_focused()
    page.keyboard.type(typed)
    page.keyboard.press("Enter")


def pdf_pages(page: Page) -> list[tuple[int, int]]:
    """The sheets the browser prints the page on, as (width, height) in points."""
    pdf = page.pdf(prefer_css_page_size=True, print_background=True)
    boxes = re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf)
    return [(round(float(w)), round(float(h))) for w, h in boxes]


def test_scan_check_in_and_the_second_scan_says_who_did_it(page: Page, desk: Desk) -> None:
    sign_in_at_the_desk(page, desk)
    scan(page, desk.ticket)
    expect(page.get_by_role("heading", name="Fae Fox", level=1)).to_be_visible()
    expect(page.locator("#standing")).to_have_text("Paid")
    screenshot(page, "desk-card")

    page.get_by_role("button", name="Check in").click()
    expect(page.get_by_role("status")).to_have_text("Checked in.")
    expect(page.locator("#standing")).to_have_text("Checked in")
    expect(page.locator(".desk-checked-in")).to_contain_text("by Dee Desk (dee)")
    screenshot(page, "desk-checked-in")

    scan(page, desk.ticket)  # the next in the queue hands over the same ticket
    expect(page.locator("#standing")).to_have_text("Already checked in")
    expect(page.locator(".desk-checked-in")).to_have_text(
        re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC, by Dee Desk \(dee\)")
    )
    expect(page.get_by_role("button", name="Check in")).to_have_count(0)
    screenshot(page, "desk-already-checked-in")
    with Session(desk.engine) as session:
        registration = session.get_one(Registration, desk.fox_registration)
        assert registration.checked_in_by == desk.staff_id
        events = session.scalars(
            select(AuditEvent).where(AuditEvent.action == "registration.checked_in")
        ).all()
    assert [(e.target_id, e.actor_user_id) for e in events] == [
        (str(desk.fox_registration), desk.staff_id)
    ]


def test_an_on_site_sale_ends_in_a_printed_badge(page: Page, desk: Desk) -> None:
    sign_in_at_the_desk(page, desk)
    scan(page, "zed@example.org")  # typed at the desk: nobody by that address
    expect(page.get_by_text("Nobody of the current event matches.")).to_be_visible()
    page.get_by_role("link", name="New sale for “zed@example.org”").click()

    expect(page.get_by_role("heading", name="New sale")).to_be_visible()
    expect(page.get_by_label("A new person, with a new account:")).to_be_checked()
    expect(page.get_by_label("E-mail", exact=True)).to_have_value("zed@example.org")
    page.get_by_label("Username", exact=True).fill("zed")
    page.get_by_label("First name", exact=True).fill("Zed")
    page.get_by_label("Last name", exact=True).fill("Zebra")
    page.get_by_label("Product", exact=True).select_option(label="Attendee, $65.00 (499 left)")
    page.get_by_label("Badge name (optional)").fill("Zed the Zebra")
    page.get_by_label("Payment reference (optional)").fill("Card 0042")
    expect(page.get_by_label("Check in now")).to_be_checked()
    screenshot(page, "desk-sale")
    page.get_by_role("button", name="Sell, paid at the desk").click()

    expect(page.get_by_role("status")).to_have_text("Sold, paid at the desk, and checked in.")
    expect(page.get_by_role("heading", name="Zed Zebra", level=1)).to_be_visible()
    expect(page.locator("#standing")).to_have_text("Checked in")
    screenshot(page, "desk-sale-card")

    page.get_by_role("link", name="Print badge").click()
    expect(page.get_by_role("heading", name="Badge: Zed the Zebra")).to_be_visible()
    badge = page.get_by_role("article", name="Badge: Zed the Zebra")
    expect(badge).to_contain_text("Attendee")
    expect(badge.locator("svg.badge-qr")).to_be_visible()
    screenshot(page, "desk-badge")

    page.emulate_media(media="print")
    expect(page.get_by_role("navigation", name="Desk")).to_be_hidden()
    expect(page.get_by_role("button", name="Mark printed")).to_be_hidden()
    box = badge.bounding_box()
    assert box is not None
    assert (round(box["width"]), round(box["height"])) == BADGE_PIXELS
    screenshot(page, "desk-badge-print")
    assert pdf_pages(page) == [BADGE_POINTS]  # one sheet of badge stock, the badge alone
    page.emulate_media(media="screen")

    page.get_by_role("button", name="Mark printed").click()
    expect(page.get_by_role("status")).to_have_text("The badge is marked printed.")
    expect(page.locator("#badge-printed")).to_have_text(re.compile(r"Printed \d{4}-\d\d-\d\d"))
    with Session(desk.engine) as session:
        zed = session.scalars(select(User).where(User.username == "zed")).one()
        registration = session.scalars(
            select(Registration).where(Registration.user_id == zed.id)
        ).one()
        order = session.get_one(Order, registration.order_id)
        by_dee = session.scalars(
            select(AuditEvent.action).where(AuditEvent.actor_user_id == desk.staff_id)
        ).all()
    assert (order.status, order.payment_method, order.payment_reference) == (
        "paid",
        "desk",
        "Card 0042",
    )
    assert registration.badge_printed_at is not None
    assert registration.checked_in_by == desk.staff_id
    for action in ("user.created", "order.created", "order.paid", "registration.badge_printed"):
        assert action in by_dee


def test_a_batch_prints_one_badge_to_a_sheet(page: Page, desk: Desk) -> None:
    sign_in_at_the_desk(page, desk)
    page.get_by_role("navigation", name="Desk").get_by_role("link", name="Badges").click()
    page.get_by_label("Printed", exact=True).select_option(label="Printed or not")
    page.get_by_role("button", name="Show").click()
    # count() does not wait: it must read the page the filter loaded, not the one before it.
    page.wait_for_url(re.compile(r"/desk/badges\?.*printed=any"))
    badges = page.locator("article.badge")
    count = badges.count()
    assert count >= 1
    screenshot(page, "desk-badges")
    page.emulate_media(media="print")
    assert pdf_pages(page) == [BADGE_POINTS] * count
    page.emulate_media(media="screen")
    page.get_by_role("button", name=f"Mark these {count} printed").click()
    expect(page.get_by_role("status").first).to_have_text(
        f"{count} badge{'s' if count != 1 else ''} marked printed."
    )
