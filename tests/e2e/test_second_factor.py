"""Second factors, in a real browser against `regdesk serve` (accounts.md, Second factor): a
person adds an authenticator app on /account from the key the setup page shows (the codes
made with pyotp, as the app would) and keeps the ten recovery codes; signing in then asks for
a code, refuses a wrong one and takes the right one; a recovery code signs in once. With
REGDESK_STAFF_2FA=required, an administrator without a factor is sent from /admin to add one,
and the admin area opens once they have. Screenshots: build/screenshots/factor-*.png.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pyotp
import pytest
from playwright.sync_api import Page, expect

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.users.service import NewUser, create_user
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, log_in, log_out, screenshot
from tests.helpers import live_server

WRONG_CODE = "That code does not work."


def _site(directory: Path, settings: dict[str, str]) -> Iterator[str]:
    """A live regdesk with an attendee (fox) and an administrator (ada), neither with a factor."""
    url = migrated_sqlite_url(directory / "regdesk.sqlite3")
    engine = make_engine(url)
    with write_session(engine) as session:
        for username, permissions in (("fox", []), ("ada", ["admin"])):
            new = NewUser(
                username=username,
                email=f"{username}@example.org",
                first_name=username.capitalize(),
                last_name="Tester",
                password=PASSWORD,
                permissions=permissions,
            )
            create_user(session, Actor("test"), new)
    engine.dispose()
    with live_server(url, settings) as base:
        yield base


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _site(tmp_path_factory.mktemp("e2e-factor"), {})


@pytest.fixture(scope="module")
def staff_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _site(tmp_path_factory.mktemp("e2e-staff-factor"), {"REGDESK_STAFF_2FA": "required"})


def add_authenticator_app(page: Page, shot: str) -> tuple[pyotp.TOTP, list[str]]:
    """On /account: add an app from the key the setup page shows, confirm it with the code it
    shows now; returns the app and the recovery codes shown."""
    page.get_by_role("button", name="Add an authenticator app").click()
    expect(page.get_by_role("heading", name="Add an authenticator app")).to_be_visible()
    expect(
        page.get_by_role("img", name="QR code of your authenticator app's secret")
    ).to_be_visible()
    key = page.locator("#totp-secret").inner_text()
    app = pyotp.TOTP("".join(key.split()))
    screenshot(page, f"{shot}-setup")
    page.get_by_label("Code from the app").fill(app.now())
    page.get_by_role("button", name="Add the app").click()

    expect(page.get_by_role("heading", name="Your recovery codes")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text(
        "Your second factor was added. Signing in now asks for it."
    )
    codes = page.get_by_role("list", name="Recovery codes").get_by_role("listitem")
    expect(codes).to_have_count(10)
    screenshot(page, f"{shot}-recovery-codes")
    shown = [code.strip() for code in codes.all_inner_texts()]
    assert len(set(shown)) == 10
    page.get_by_role("link", name="I have kept them: back to your account").click()
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()
    return app, shown


def next_code(app: pyotp.TOTP) -> str:
    """The app's code of the next 30-second step: the one just typed to confirm it is spent
    (a code works once), and the server takes a neighbouring step for clocks that drift."""
    return app.at(time.time() + app.interval)


def wrong_code(app: pyotp.TOTP) -> str:
    """Six digits that are none of the codes the server would take now."""
    now = time.time()
    near = {app.at(now + app.interval * k) for k in range(-2, 3)}
    return next(c for c in (f"{n:06d}" for n in range(123456, 123466)) if c not in near)


def second_step(page: Page, code: str) -> None:
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible()
    page.get_by_label("Code from your authenticator app, or a recovery code").fill(code)
    page.get_by_role("button", name="Log in").click()


def test_add_an_app_then_sign_in_with_its_code_and_with_a_recovery_code(
    page: Page, site: str
) -> None:
    page.goto(f"{site}/account")
    log_in(page, "fox")
    expect(
        page.get_by_text("You get ten recovery codes when you add a second factor.")
    ).to_be_visible()
    app, recovery_codes = add_authenticator_app(page, "factor")
    expect(page.get_by_role("button", name="Remove the app")).to_be_visible()
    expect(page.get_by_text("10 of your ten recovery codes are left")).to_be_visible()

    log_out(page)
    page.get_by_role("link", name="Log in again").click()
    log_in(page, "fox")
    page.wait_for_url(f"{site}/login/second-factor")
    expect(page.get_by_role("heading", name="Your account")).to_have_count(0)
    screenshot(page, "factor-second-step")
    second_step(page, wrong_code(app))
    expect(page.get_by_role("alert")).to_contain_text(WRONG_CODE)
    screenshot(page, "factor-second-step-refused")
    second_step(page, next_code(app))
    page.wait_for_url(f"{site}/account")
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()

    log_out(page)
    page.goto(f"{site}/login")
    log_in(page, "fox")
    second_step(page, recovery_codes[0])
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()
    expect(page.get_by_text("9 of your ten recovery codes are left")).to_be_visible()
    screenshot(page, "factor-recovery-code-used")

    log_out(page)
    page.goto(f"{site}/login")
    log_in(page, "fox")
    second_step(page, recovery_codes[0])
    expect(page.get_by_role("alert")).to_contain_text(WRONG_CODE)
    expect(page.get_by_role("heading", name="Your account")).to_have_count(0)
    second_step(page, recovery_codes[1])
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()


def test_staff_without_a_factor_are_sent_from_admin_to_add_one(page: Page, staff_site: str) -> None:
    page.goto(f"{staff_site}/admin")
    log_in(page, "ada")
    page.wait_for_url(f"{staff_site}/account?factor=required#factors-heading")
    expect(page.get_by_role("alert")).to_contain_text(
        "The organizers require a second factor for accounts that can see other people's data"
    )
    expect(page.get_by_role("navigation", name="Admin")).to_have_count(0)
    screenshot(page, "factor-staff-required")

    add_authenticator_app(page, "factor-staff")
    page.get_by_role("navigation", name="Your account").get_by_role("link", name="Admin").click()
    page.wait_for_url(f"{staff_site}/admin")
    expect(page.get_by_role("navigation", name="Admin")).to_be_visible()
    screenshot(page, "factor-staff-admin")
