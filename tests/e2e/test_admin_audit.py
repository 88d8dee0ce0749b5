"""The audit log on a phone, with the keyboard only, against `regdesk serve`.

Someone mistypes the administrator's password; the administrator then filters the log to the
failed sign-ins using Tab and the keyboard alone, on a 360 px wide screen, and finds that
attempt with where it came from. The applications and import pages fit that screen too.
Screenshot: build/screenshots/admin-audit-phone.png.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.admin_site import ADMIN, AdminSite, admin_site
from tests.e2e.support import log_in, screenshot

PHONE = {"width": 360, "height": 740}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminSite]:
    with admin_site(tmp_path_factory.mktemp("e2e-admin-audit")) as running:
        yield running


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def tab_to(page: Page, wanted: str, limit: int = 40) -> None:
    """Press Tab until the focused element matches the CSS selector `wanted`, and check that
    the focus can be seen."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement.matches(s)", wanted):
            outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
            assert outline != "none", f"{wanted} has no visible focus"
            return
    raise AssertionError(f"Tab never reached {wanted}")


def fits(page: Page) -> bool:
    """No sideways scrolling of the page itself (wide tables scroll inside their wrapper)."""
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_the_audit_log_is_filtered_with_the_keyboard_on_a_phone(
    phone: Page, site: AdminSite
) -> None:
    phone.goto(f"{site.base}/login")
    log_in(phone, ADMIN, "not the password")
    expect(phone.get_by_role("alert")).to_contain_text("do not match")
    phone.goto(f"{site.base}/admin/audit")
    log_in(phone, ADMIN)
    phone.wait_for_url(f"{site.base}/admin/audit")
    assert fits(phone)

    # Keyboard only: the action list, then the Filter button.
    tab_to(phone, "#action")
    for _ in range(20):  # the arrow keys walk the options of a focused list
        if phone.get_by_label("Action").input_value() == "user.login_failed":
            break
        phone.keyboard.press("ArrowDown")
    assert phone.get_by_label("Action").input_value() == "user.login_failed"
    tab_to(phone, "form.filters button[type=submit]")
    phone.keyboard.press("Enter")
    phone.wait_for_url("**/admin/audit?action=user.login_failed&*")

    rows = phone.get_by_role("table").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("user.login_failed")
    expect(rows.first).to_contain_text("anonymous")
    expect(rows.first).to_contain_text("127.0.0.1")
    expect(rows.first).to_contain_text("reason: wrong_password")
    assert fits(phone)
    # The table scrolls inside its wrapper, which the keyboard can reach.
    tab_to(phone, ".table-wrap[role=region]")
    screenshot(phone, "admin-audit-phone")

    for path in ("/admin/applications", "/admin/applications/new", "/admin/transfer"):
        phone.goto(f"{site.base}{path}")
        expect(phone.get_by_role("navigation", name="Admin")).to_be_visible()
        assert fits(phone), path
