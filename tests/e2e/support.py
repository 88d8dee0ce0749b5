"""Steps the browser tests share: logging in as a person does, and screenshots of the pages."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
PASSWORD = "correct horse battery staple"


def screenshot(page: Page, name: str) -> None:
    """build/screenshots/<name>.png, the whole page, for a reviewer to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def log_in(page: Page, username: str, password: str = PASSWORD) -> None:
    """On the login page: type the username and password and press "Log in"."""
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
