"""A security key in a real browser (Chromium's DevTools virtual authenticator) against
`regdesk serve` (accounts.md, Second factor): a person adds a key on /account, keeps the
recovery codes it brings, logs out, and logs in with their password and then the key; every
page keeps to its Content-Security-Policy (the fixture fails on a complaint). The public
address is http://localhost:<port>: WebAuthn takes a domain, not an IP address, as the relying
party's id. Screenshots: build/screenshots/security-key-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.users.service import NewUser, create_user
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, log_in, screenshot
from tests.helpers import free_port, live_server


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e-key") / "regdesk.sqlite3")
    engine = make_engine(url)
    with write_session(engine) as session:
        new = NewUser("fox", "fox@example.org", "Fae", "Fox", password=PASSWORD)
        create_user(session, Actor("test"), new)
    engine.dispose()
    port = free_port()
    base = f"http://localhost:{port}"
    with live_server(url, {"REGDESK_PUBLIC_URL": base}, port=port):
        yield base


def virtual_authenticator(page: Page) -> None:
    """A platform authenticator that verifies its user, as a laptop's fingerprint reader."""
    devtools = page.context.new_cdp_session(page)
    devtools.send("WebAuthn.enable")
    devtools.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
            }
        },
    )


def test_add_a_key_log_out_and_log_in_with_it(page: Page, site: str) -> None:
    virtual_authenticator(page)
    page.goto(f"{site}/login")
    log_in(page, "fox")
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()

    page.get_by_role("link", name="Add a security key").click()
    expect(page.get_by_role("heading", name="Add a security key")).to_be_visible()
    page.get_by_label("Name of the key").fill("Laptop")
    screenshot(page, "security-key-add")
    page.get_by_role("button", name="Add the key").click()
    expect(page.get_by_role("heading", name="Your recovery codes")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Your second factor was added")
    codes = page.get_by_role("list", name="Recovery codes").get_by_role("listitem")
    expect(codes).to_have_count(10)
    screenshot(page, "security-key-codes")
    page.get_by_role("link", name="I have kept them").click()
    expect(page.get_by_role("heading", name="Laptop")).to_be_visible()

    page.get_by_role("navigation", name="Your account").get_by_role(
        "button", name="Log out"
    ).click()
    expect(page.get_by_role("heading", name="Signed out")).to_be_visible()

    page.goto(f"{site}/login")
    log_in(page, "fox")
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible()
    page.get_by_role("link", name="use a security key").click()
    expect(page.get_by_role("heading", name="Use a security key")).to_be_visible()
    screenshot(page, "security-key-login")
    page.get_by_role("button", name="Use my security key").click()
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()
    expect(page.get_by_role("heading", name="Laptop")).to_be_visible()
    expect(page.get_by_text("last used")).to_be_visible()
