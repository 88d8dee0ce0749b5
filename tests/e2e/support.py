"""Steps the browser tests share: logging in and out as a person does, screenshots of the
pages, the link in a mail, and an application's redirect address for the browser to land on."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from regdesk.events.models import Event
from regdesk.events.service import current_event_for_writing
from regdesk.registrations.models import Product

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


def log_out(page: Page) -> None:
    """The header's "Log out" button, as a person leaves; lands on "Signed out"."""
    page.get_by_role("navigation", name="Your account").get_by_role(
        "button", name="Log out"
    ).click()
    expect(page.get_by_role("heading", name="Signed out")).to_be_visible()


def mailed_link(mail: Message, base: str, path: str) -> str:
    """The link to `base` + `path` + a token in the mail's plain text, as a person would click."""
    text = next(part for part in mail.walk() if part.get_content_type() == "text/plain")
    body = text.get_payload(decode=True)
    assert isinstance(body, bytes)
    found = re.search(re.escape(base + path) + r"[A-Za-z0-9_-]+", body.decode())
    assert found, body
    return found.group(0)


class _Application(BaseHTTPRequestHandler):
    """The application's page at its redirect address: "Back at the Time Clock"."""

    def do_GET(self) -> None:
        body = b"<!doctype html><title>Time Clock</title><h1>Back at the Time Clock</h1>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def application_callback() -> Iterator[str]:
    """A tiny HTTP server on 127.0.0.1 playing the application: its redirect address."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Application)
    # Looking every 10 ms whether to stop, not 500 (http.server's default): shutdown() waits.
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/callback"
    finally:
        server.shutdown()


def open_event(session: Session, name: str) -> Event:
    """The current event, named `name`, selling an attendee badge (65.00, 500 places)."""
    event = current_event_for_writing(session)
    event.name = name
    session.add(
        Product(
            event_id=event.id,
            name="attendee",
            display_name="Attendee",
            description="Entry for all four days.",
            price=6500,
            capacity=500,
            position=1,
        )
    )
    return event
