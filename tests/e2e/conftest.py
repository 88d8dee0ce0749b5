"""What every browser test shares: Debian's Chromium driven by Playwright (never
`playwright install`), a fresh profile per test, screenshots under build/screenshots/.

The browser is Debian's headless shell of Chromium (package chromium-headless-shell): the
same engine, without the desktop browser's window machinery around it. On these 2-core
machines it runs the browser tests in about 30 % less time than the full `chromium` started
headless (tests/e2e and the Django site: 139 s, against 99 s with the shell).

One Chromium serves the browser test files that run one after another in a test process (the
files are collected together, tests/conftest.py RUN_FIRST), each test with a profile of its
own; it is closed before the process goes on to any other file, because Playwright's
synchronous API holds an event loop open in its thread meanwhile, and `asyncio.run()` refuses
to start beside one.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is not installed (apt-get install chromium-headless-shell);"
        " browser tests skipped",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, Playwright, sync_playwright  # noqa: E402

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


HERE = Path(__file__).resolve().parent
_running: list[tuple[Playwright, Browser]] = []  # this process's, while browser tests follow


@pytest.fixture
def browser(request: pytest.FixtureRequest) -> Iterator[Browser]:
    if not _running:
        playwright = sync_playwright().start()
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        _running.append((playwright, chromium))
    yield _running[0][1]
    if not in_here(request.node):  # a test elsewhere that takes these fixtures (tests/oidc)
        _close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """After the last browser test before another file (or none): Chromium closed."""
    yield
    if nextitem is None or not in_here(nextitem):
        _close()


def in_here(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).parents


def _close() -> None:
    if _running:
        playwright, chromium = _running.pop()
        chromium.close()
        playwright.stop()


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
