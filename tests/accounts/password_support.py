"""What the password tests share: the forms of /password/forgot, the mailed link's page and
/account's password change, sent as a browser sends them; the mail waiting in the outbox."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx
from sqlalchemy import Engine

from tests.client import TestClient
from tests.mail.support import opened_outbox
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
    """The mail written to the outbox so far and not sent, oldest first, opened as its
    channel opens it."""
    return [Mail(**message) for message in opened_outbox(engine)]


def link_in(mail: Mail) -> str:
    """The reset link of a mail, the same in both parts."""
    found = LINK.search(mail.text)
    assert found, mail.text
    assert f'href="{found.group(0)}"' in mail.html
    return found.group(0)
