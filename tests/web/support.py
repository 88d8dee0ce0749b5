"""What the web-page tests share: users with passwords, reading forms out of pages, logging in,
and authorization requests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.users.service import NewUser, create_user
from tests.client import TestClient
from tests.conftest import Registered, register_application

PASSWORD = "correct horse battery staple"
CALLBACK = "https://app.example/cb"
ISSUER = "https://testserver"


def make_user(
    engine: Engine,
    username: str = "fox",
    *,
    email: str | None = None,
    password: str | None = PASSWORD,
    permissions: Sequence[str] = (),
) -> int:
    with write_session(engine) as session:
        user = create_user(
            session,
            Actor("test"),
            NewUser(
                username=username,
                email=email or f"{username}@example.org",
                first_name="Fae",
                last_name=username.capitalize(),
                password=password,
                permissions=permissions,
            ),
        )
        return user.id


# --- reading pages -------------------------------------------------------------------------


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    buttons: list[dict[str, str]] = field(default_factory=list)


class _FormReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._button: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append(Form(found.get("action", ""), found.get("method", "get")))
        elif tag == "input" and self.forms and "name" in found:
            self.forms[-1].fields[found["name"]] = found.get("value", "")
        elif tag == "button" and self.forms:
            self._button = {**found, "text": ""}
            self.forms[-1].buttons.append(self._button)

    def handle_data(self, data: str) -> None:
        if self._button is not None:
            self._button["text"] += data.strip()

    def handle_endtag(self, tag: str) -> None:
        if tag == "button":
            self._button = None


def forms(html: str) -> list[Form]:
    reader = _FormReader()
    reader.feed(html)
    return reader.forms


def form(html: str, action: str) -> Form:
    """The (first) form of the page that posts to `action`."""
    found = [f for f in forms(html) if f.action == action]
    assert found, f"no form posting to {action} in the page"
    return found[0]


def query(location: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(location).query, keep_blank_values=True)


def audit(engine: Engine, action: str) -> list[AuditEvent]:
    with Session(engine) as session:
        return list(
            session.scalars(
                select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
            )
        )


# --- acting as a visitor -------------------------------------------------------------------


def log_in(
    client: TestClient, login: str = "fox", password: str = PASSWORD, next_: str | None = None
) -> httpx.Response:
    """Fill in and send the login form, as a browser would. The answer is not followed."""
    page = client.get("/login", params={"next": next_} if next_ else None)
    fields = form(page.text, "/login").fields
    fields.update(username=login, password=password)
    return client.post("/login", data=fields, follow_redirects=False)


def signed_in(client: TestClient, login: str = "fox") -> None:
    response = log_in(client, login)
    assert response.status_code == 303, response.text


def session_cookie(client: TestClient) -> str | None:
    value: str | None = client.cookies.get("regdesk_session")
    return value


def use_session_cookie(client: TestClient, value: str) -> None:
    """Present `value` as the session cookie from now on (a kept copy, or a planted one)."""
    client.cookies.delete("regdesk_session")
    client.cookies.set("regdesk_session", value, domain="testserver.local")


def authorize_params(
    app: Registered,
    scope: str = "pii:basic",
    *,
    state: str | None = "xyz",
    redirect_uri: str = CALLBACK,
    **extra: str,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "client_id": app.client_id,
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "scope": scope,
        **extra,
    }
    if state is not None:
        params["state"] = state
    return params


APP_NAME = "Volunteer Time Clock"
APP_DESCRIPTION = "Clocks volunteer shifts in and out at the con."


def register_app(
    engine: Engine,
    obo_scopes: str = "pii:basic pii:email user:read",
    *,
    name: str = APP_NAME,
    redirect_uris: Sequence[str] = (CALLBACK,),
) -> Registered:
    return register_application(
        engine,
        name=name,
        description=APP_DESCRIPTION,
        redirect_uris=redirect_uris,
        obo_scopes=obo_scopes,
    )
