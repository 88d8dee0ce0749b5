"""What the password tests share: the forms of /password/forgot, the mailed link's page and
/account's password change, sent as a browser sends them; the mail waiting in the outbox."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import Engine, MetaData, select

from regdesk.db import read_session
from regdesk.outbox.models import OutboxMessage
from tests.web.support import form, forms

LINK = re.compile(r"https://testserver/password/reset/([A-Za-z0-9_-]+)")
NEW_PASSWORD = "a new one, long and mine"
SENT = "If an account goes by that username or e-mail address, we have sent a link"


def ask_for_link(client: TestClient, login: str) -> httpx.Response:
    """Fill in and send /password/forgot; the answer (a redirect) is not followed."""
    fields = form(client.get("/password/forgot").text, "/password/forgot").fields
    return client.post("/password/forgot", data={**fields, "login": login}, follow_redirects=False)


def set_by_link(
    client: TestClient, link: str, password: str = NEW_PASSWORD, again: str | None = None
) -> httpx.Response:
    """Open the mailed link and send its form (which posts back to the link's own address)."""
    page = client.get(link)
    assert page.status_code == 200, page.text
    [reset_form] = forms(page.text)
    assert reset_form.action == ""  # the page does not repeat the token
    fields = {**reset_form.fields, "password": password, "password_again": again or password}
    return client.post(link, data=fields, follow_redirects=False)


def change_on_account(
    client: TestClient, current: str, password: str = NEW_PASSWORD, again: str | None = None
) -> httpx.Response:
    """Send /account's password form (signed in)."""
    fields = form(client.get("/account").text, "/account/password").fields
    fields.update(current_password=current, password=password, password_again=again or password)
    return client.post("/account/password", data=fields, follow_redirects=False)


def field_errors(page: str) -> dict[str, str]:
    """Each field's error message, by the field's name."""
    return dict(re.findall(r'<p class="field-error" id="([^"]+)-error">([^<]*)</p>', page))


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    text: str
    html: str


def outbox(engine: Engine) -> list[Mail]:
    """The mail written to the outbox so far, oldest first."""
    with read_session(engine) as session:
        payloads = session.scalars(select(OutboxMessage.payload).order_by(OutboxMessage.id))
        return [Mail(p["to"], p["subject"], p["text"], p["html"]) for p in payloads]


def link_in(mail: Mail) -> str:
    """The reset link of a mail, the same in both parts."""
    found = LINK.search(mail.text)
    assert found, mail.text
    assert f'href="{found.group(0)}"' in mail.html
    return found.group(0)


def rows_outside_the_outbox(engine: Engine) -> str:
    """Every row of every table but the outbox's (which holds the mail itself, link included,
    until it is sent), as text."""
    reflected = MetaData()
    reflected.reflect(engine)
    parts: list[Any] = []
    with engine.connect() as connection:
        for table in reflected.sorted_tables:
            if table.name != OutboxMessage.__tablename__:
                parts.extend(connection.execute(select(table)))
    return "\n".join(repr(tuple(row)) for row in parts)
