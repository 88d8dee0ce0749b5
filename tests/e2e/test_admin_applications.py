"""Registering and managing an OAuth application in a real browser, against `regdesk serve`.

An administrator registers a tool with a redirect URI and scopes, copies its secret off the
page, and the tool's client_credentials grant works; they rotate the secret (the old one stops,
the new one works), take a scope away (its token loses it at once), suspend it (its token is
refused at once), and find all of it in the audit log. Screenshots: build/screenshots/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.admin_site import AdminSite, admin_site
from tests.e2e.support import screenshot

CALLBACK = "https://clock.example.org/callback"
EVERY_USER = "Read every user's profile and roles"
EVERY_VOLUNTEER = "Read every volunteer application and the departments"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminSite]:
    with admin_site(tmp_path_factory.mktemp("e2e-admin-applications")) as running:
        yield running


def copied_secret(page: Page) -> tuple[str, str]:
    """The client id and secret, as a person selects and copies them off the page."""
    expect(page.get_by_role("heading", name="Copy the client secret now")).to_be_visible()
    return page.locator("#client-id").inner_text(), page.locator("#client-secret").inner_text()


def test_an_administrator_registers_rotates_rescopes_and_suspends_an_application(
    page: Page, site: AdminSite
) -> None:
    site.sign_in(page, "/admin/applications")
    expect(page.get_by_role("heading", name="Applications", exact=True)).to_be_visible()
    page.get_by_role("link", name="Register an application").click()

    # Register: name, description, a redirect URI, scopes chosen from the registry.
    expect(page.get_by_role("heading", name="Register an application")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Volunteer Time Clock")
    page.get_by_label("Description").fill("Clocks volunteer shifts in and out.")
    page.get_by_label("Redirect URIs").fill(CALLBACK)
    people = page.get_by_role("group", name="Scopes it may ask people for")
    people.get_by_role(
        "checkbox", name="See your name, username and basic profile pii:basic"
    ).check()
    service = page.get_by_role("group", name="Scopes for its own service access")
    service.get_by_label(EVERY_USER).check()
    service.get_by_label(EVERY_VOLUNTEER).check()
    # Sensitive scopes are marked as on the consent screen.
    sensitive = service.locator("li", has_text=EVERY_USER)
    expect(sensitive.get_by_text("Administrative")).to_be_visible()
    assert "scope-choice-sensitive" in (sensitive.get_attribute("class") or "")
    screenshot(page, "admin-applications-new")
    page.get_by_role("button", name="Register application").click()

    # The secret, shown this once; the tool's grant works with it through the API.
    expect(page.get_by_role("heading", name="Volunteer Time Clock is registered")).to_be_visible()
    client_id, secret = copied_secret(page)
    screenshot(page, "admin-applications-secret")
    granted = site.token(client_id, secret)
    assert granted.status_code == 200, granted.text
    assert granted.json()["scope"] == "user:read volunteer:read"
    first_token = granted.json()["access_token"]
    assert site.api("GET", "/api/v0/roles", first_token).status_code == 200

    # Rotate: the old secret stops working, the new one works.
    page.get_by_role("link", name="I have copied it").click()
    expect(page.get_by_role("heading", name="Volunteer Time Clock", exact=True)).to_be_visible()
    assert secret not in page.content()
    page.get_by_role("button", name="Rotate secret").click()
    expect(
        page.get_by_role("heading", name="A new secret for Volunteer Time Clock")
    ).to_be_visible()
    same_id, new_secret = copied_secret(page)
    assert same_id == client_id
    assert new_secret != secret
    refused = site.token(client_id, secret)
    assert (refused.status_code, refused.json()["error"]) == (401, "invalid_client")
    assert site.token(client_id, new_secret).status_code == 200

    # Change scopes: without user:read, its token loses it at once.
    page.get_by_role("link", name="I have copied it").click()
    service = page.get_by_role("group", name="Scopes for its own service access")
    service.get_by_label(EVERY_USER).uncheck()
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_contain_text("Its scopes changed")
    expect(
        page.get_by_role("group", name="Scopes for its own service access").get_by_label(EVERY_USER)
    ).not_to_be_checked()
    screenshot(page, "admin-applications-edit")
    assert site.api("GET", "/api/v0/roles", first_token).status_code == 403
    assert site.token(client_id, new_secret, "user:read").json()["error"] == "invalid_scope"
    volunteer_token = site.token(client_id, new_secret).json()["access_token"]
    departments = site.api("GET", "/api/v0/volunteers/departments", volunteer_token)
    assert departments.status_code == 200

    # Suspend: its token is refused at once, and it cannot get another.
    page.get_by_role("button", name="Suspend application").click()
    expect(page.get_by_role("status")).to_contain_text("The application is suspended")
    assert site.api("GET", "/api/v0/volunteers/departments", volunteer_token).status_code == 401
    suspended = site.token(client_id, new_secret)
    assert (suspended.status_code, suspended.json()["error"]) == (401, "invalid_client")

    # The list shows it, suspended, with its scopes.
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Applications").click()
    row = page.get_by_role("row", name=re.compile("Volunteer Time Clock"))
    expect(row).to_contain_text(client_id)
    expect(row).to_contain_text("Suspended")
    expect(row).to_contain_text("volunteer:read")
    screenshot(page, "admin-applications-list")

    # And the audit log has each step, filtered by its action.
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Audit log").click()
    for action in ("app.created", "app.secret_rotated", "app.suspended", "app.updated"):
        page.get_by_label("Action").select_option(action)
        page.get_by_role("button", name="Filter").click()
        # all_inner_texts() does not wait: read the page this filter loaded.
        page.wait_for_url(re.compile(rf"/admin/audit\?action={re.escape(action)}(&|$)"))
        rows = page.get_by_role("table").locator("tbody tr")
        for text in rows.all_inner_texts():
            assert action in text
        ours = rows.filter(has_text=f"application {client_id}")
        expect(ours).to_have_count(1)
        expect(ours).to_contain_text("user:1")  # ada, the administrator
        if action == "app.updated":
            expect(ours).to_contain_text("service_scopes")
    screenshot(page, "admin-audit")
