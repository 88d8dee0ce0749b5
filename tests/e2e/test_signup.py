"""Signing up, in a real browser against `regdesk serve`, which mails through a real SMTP
server (accounts.md, Sign-up and verification): a newcomer follows the login page's link to
/signup, makes an account and is signed in at once with a "not confirmed yet" notice, follows
the link mailed to them, confirms the address with the page's button, and registers for the
event. Screenshots: build/screenshots/signup-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.db import make_engine, write_session
from regdesk.registrations.models import Order
from regdesk.users.models import User
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, mailed_link, open_event, screenshot
from tests.helpers import live_server
from tests.mail.support import Inbox, smtp_server

EVENT = "FurCon 2027"


@dataclass(frozen=True)
class Site:
    base: str
    engine: Engine
    inbox: Inbox


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """An event with one product on sale, and no account yet."""
    url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e-signup") / "regdesk.sqlite3")
    engine = make_engine(url)
    with write_session(engine) as session:
        open_event(session, EVENT)
    settings = {"REGDESK_CURRENCY": "EUR"}
    try:
        with smtp_server() as (inbox, port):
            settings["REGDESK_SMTP_URL"] = f"smtp://127.0.0.1:{port}"
            with live_server(url, settings) as base:
                yield Site(base, engine, inbox)
    finally:
        engine.dispose()


def test_sign_up_confirm_the_address_from_the_mail_and_register(page: Page, site: Site) -> None:
    page.goto(f"{site.base}/login")
    page.get_by_role("link", name="Create an account").click()
    expect(page.get_by_role("heading", name="Create an account")).to_be_visible()
    page.get_by_label("Username").fill("otter")
    page.get_by_label("First name").fill("Olive")
    page.get_by_label("Last name").fill("Otter")
    page.get_by_label("E-mail address").fill("olive@example.org")
    page.get_by_label("Date of birth").fill("1994-05-17")
    page.get_by_label("Password").fill(PASSWORD)
    screenshot(page, "signup-form")
    page.get_by_role("button", name="Create my account").click()

    page.wait_for_url(f"{site.base}/account")
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()
    expect(page.get_by_role("navigation", name="Your account")).to_contain_text("otter")
    expect(page.get_by_text("Your e-mail address is not confirmed yet")).to_be_visible()
    expect(page.get_by_text("not confirmed yet", exact=True)).to_be_visible()
    screenshot(page, "signup-account-unconfirmed")

    [mail] = site.inbox.wait_for(1)
    assert (mail["To"], mail["Subject"]) == ("olive@example.org", "Confirm your e-mail address")
    link = mailed_link(mail, site.base, "/verify/")
    page.goto(link)
    expect(page.get_by_role("heading", name="Confirm your e-mail address")).to_be_visible()
    expect(page.get_by_text("Confirm that olive@example.org is your address.")).to_be_visible()
    screenshot(page, "signup-verify")
    page.get_by_role("button", name="Confirm my address").click()
    expect(page.get_by_role("status")).to_have_text(
        "olive@example.org is confirmed as your e-mail address."
    )
    screenshot(page, "signup-verified")

    page.get_by_role("link", name="Go to your account").click()
    expect(page.get_by_text("confirmed", exact=True)).to_be_visible()
    expect(page.get_by_text("Your e-mail address is not confirmed yet")).to_have_count(0)
    page.get_by_role("link", name=f"Register for {EVENT}").click()
    expect(page.get_by_role("heading", name=f"Register for {EVENT}")).to_be_visible()
    page.get_by_role("radio", name=re.compile("^Attendee")).check()
    page.get_by_role("button", name="Register").click()

    expect(page.get_by_role("heading", name="Your registration")).to_be_visible()
    with Session(site.engine) as session:
        user = session.scalars(select(User).where(User.username == "otter")).one()
        assert user.verified
        order = session.scalars(select(Order).where(Order.user_id == user.id)).one()
    summary = page.locator("dl.order-summary")
    expect(summary).to_contain_text(order.number)
    expect(summary).to_contain_text("Attendee")
    expect(summary).to_contain_text("€65.00")
    expect(summary).to_contain_text("Unpaid")
    screenshot(page, "signup-registered")

    page.goto(link)  # the link is spent
    expect(page.get_by_role("heading", name="This link no longer works")).to_be_visible()
