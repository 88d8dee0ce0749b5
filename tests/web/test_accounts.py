"""Logging in and out: who may, what the cookie looks like, and where the visitor goes next."""

from __future__ import annotations

import datetime as dt
import hashlib
import threading

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, update

from regdesk import security
from regdesk.db import write_session
from regdesk.users.models import User
from regdesk.web.models import WebSession
from tests.helpers import database_text
from tests.web.support import (
    PASSWORD,
    audit,
    form,
    forms,
    log_in,
    make_user,
    session_cookie,
    use_session_cookie,
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


def test_the_session_cookie_is_httponly_lax_and_secure_over_https(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine)
    response = log_in(client)
    cookie = response.headers["set-cookie"]
    attributes = [part.strip().lower() for part in cookie.split(";")]
    assert attributes[0].startswith("regdesk_session=")
    assert "httponly" in attributes
    assert "samesite=lax" in attributes
    assert "path=/" in attributes
    assert "secure" in attributes


def test_the_session_cookie_is_not_secure_over_plain_http(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    # Plain HTTP is answered on loopback only (regdesk.transport). `client` ran the lifespan.
    plain = TestClient(app, base_url="http://testserver", client=("127.0.0.1", 50000))
    cookie = log_in(plain).headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "secure" not in cookie


def test_the_session_is_stored_only_as_a_hash(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    log_in(client)
    cookie = session_cookie(client)
    assert cookie
    assert cookie not in database_text(engine)
    with engine.connect() as connection:
        stored = connection.scalars(select(WebSession.session_hash)).all()
    assert stored == [hashlib.sha256(cookie.encode()).hexdigest()]


def test_logging_in_gives_a_new_session_id_and_kills_the_old_one(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine)
    make_user(engine, "owl")
    use_session_cookie(client, "planted-by-someone-else-0123456789abcdef")
    log_in(client, "fox")
    first = session_cookie(client)
    assert first
    assert first != "planted-by-someone-else-0123456789abcdef"
    log_in(client, "owl")
    second = session_cookie(client)
    assert second
    assert second != first
    assert "owl@example.org" in client.get("/account").text
    use_session_cookie(client, first)
    assert client.get("/account", follow_redirects=False).headers["location"] == (
        "/login?next=%2Faccount"
    )
    with engine.connect() as connection:
        assert len(connection.scalars(select(WebSession.id)).all()) == 1


def test_logging_out_ends_the_session_on_the_server(client: TestClient, engine: Engine) -> None:
    user_id = make_user(engine)
    log_in(client)
    cookie = session_cookie(client)
    assert cookie
    page = client.get("/logout")
    assert "You are logged in as" in page.text
    response = client.post(
        "/logout", data=form(page.text, "/logout").fields, follow_redirects=False
    )
    assert response.status_code == 303
    assert session_cookie(client) is None
    assert "You are signed out" in client.get(response.headers["location"]).text
    use_session_cookie(client, cookie)  # a copy kept from before is worth nothing
    assert client.get("/account", follow_redirects=False).status_code == 303
    [event] = audit(engine, "user.logout")
    assert event.actor_user_id == user_id
    with engine.connect() as connection:
        assert connection.scalars(select(WebSession.id)).all() == []


def test_the_logout_page_of_a_visitor_not_signed_in_says_so(client: TestClient) -> None:
    page = client.get("/logout")
    assert page.status_code == 200
    assert "You are signed out" in page.text
    assert not [f for f in forms(page.text) if f.action == "/logout"]
    assert client.post("/logout", follow_redirects=False).headers["location"] == "/logout"


@pytest.mark.parametrize(
    ("column", "age"),
    [
        ("last_seen_at", dt.timedelta(hours=2, seconds=1)),  # idle too long
        ("created_at", dt.timedelta(hours=12, seconds=1)),  # alive too long, however busy
    ],
    ids=["idle", "absolute"],
)
def test_a_session_dies_when_idle_or_old(
    client: TestClient, engine: Engine, column: str, age: dt.timedelta
) -> None:
    make_user(engine)
    log_in(client)
    assert client.get("/account", follow_redirects=False).status_code == 200
    now = dt.datetime.now(dt.UTC)
    values = {"last_seen_at": now - age} if column == "last_seen_at" else {"expires_at": now}
    with engine.begin() as connection:
        connection.execute(update(WebSession).values(**values))
    assert client.get("/account", follow_redirects=False).status_code == 303


def test_a_visit_keeps_an_idle_session_alive(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    log_in(client)
    earlier = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=90)
    with engine.begin() as connection:
        connection.execute(update(WebSession).values(last_seen_at=earlier))
    assert client.get("/account", follow_redirects=False).status_code == 200
    with engine.connect() as connection:
        seen = connection.scalars(select(WebSession.last_seen_at)).one()
    assert seen.replace(tzinfo=dt.UTC) > earlier + dt.timedelta(minutes=89)


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
