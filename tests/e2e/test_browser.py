"""The pages in a real browser (Chromium, driven by Playwright) against `regdesk serve`.

Each test does what a person does (types, clicks) and checks what they see. A tiny HTTP server
on 127.0.0.1 plays the application: its registered redirect address is where the browser
lands after the consent screen. Screenshots of every page go to build/screenshots/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.oauth.applications import create_application
from regdesk.oauth.scopes import SCOPES
from regdesk.users.service import NewUser, create_user
from tests import http_calls
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, application_callback, log_in, screenshot
from tests.helpers import live_server

APP_NAME = "Volunteer Time Clock"
APP_DESCRIPTION = "Clocks volunteer shifts in and out at the con."
# What a real client puts in a state (| / : - _), percent signs, and a line break.
STATE = ("v1|/shifts:42-a_b%20c%2F\n" * 50)[:1024]


@dataclass(frozen=True)
class Site:
    base: str
    engine: Engine
    client_id: str
    client_secret: str
    callback: str

    def authorize_url(self, scope: str, state: str = STATE) -> str:
        params = {
            "client_id": self.client_id,
            "response_type": "code",
            "redirect_uri": self.callback,
            "scope": scope,
            "state": state,
        }
        return f"{self.base}/oauth/authorize?{urlencode(params)}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with application_callback() as callback:
        url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e") / "regdesk.sqlite3")
        engine = make_engine(url)
        with write_session(engine) as session:
            for username, permissions in (("fox", ["user:read"]), ("owl", [])):
                create_user(
                    session,
                    Actor("test"),
                    NewUser(
                        username=username,
                        email=f"{username}@example.org",
                        first_name="Fae",
                        last_name=username.capitalize(),
                        password=PASSWORD,
                        permissions=permissions,
                    ),
                )
            registered, secret = create_application(
                session,
                Actor("test"),
                name=APP_NAME,
                description=APP_DESCRIPTION,
                redirect_uris=[callback],
                obo_scopes="pii:basic pii:email user:read",
            )
        try:
            with live_server(url) as base:
                yield Site(base, engine, str(registered.id), secret, callback)
        finally:
            engine.dispose()


def landed(page: Page, site: Site) -> dict[str, list[str]]:
    """Where the browser ended up: the application's redirect address, with its query."""
    page.wait_for_url(re.compile(re.escape(site.callback) + r"\?"))
    expect(page.get_by_role("heading", name="Back at the Time Clock")).to_be_visible()
    return parse_qs(urlsplit(page.url).query, keep_blank_values=True)


def red(page: Page, selector: str, prop: str) -> bool:
    value = page.eval_on_selector(selector, f"el => getComputedStyle(el).{prop}")
    r, g, b = (int(n) for n in re.findall(r"\d+", value)[:3])
    return r >= 140 and g <= 80 and b <= 80


# --- the tests ---------------------------------------------------------------------------


def test_sign_in_on_the_way_and_authorize(page: Page, site: Site) -> None:
    page.goto(site.authorize_url("pii:basic pii:email"))
    assert urlsplit(page.url).path == "/login"
    screenshot(page, "01-login")
    log_in(page, "fox", "not the password")
    expect(page.get_by_role("alert")).to_have_text(
        "That username or e-mail and password do not match an account."
    )
    screenshot(page, "02-login-failed")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text(APP_NAME)
    expect(page.get_by_text(APP_DESCRIPTION)).to_be_visible()
    for scope in ("pii:basic", "pii:email"):
        expect(page.get_by_text(SCOPES[scope].description)).to_be_visible()
    expect(page.get_by_text("This grants administrative permission")).to_have_count(0)
    assert not red(page, "button[value=authorize]", "backgroundColor")
    screenshot(page, "03-consent")
    page.get_by_role("button", name="Authorize").click()

    reply = landed(page, site)
    assert len(reply["code"][0]) >= 40
    assert reply["state"] == [STATE]
    assert reply["iss"] == [site.base]


def test_deny(page: Page, site: Site) -> None:
    page.goto(site.authorize_url("pii:basic"))
    log_in(page, "owl")
    expect(page.get_by_role("button", name="Deny")).to_be_visible()
    page.get_by_role("button", name="Deny").click()
    reply = landed(page, site)
    assert reply["error"] == ["access_denied"]
    assert reply["state"] == [STATE]
    assert reply["iss"] == [site.base]
    assert "code" not in reply


def test_a_sensitive_scope_is_shown_in_red(page: Page, site: Site) -> None:
    page.goto(site.authorize_url("pii:basic user:read"))
    log_in(page, "fox")
    expect(
        page.get_by_role("heading", name="This grants administrative permission")
    ).to_be_visible()
    expect(
        page.get_by_text("administrative endpoints or to other users' information")
    ).to_be_visible()
    sensitive = page.locator("li.scope", has_text=SCOPES["user:read"].description)
    expect(sensitive).to_contain_text("Administrative")
    assert red(page, "li.scope-sensitive", "color")
    assert not red(page, "li.scope:not(.scope-sensitive)", "color")
    assert red(page, "button[value=authorize]", "backgroundColor")
    screenshot(page, "04-consent-sensitive")
    page.get_by_role("button", name="Authorize").click()
    assert landed(page, site)["code"]


def test_a_user_lacking_the_permission_gets_the_invalid_request_page(
    page: Page, site: Site
) -> None:
    page.goto(site.authorize_url("user:read"))
    log_in(page, "owl")
    expect(page.get_by_role("heading", name="Invalid request")).to_be_visible()
    expect(page.get_by_text("user:read")).to_be_visible()
    expect(page.get_by_text(SCOPES["user:read"].description)).to_be_visible()
    expect(page.get_by_role("button", name="Authorize")).to_have_count(0)
    assert urlsplit(page.url).path == "/oauth/authorize"  # not sent back to the application
    screenshot(page, "05-invalid-request")


def test_an_unknown_application_gets_an_error_page(page: Page, site: Site) -> None:
    page.goto(
        site.authorize_url("pii:basic").replace(f"client_id={site.client_id}", "client_id=999")
    )
    expect(page.get_by_role("heading", name="Invalid request")).to_be_visible()
    expect(page.get_by_text("The application is unknown or suspended.")).to_be_visible()
    screenshot(page, "06-unknown-application")


def test_revoke_on_the_account_page(page: Page, site: Site) -> None:
    page.goto(site.authorize_url("pii:basic pii:email"))
    log_in(page, "fox")
    page.get_by_role("button", name="Authorize").click()
    code = landed(page, site)["code"][0]
    tokens = http_calls.post(
        f"{site.base}/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": site.callback},
        auth=(site.client_id, site.client_secret),
    )
    assert tokens.status_code == 200, tokens.text
    bearer = {"Authorization": f"Bearer {tokens.json()['access_token']}"}
    assert http_calls.get(f"{site.base}/api/users/current", headers=bearer).status_code == 200

    page.goto(f"{site.base}/account")
    expect(page.get_by_role("heading", name="Connected applications")).to_be_visible()
    connected = page.locator("li.application", has_text=APP_NAME)
    expect(connected).to_contain_text(SCOPES["pii:email"].description)
    expect(page.get_by_text("fox@example.org")).to_be_visible()
    screenshot(page, "07-account")
    connected.get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status")).to_have_text("The application's access was revoked.")
    expect(page.locator("li.application", has_text=APP_NAME)).to_have_count(0)
    screenshot(page, "08-account-revoked")
    assert http_calls.get(f"{site.base}/api/users/current", headers=bearer).status_code == 401


def test_log_out(page: Page, site: Site) -> None:
    page.goto(f"{site.base}/account")
    log_in(page, "owl")
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_text("You are signed out of regdesk.")).to_be_visible()
    page.goto(f"{site.base}/account")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()


def test_usable_by_keyboard_and_on_a_phone(browser: Browser, site: Site) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        page.goto(site.authorize_url("pii:basic user:read"))
        page.keyboard.press("Tab")  # the skip link: it must show where the focus is
        focused = page.evaluate(
            "() => { const s = getComputedStyle(document.activeElement);"
            " return [document.activeElement.textContent, s.outlineStyle, s.outlineWidth]; }"
        )
        assert focused == ["Skip to the content", "solid", "3px"]
        log_in(page, "fox")
        expect(page.get_by_role("button", name="Authorize")).to_be_visible()
        # Without the viewport meta tag a phone lays the page out 980 pixels wide.
        assert page.evaluate("() => document.documentElement.clientWidth") == 360
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0
        screenshot(page, "09-consent-phone")
    finally:
        context.close()


def test_the_api_documentation_still_works_under_its_policy(page: Page, site: Site) -> None:
    page.goto(f"{site.base}/docs")
    expect(page.get_by_text("Token endpoint").first).to_be_visible()
