"""A forgotten password in a real browser (Chromium, driven by Playwright) against `regdesk
serve`, which mails through a real SMTP server (aiosmtpd on loopback): the person asks for a
link from the login page, follows the link from the mail, is refused a common password, sets
a good one, and signs in with it; the old one is refused and the link is spent. Screenshots of
each page: build/screenshots/password-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.users.service import NewUser, create_user
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, log_in, screenshot
from tests.helpers import live_server
from tests.mail.support import Inbox, smtp_server

NEW_PASSWORD = "a lantern by the river"


@dataclass(frozen=True)
class Site:
    base: str
    inbox: Inbox


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e") / "regdesk.sqlite3")
    engine = make_engine(url)
    with write_session(engine) as session:
        new = NewUser("fox", "fox@example.org", "Fae", "Fox", password=PASSWORD)
        create_user(session, Actor("test"), new)
    engine.dispose()
    with (
        smtp_server() as (inbox, port),
        live_server(url, {"REGDESK_SMTP_URL": f"smtp://127.0.0.1:{port}"}) as base,
    ):
        yield Site(base, inbox)


def test_forget_the_password_follow_the_mailed_link_and_sign_in_with_a_new_one(
    page: Page, site: Site
) -> None:
    page.goto(f"{site.base}/login")
    page.get_by_role("link", name="Forgot your password?").click()
    expect(page.get_by_role("heading", name="Forgot your password?")).to_be_visible()
    screenshot(page, "password-forgot")
    page.get_by_label("Username or e-mail").fill("Fox@Example.org")
    page.get_by_role("button", name="Mail me a link").click()
    expect(page.get_by_role("status")).to_contain_text("we have sent a link")
    screenshot(page, "password-forgot-sent")

    [mail] = site.inbox.wait_for(1)
    assert (mail["To"], mail["Subject"]) == ("fox@example.org", "Set a new password")
    text = next(p for p in mail.walk() if p.get_content_type() == "text/plain")
    body = text.get_payload(decode=True)
    assert isinstance(body, bytes)
    found = re.search(re.escape(site.base) + r"/password/reset/[A-Za-z0-9_-]+", body.decode())
    assert found, body
    link = found.group(0)

    page.goto(link)
    expect(page.get_by_role("heading", name="Set a new password")).to_be_visible()
    expect(page.get_by_text("For your account fox.")).to_be_visible()
    page.get_by_label("New password", exact=True).fill("Password123")
    page.get_by_label("New password, again").fill("Password123")
    page.get_by_role("button", name="Set password").click()
    expect(page.get_by_text("The new password is one of the most common passwords")).to_be_visible()
    screenshot(page, "password-reset-refused")
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password, again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set password").click()

    page.wait_for_url(f"{site.base}/login?notice=password_reset")
    expect(page.get_by_role("status")).to_have_text(
        "Your password was changed. Log in with your new password."
    )
    screenshot(page, "password-reset-done")
    log_in(page, "fox", PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text("do not match")  # the old one is gone
    log_in(page, "fox", NEW_PASSWORD)
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()

    [_, changed] = site.inbox.wait_for(2)
    assert changed["Subject"] == "Your password was changed"
    page.goto(link)
    expect(
        page.get_by_role("heading", name="This link has expired or has already been used")
    ).to_be_visible()
    screenshot(page, "password-link-dead")
