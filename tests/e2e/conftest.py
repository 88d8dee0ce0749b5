"""What every browser test shares: Debian's Chromium driven by Playwright (never
`playwright install`), a fresh profile per test, screenshots under build/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "/usr/bin/chromium is not installed (apt-get install chromium); browser tests skipped",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser profile (no cookies) for each test, and no CSP complaints allowed."""
    context = browser.new_context(viewport={"width": 1024, "height": 800})
    context.set_default_timeout(10_000)
    tab = context.new_page()
    complaints: list[str] = []
    tab.on(
        "console",
        lambda m: complaints.append(m.text) if "Content Security Policy" in m.text else None,
    )
    yield tab
    context.close()
    assert complaints == []
