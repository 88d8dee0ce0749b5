"""Logging in and out (accounts/pages.py): who may, what a failed login says, and where the
visitor goes next. The session cookie and its lifetime are tests/web/test_sessions.py's; a new
id at each login and the session's end at logout, tests/security/test_sessions.py's."""

from __future__ import annotations

import threading

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, update
from sqlalchemy import event as sql_event

from regdesk import security
from regdesk.db import write_session
from regdesk.users.models import User
from tests.client import TestClient
from tests.helpers import database_text
from tests.web.support import (
    PASSWORD,
    audit,
    form,
    forms,
    log_in,
    make_user,
    session_cookie,
)

WRONG = "That username or e-mail and password do not match an account."


def test_the_login_form_has_labelled_fields_and_a_log_in_button(client: TestClient) -> None:
    page = client.get("/login")
    assert page.status_code == 200
    assert '<label for="username">Username</label>' in page.text
    assert 'id="username" name="username"' in page.text
    assert '<label for="password">Password</label>' in page.text
    assert 'id="password" name="password" type="password"' in page.text
    login_form = form(page.text, "/login")
    assert login_form.method == "post"
    assert [b["text"] for b in login_form.buttons] == ["Log in"]


def test_log_in_by_username_or_email_whatever_the_case(client: TestClient, engine: Engine) -> None:
    user_id = make_user(engine)
    logins = ["fox", "FOX", "fox@example.org", "Fox@Example.ORG", " fox "]
    for login in logins:
        response = log_in(client, login)
        assert response.status_code == 303, login
        assert response.headers["location"] == "/account"
        page = client.get("/account")
        assert page.status_code == 200
        assert "fox@example.org" in page.text
    events = audit(engine, "user.login")
    assert len(events) == len(logins)
    for event in events:
        assert event.actor_user_id == user_id
        assert event.actor == f"user:{user_id}"
        assert event.ip_address == "testclient"


@pytest.mark.parametrize(
    ("login", "password"),
    [("fox", "wrong password"), ("nobody", PASSWORD), ("nobody@example.org", PASSWORD)],
    ids=["wrong-password", "unknown-username", "unknown-email"],
)
def test_a_failed_login_says_the_same_whatever_went_wrong(
    client: TestClient, engine: Engine, login: str, password: str
) -> None:
    make_user(engine)
    response = log_in(client, login, password)
    assert response.status_code == 200
    assert WRONG in response.text
    assert 'role="alert"' in response.text
    assert session_cookie(client) is None
    assert client.get("/account", follow_redirects=False).status_code == 303
    [event] = audit(engine, "user.login_failed")
    assert password not in str(event.details)
    assert event.ip_address == "testclient"


def test_a_user_without_a_password_cannot_log_in(client: TestClient, engine: Engine) -> None:
    make_user(engine, "owl", password=None)
    for password in ("", "anything"):
        response = log_in(client, "owl", password)
        assert response.status_code == 200
        assert WRONG in response.text
    assert session_cookie(client) is None


def test_no_password_is_kept_anywhere_after_failures(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    log_in(client, "fox", "hunter2-typed-wrongly")
    log_in(client, "hunter2-in-the-username-field", "x")
    text = database_text(engine)
    assert "hunter2" not in text
    assert PASSWORD not in text


def test_the_logout_page_of_a_visitor_not_signed_in_says_so(client: TestClient) -> None:
    page = client.get("/logout")
    assert page.status_code == 200
    assert "You are signed out" in page.text
    assert not [f for f in forms(page.text) if f.action == "/logout"]
    assert client.post("/logout", follow_redirects=False).headers["location"] == "/logout"


# --- where the visitor goes after logging in ----------------------------------------------


@pytest.mark.parametrize(
    "next_", ["/account", "/oauth/authorize?client_id=1&scope=pii%3Abasic&state=a%7Cb"]
)
def test_login_returns_to_a_local_next(client: TestClient, engine: Engine, next_: str) -> None:
    make_user(engine)
    response = log_in(client, next_=next_)
    assert response.headers["location"] == next_


def test_login_never_sends_the_visitor_to_another_site(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    for next_ in (
        "https://evil.example",
        "//evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "/\t/evil.example",
        "evil.example",
        "javascript:alert(1)",
        "",
    ):
        page = client.get("/login", params={"next": next_})
        assert "evil" not in str(form(page.text, "/login").fields)
        fields = {**form(page.text, "/login").fields, "next": next_}
        fields.update(username="fox", password=PASSWORD)
        response = client.post("/login", data=fields, follow_redirects=False)
        assert response.status_code == 303
        assert response.headers["location"] == "/account", next_


def test_the_password_is_checked_without_holding_up_other_writers(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """argon2 takes its time on purpose; the database's write lock (SQLite has one) must not
    be held meanwhile, or a storm of logins stalls every grant and every edit."""
    make_user(engine, "fox")
    checking, finish = threading.Event(), threading.Event()
    hasher = security._password_hasher

    class SlowHasher:
        def verify(self, password_hash: str, password: str) -> bool:
            checking.set()
            finish.wait(30)
            return bool(hasher.verify(password_hash, password))

    monkeypatch.setattr(security, "_password_hasher", SlowHasher())
    login = threading.Thread(target=log_in, args=(client, "fox"))
    login.start()
    try:
        assert checking.wait(30), "the login never reached its password check"
        wrote = threading.Event()

        def write() -> None:
            with write_session(engine) as session:
                session.execute(update(User).where(User.username == "fox").values(newsletter=True))
            wrote.set()

        writer = threading.Thread(target=write)
        writer.start()
        assert wrote.wait(10), "a write waited for the login's password check"
    finally:
        finish.set()
        login.join(30)
        writer.join(30)
    assert session_cookie(client) is not None  # and the login itself went through


def test_the_login_page_for_a_visitor_without_a_session_asks_the_database_nothing(
    app: FastAPI, client: TestClient
) -> None:
    """Its page transaction sends nothing, so it never takes SQLite's write lock: a crowd
    opening the login page when registration opens does not queue behind the writers."""
    sent: list[str] = []

    @sql_event.listens_for(app.state.engine, "before_cursor_execute")
    def note(_c: object, _cur: object, statement: str, *_: object) -> None:
        if threading.current_thread().name != "regdesk-outbox":  # its own rounds, meanwhile
            sent.append(statement)

    assert client.get("/login").status_code == 200
    assert sent == []
