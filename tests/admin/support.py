"""What the admin-page tests share: the people of the admin area, logged in, and posting
forms the way their browser would (with the session's CSRF token).

`people.admin` holds the `admin` permission; `people.security_lead` leads the "Security"
department and `people.hotel_lead` leads "Hotel"; `people.attendee` holds no right at all.
Each `Person` has a TestClient of their own (cookies kept apart) on the same app.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.departments.service import add_lead, create_department
from tests.client import TestClient
from tests.web.support import PASSWORD, form, make_user, signed_in

BASE_URL = "https://testserver"


@dataclass(frozen=True)
class Person:
    username: str
    user_id: int
    client: TestClient

    def csrf_token(self) -> str:
        """The token every form of this person's session carries (read off a page's form)."""
        page = self.client.get("/account")
        assert page.status_code == 200, page.text
        return form(page.text, "/logout").fields["csrf_token"]

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.get(path, follow_redirects=False, **kwargs)

    def post(
        self, path: str, data: Mapping[str, Any] | None = None, *, token: str | None = None
    ) -> httpx.Response:
        """A form sent as the browser sends it: with this session's CSRF token, unfollowed."""
        fields = {"csrf_token": token if token is not None else self.csrf_token(), **(data or {})}
        return self.client.post(path, data=fields, follow_redirects=False)


@dataclass(frozen=True)
class People:
    admin: Person
    security_lead: Person
    hotel_lead: Person
    attendee: Person
    security_id: int  # the department "Security"
    hotel_id: int  # the department "Hotel"


def person(app: FastAPI, engine: Engine, username: str, **user: Any) -> Person:
    """A new user, logged in with a client of their own (sharing the app and its lifespan)."""
    user_id = make_user(engine, username, **user)
    client = TestClient(app, base_url=BASE_URL)
    signed_in(client, username)
    return Person(username, user_id, client)


def department(engine: Engine, name: str, *leads: str, visible: bool = True) -> int:
    with write_session(engine) as session:
        made = create_department(
            session,
            Actor("test"),
            name=name,
            email=f"{name.lower()}@example.org",
            publicly_visible=visible,
        )
        for username in leads:
            add_lead(session, Actor("test"), made, username)
        return made.id


def seed_people(engine: Engine, app: FastAPI, client: TestClient) -> People:
    """`client` is the one whose lifespan runs (set up by tests/conftest.py's fixture)."""
    admin = person(app, engine, "ada", permissions=["admin"])
    security_lead = person(app, engine, "sam")
    hotel_lead = person(app, engine, "hal")
    attendee = person(app, engine, "ann")
    security_id = department(engine, "Security", "sam")
    hotel_id = department(engine, "Hotel", "hal")
    return People(admin, security_lead, hotel_lead, attendee, security_id, hotel_id)


__all__ = ["PASSWORD", "People", "Person", "department", "person", "seed_people"]
