"""A Django site signing its people in with regdesk, in Chromium (issue 19, Real components):
mozilla-django-oidc, a relying party nobody here wrote, against a live `regdesk serve`.

An administrator registers the site in the admin area (its callback as redirect URI, the
openid, profile and email scopes, its "signed out" page as post-logout redirect URI, RS256),
copying its secret off the page into the site's environment. An attendee then opens the site,
is sent to regdesk, signs in, consents, and lands back on the site signed in, with their e-mail
and name; signing out of the site signs them out of regdesk too (RP-Initiated Logout) and
brings them back to the site. Screenshots: build/screenshots/oidc-django-*.png.

A browser test like those of tests/e2e, with their Chromium (skipped where it is missing);
the site's Django and mozilla-django-oidc come from uv.lock, its data is SQLite in tmp_path.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.admin_site import AdminSite, admin_site
from tests.e2e.conftest import CHROMIUM, browser, page  # noqa: F401 (fixtures, skip)
from tests.e2e.support import log_in, screenshot
from tests.helpers import free_port
from tests.oidc.django_site import callback, django_site, signed_out

assert CHROMIUM.exists()  # importing tests.e2e.conftest skipped this module otherwise


@pytest.fixture
def site(tmp_path: Path) -> Iterator[AdminSite]:
    directory = tmp_path / "regdesk"
    directory.mkdir()
    with admin_site(directory) as running:
        yield running


def register_the_wiki(admin: Page, site: AdminSite, wiki: str) -> tuple[str, str]:
    """As the administrator, in the admin area: the wiki's client id and secret."""
    site.sign_in(admin, "/admin/applications/new")
    admin.get_by_label("Name", exact=True).fill("Convention Wiki")
    admin.get_by_label("Description").fill("Panels, maps and the volunteer handbook.")
    admin.get_by_label("Redirect URIs").fill(callback(wiki))
    people = admin.get_by_role("group", name="Scopes it may ask people for")
    for name in ("openid", "profile", "email"):
        people.get_by_role("checkbox", name=re.compile(rf" {name}$")).check()
    admin.get_by_label("Post-logout URIs").fill(signed_out(wiki))
    admin.get_by_role("radio", name=re.compile("^RS256")).check()
    screenshot(admin, "oidc-django-register")
    admin.get_by_role("button", name="Register application").click()
    expect(admin.get_by_role("heading", name="Convention Wiki is registered")).to_be_visible()
    return admin.locator("#client-id").inner_text(), admin.locator("#client-secret").inner_text()


def wiki_users(directory: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(directory / "wiki.sqlite3") as connection:
        return connection.execute("SELECT email, first_name, last_name FROM auth_user").fetchall()


def test_a_person_signs_in_to_a_django_site_with_regdesk_and_out_again(
    browser: Browser,  # noqa: F811
    page: Page,  # noqa: F811
    site: AdminSite,
    tmp_path: Path,
) -> None:
    port = free_port()
    wiki = f"http://127.0.0.1:{port}"
    client_id, secret = register_the_wiki(page, site, wiki)

    directory = tmp_path / "wiki"
    with django_site(directory, port, site.base, client_id, secret) as base:
        # An attendee, in a browser of their own.
        visitor = browser.new_context(viewport={"width": 1024, "height": 800})
        visitor.set_default_timeout(10_000)
        tab = visitor.new_page()
        tab.goto(base)
        expect(tab.locator("#who")).to_have_text("Not signed in.")
        tab.get_by_role("link", name="Sign in with regdesk").click()

        # At regdesk: sign in, then consent to what the wiki asks, in plain words.
        tab.wait_for_url(f"{site.base}/login?*")
        log_in(tab, "fox")
        expect(tab.get_by_role("heading", level=1)).to_contain_text("Convention Wiki")
        for words in (
            "Sign you in with your regdesk account",
            "See your name, username and basic profile",
            "See your e-mail address",
        ):
            expect(tab.get_by_text(words)).to_be_visible()
        screenshot(tab, "oidc-django-consent")
        tab.get_by_role("button", name="Authorize").click()

        # Back at the wiki, signed in: the library checked the ID token (RS256 against the
        # JWKS, the nonce) and read userinfo.
        tab.wait_for_url(f"{base}/")
        expect(tab.locator("#name")).to_have_text("Fox Tester")
        expect(tab.locator("#email")).to_have_text("fox@example.org")
        screenshot(tab, "oidc-django-signed-in")
        assert wiki_users(directory) == [("fox@example.org", "Fox", "Tester")]

        # Signing out of the wiki signs out of regdesk too, and comes back to the wiki.
        tab.get_by_role("button", name="Sign out").click()
        tab.wait_for_url(signed_out(base))
        expect(tab.get_by_role("heading", name="Signed out of the wiki")).to_be_visible()
        screenshot(tab, "oidc-django-signed-out")
        tab.goto(f"{site.base}/account")
        expect(tab.get_by_role("heading", name="Log in")).to_be_visible()

        # Signing in again asks for the password again (regdesk's session ended), and finds
        # the same wiki account.
        tab.goto(base)
        tab.get_by_role("link", name="Sign in with regdesk").click()
        log_in(tab, "fox")
        tab.get_by_role("button", name="Authorize").click()
        tab.wait_for_url(f"{base}/")
        expect(tab.locator("#email")).to_have_text("fox@example.org")
        assert wiki_users(directory) == [("fox@example.org", "Fox", "Tester")]
        visitor.close()
