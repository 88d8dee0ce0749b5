"""A live regdesk for the browser tests of applications, import and export, and the audit log:
an administrator (ada), an attendee (fox), and a service integration that reads users through
the API the way a tool does (api.md 4.6, 4.7)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.oauth.applications import create_application
from regdesk.users.service import NewUser, create_user
from tests import http_calls
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, log_in
from tests.helpers import live_server

ADMIN = "ada"


@dataclass(frozen=True)
class AdminSite:
    base: str
    engine: Engine
    reader_id: str  # a service integration holding user:read
    reader_secret: str

    def token(self, client_id: str, secret: str, scope: str | None = None) -> httpx.Response:
        """The client_credentials grant, as a tool asks for it."""
        form = {"grant_type": "client_credentials"}
        if scope is not None:
            form["scope"] = scope
        return http_calls.post(f"{self.base}/api/oauth/token", data=form, auth=(client_id, secret))

    def api(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"}
        return http_calls.request(method, f"{self.base}{path}", headers=headers, **kwargs)

    def users(self) -> list[dict[str, Any]]:
        """Every user as user search returns them (api.md 4.7), page after page."""
        granted = self.token(self.reader_id, self.reader_secret)
        assert granted.status_code == 200, granted.text
        token = granted.json()["access_token"]
        found: list[dict[str, Any]] = []
        body: dict[str, Any] = {"limit": 100}
        while True:
            page = self.api("POST", "/api/v0/users/search", token, json=body)
            assert page.status_code == 200, page.text
            found.extend(page.json()["data"])
            if not page.json().get("nextPage"):
                return found
            body = {"limit": 100, "nextPage": page.json()["nextPage"]}

    def sign_in(self, page: Page, path: str) -> None:
        """Open an admin page signed out: log in as the administrator and land on it."""
        page.goto(f"{self.base}{path}")
        log_in(page, ADMIN)
        page.wait_for_url(f"{self.base}{path}")
        expect(page.get_by_role("navigation", name="Admin")).to_be_visible()


@contextmanager
def admin_site(directory: Path) -> Iterator[AdminSite]:
    url = migrated_sqlite_url(directory / "regdesk.sqlite3")
    engine = make_engine(url)
    with write_session(engine) as session:
        for username, permissions in ((ADMIN, ["admin"]), ("fox", [])):
            create_user(
                session,
                Actor("test"),
                NewUser(
                    username=username,
                    email=f"{username}@example.org",
                    first_name=username.capitalize(),
                    last_name="Tester",
                    password=PASSWORD,
                    permissions=permissions,
                ),
            )
        reader, secret = create_application(
            session, Actor("test"), name="Directory Reader", service_scopes="user:read"
        )
    try:
        with live_server(url) as base:
            yield AdminSite(base, engine, str(reader.id), secret)
    finally:
        engine.dispose()
