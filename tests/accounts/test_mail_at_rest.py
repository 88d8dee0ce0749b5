"""A mailed link is a key to the account until it is used (a password reset, an address to
confirm): while its mail waits in the outbox, the database holds it sealed (mail/service.py),
so a backup or a read-only database user cannot follow it. The mail still reaches the person
whole, and its link works."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from email.message import Message

import pytest
from sqlalchemy import Engine, text

from regdesk.app import create_app
from regdesk.config import load_settings
from tests.accounts.password_support import NEW_PASSWORD, ask_for_link, set_by_link
from tests.client import TestClient
from tests.conftest import PUBLIC_URL
from tests.helpers import database_text
from tests.mail.support import smtp_server
from tests.web.support import PASSWORD, form, forms, log_in, make_user

pytestmark = pytest.mark.postgres
RESET = re.compile(r"https://testserver/password/reset/[A-Za-z0-9_-]+")
VERIFY = re.compile(r"https://testserver/verify/[A-Za-z0-9_-]+")


def raw_outbox(engine: Engine) -> list[str]:
    """The outbox's payloads as the database holds them, by plain SQL: what a backup keeps."""
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT payload FROM outbox_messages ORDER BY id"))
        return [value if isinstance(value, str) else json.dumps(value) for (value,) in rows]


def text_part(message: Message) -> str:
    for part in message.walk():
        if part.get_content_type() == "text/plain":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            return payload.decode()
    raise AssertionError("no text/plain part")


def html_part(message: Message) -> str:
    for part in message.walk():
        if part.get_content_type() == "text/html":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            return payload.decode()
    raise AssertionError("no text/html part")


@pytest.fixture
def offline(engine: Engine, database_url: str) -> Iterator[TestClient]:
    """The app with no mail server (the embedded default): mail waits in the outbox."""
    app = create_app(load_settings(database_url=database_url, public_url=PUBLIC_URL))
    with TestClient(app, base_url=PUBLIC_URL) as client:
        yield client


def a_mail_server_comes(database_url: str, count: int) -> list[Message]:
    """A server process with a mail server configured starts on the same database: what it
    receives of what waited."""
    with smtp_server() as (inbox, port):
        settings = load_settings(
            database_url=database_url,
            public_url=PUBLIC_URL,
            smtp_url=f"smtp://127.0.0.1:{port}",
            mail_from="Convention <reg@con.example.org>",
        )
        with TestClient(create_app(settings), base_url=PUBLIC_URL):
            return inbox.wait_for(count)


def test_a_waiting_reset_link_is_sealed_and_still_arrives_working(
    offline: TestClient, engine: Engine, database_url: str
) -> None:
    make_user(engine, "fox")
    assert ask_for_link(offline, "fox").status_code == 303
    [row] = raw_outbox(engine)
    assert "/password/reset/" not in row
    assert "works once, within an hour" not in row  # no body text either
    assert json.loads(row)["to"] == "fox@example.org"  # listed: to whom, about what
    assert json.loads(row)["subject"] == "Set a new password"
    before = database_text(engine)

    [message] = a_mail_server_comes(database_url, 1)
    assert (message["To"], message["Subject"]) == ("fox@example.org", "Set a new password")
    found = RESET.search(text_part(message))
    assert found is not None
    link = found.group(0)
    assert f'href="{link}"' in html_part(message)
    assert "works once, within an hour" in text_part(message)
    token = link.rsplit("/", 1)[1]
    assert token not in before  # nowhere in the database while it waited
    assert token not in database_text(engine)  # nor once sent

    assert set_by_link(offline, link).status_code == 303
    assert (
        "do not match" in log_in(TestClient(offline.app, base_url=PUBLIC_URL), "fox", PASSWORD).text
    )
    assert log_in(offline, "fox", NEW_PASSWORD).status_code == 303


def test_a_waiting_verification_link_is_sealed_and_still_arrives_working(
    offline: TestClient, engine: Engine, database_url: str
) -> None:
    fields = form(offline.get("/signup").text, "/signup").fields
    typed = {
        "username": "fae",
        "first_name": "Fae",
        "last_name": "Fox",
        "preferred_name": "",
        "email": "fae@example.org",
        "born": "1994-05-17",
        "password": "a quiet fox at dusk",
    }
    assert offline.post("/signup", data={**fields, **typed}).status_code == 200
    [row] = raw_outbox(engine)
    assert "/verify/" not in row
    assert json.loads(row)["subject"] == "Confirm your e-mail address"

    [message] = a_mail_server_comes(database_url, 1)
    found = VERIFY.search(text_part(message))
    assert found is not None
    link = found.group(0)
    assert link.rsplit("/", 1)[1] not in database_text(engine)
    stranger = TestClient(offline.app, base_url=PUBLIC_URL)  # the mail opened elsewhere
    [button] = forms(stranger.get(link).text)
    done = stranger.post(link, data=button.fields)
    assert (done.status_code, "is confirmed" in done.text) == (200, True)
