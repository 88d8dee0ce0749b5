"""A forgotten password, reset by a mailed link (accounts.md, Password reset): /password/forgot
answers the same words whoever is named, in about the same time, and is throttled; the link
works once, for an hour, and only the newest; a refused password leaves it unused; a new one
ends every web session but keeps the applications' tokens, is audited and mailed; the token
is in no page, referrer, audit event, log line or table (the outbox's mail keeps it sealed)."""

from __future__ import annotations

import datetime as dt
import logging
import statistics
import time
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update

from regdesk.accounts import throttle
from regdesk.accounts.links import AccountLink
from regdesk.accounts.models import LoginFailure
from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import utcnow, write_session
from regdesk.security import token_hash
from regdesk.web.access_log import hide_link_tokens
from tests import http_calls
from tests.accounts.password_support import (
    NEW_PASSWORD,
    SENT,
    ask_for_link,
    field_errors,
    link_in,
    outbox,
    set_by_link,
)
from tests.client import TestClient
from tests.conftest import PUBLIC_URL, Apps, bearer
from tests.helpers import database_text, live_server
from tests.mail.support import Inbox, smtp_server
from tests.web.support import PASSWORD, audit, form, log_in, make_user, register_app

pytestmark = pytest.mark.postgres
DEAD = "This link has expired or has already been used"


def mailed_link(client: TestClient, engine: Engine, login: str = "fox") -> str:
    assert ask_for_link(client, login).status_code == 303
    return link_in(outbox(engine)[-1])


def another_browser(client: TestClient) -> TestClient:
    return TestClient(client.app, base_url="https://testserver")


# --- the whole way, through a real mail server ----------------------------------------------


@pytest.fixture
def mailing_client(engine: Engine, database_url: str) -> Iterator[tuple[TestClient, Inbox]]:
    """The app with a mail server to deliver to (aiosmtpd on loopback), and its inbox."""
    with smtp_server() as (inbox, port):
        settings = load_settings(
            database_url=database_url,
            public_url=PUBLIC_URL,
            smtp_url=f"smtp://127.0.0.1:{port}",
            mail_from="Convention <reg@con.example.org>",
        )
        with TestClient(create_app(settings), base_url="https://testserver") as client:
            yield client, inbox


def parts(message: Message) -> dict[str, str]:
    """A mail's parts by their type, decoded."""
    found = {}
    for part in message.walk():
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes):
            found[part.get_content_type()] = payload.decode()
    return found


def test_the_whole_way_through_a_real_mail_server(
    mailing_client: tuple[TestClient, Inbox], engine: Engine
) -> None:
    client, inbox = mailing_client
    fox = make_user(engine, "fox")
    application = register_app(engine)
    token = Apps(engine, client).mint(application, "pii:basic", user_id=fox)
    elsewhere = another_browser(client)
    assert log_in(elsewhere, "fox").status_code == 303  # a session the reset must end

    answer = ask_for_link(client, "FOX@example.org")
    assert (answer.status_code, answer.headers["location"]) == (303, "/password/forgot?sent")
    assert SENT in " ".join(client.get(answer.headers["location"]).text.split())
    [message] = inbox.wait_for(1)
    assert (message["To"], message["Subject"]) == ("fox@example.org", "Set a new password")
    assert message["From"] == "Convention <reg@con.example.org>"
    text = parts(message)["text/plain"]
    html = parts(message)["text/html"]
    link = text.split("https://testserver/password/reset/", 1)[1].split()[0]
    link = f"https://testserver/password/reset/{link}"
    assert f'href="{link}"' in html
    assert "works once, within an hour" in text

    done = set_by_link(client, link)
    assert (done.status_code, done.headers["location"]) == (303, "/login?notice=password_reset")
    page = client.get("/login?notice=password_reset")
    assert "Your password was changed. Log in with your new password." in page.text

    assert "do not match" in log_in(another_browser(client), "fox", PASSWORD).text  # old: no
    assert log_in(another_browser(client), "fox", NEW_PASSWORD).status_code == 303  # new: yes
    assert elsewhere.get("/account", follow_redirects=False).status_code == 303  # ended
    assert client.get("/api/users/current", headers=bearer(token)).status_code == 200  # kept

    _, changed = inbox.wait_for(2)
    assert (changed["To"], changed["Subject"]) == ("fox@example.org", "Your password was changed")
    told = parts(changed)["text/plain"]
    assert "with a link sent to you by e-mail" in told
    assert "https://testserver/password/forgot" in told
    assert NEW_PASSWORD not in told
    [event] = audit(engine, "user.password_reset_by_link")
    assert (event.actor_user_id, event.target_id) == (fox, str(fox))
    assert event.details == {"sessions_ended": 1}
    assert audit(engine, "user.password_reset") == []  # not an administrator's reset


# --- the link --------------------------------------------------------------------------------


def test_a_link_works_once(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    link = mailed_link(client, engine)
    assert set_by_link(client, link).status_code == 303
    for answer in (
        client.get(link),
        client.post(link, data={**form(client.get("/login").text, "/login").fields}),
    ):
        assert answer.status_code == 410
        assert DEAD in answer.text
        assert 'href="/password/forgot"' in answer.text


def test_a_link_expires_after_an_hour(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    link = mailed_link(client, engine)
    with write_session(engine) as session:
        expires = session.scalars(select(AccountLink.expires_at)).one()
        assert dt.timedelta(minutes=59) < expires - utcnow() <= dt.timedelta(hours=1)
        session.execute(update(AccountLink).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
    page = client.get(link)
    assert page.status_code == 410
    assert DEAD in page.text


def test_only_the_newest_link_works(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    first = mailed_link(client, engine)
    second = mailed_link(client, engine)
    assert client.get(first).status_code == 410
    assert set_by_link(client, second).status_code == 303


def test_an_unknown_or_overlong_token_is_a_dead_link(client: TestClient) -> None:
    for token in ("nope", "x" * 43, "x" * 5000):
        page = client.get(f"/password/reset/{token}")
        assert page.status_code == 410
        assert DEAD in page.text


@pytest.mark.parametrize(
    ("password", "again", "field"),
    [
        ("short", "short", "password"),
        ("Password1234", "Password1234", "password"),  # common, in another case
        ("fox@example.org", "fox@example.org", "password"),  # the account's own address
        (NEW_PASSWORD, "a new one, long and mime", "password_again"),
    ],
    ids=["short", "common", "own-address", "typed-twice-differently"],
)
def test_a_refused_password_leaves_the_link_unused(
    client: TestClient, engine: Engine, password: str, again: str, field: str
) -> None:
    make_user(engine, "fox")
    link = mailed_link(client, engine)
    refused = set_by_link(client, link, password, again)
    assert refused.status_code == 400
    assert list(field_errors(refused.text)) == [field]
    assert 'role="alert"' in refused.text
    assert password not in refused.text
    assert log_in(another_browser(client), "fox", PASSWORD).status_code == 303  # unchanged
    assert audit(engine, "user.password_reset_by_link") == []
    assert len(outbox(engine)) == 1  # the link's mail, and no "changed"
    assert set_by_link(client, link).status_code == 303  # the link still works


# --- the same words for everyone ---------------------------------------------------------


def test_the_answer_is_the_same_whoever_is_named(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    make_user(engine, "owl", password=None)  # no password yet: the link lets them set one
    answers = {}
    for login in ("fox", "fox@example.org", "owl", "nobody", "nobody@example.org"):
        answer = ask_for_link(client, login)
        page = client.get(answer.headers["location"])
        answers[login] = (answer.status_code, answer.headers["location"], page.text)
    assert len(set(answers.values())) == 1
    assert SENT in " ".join(answers["nobody"][2].split())
    assert [mail.to for mail in outbox(engine)] == [
        "fox@example.org",
        "fox@example.org",
        "owl@example.org",
    ]


def test_an_empty_request_is_asked_again(client: TestClient) -> None:
    answer = ask_for_link(client, "   ")
    assert answer.status_code == 400
    assert "Type your username or the e-mail address of your account." in answer.text


def test_requests_are_throttled_per_address_typed_and_per_client(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Known or not, what was typed gets RESET_PER_LOGIN links in the window; a client,
    RESET_PER_ADDRESS requests. Past either, the same answer, and no mail."""
    make_user(engine, "fox")
    for login in ("fox", "nobody"):
        for _ in range(throttle.RESET_PER_LOGIN + 2):
            assert ask_for_link(client, login).headers["location"] == "/password/forgot?sent"
    assert len(outbox(engine)) == throttle.RESET_PER_LOGIN
    elsewhere = TestClient(client.app, base_url="https://testserver", client=("192.0.2.9", 5000))
    ask_for_link(elsewhere, "FOX")  # the same address typed, from another client: still held
    assert len(outbox(engine)) == throttle.RESET_PER_LOGIN

    monkeypatch.setattr(throttle, "RESET_PER_ADDRESS", 2)
    for name in ("owl", "elk", "bee"):
        make_user(engine, name)
        ask_for_link(elsewhere, name)  # its refused request for FOX did not count
    assert [mail.to for mail in outbox(engine)][throttle.RESET_PER_LOGIN :] == [
        "owl@example.org",
        "elk@example.org",
    ]

    with write_session(engine) as session:  # the window passes
        session.execute(update(LoginFailure).values(occurred_at=utcnow() - throttle.WINDOW))
    ask_for_link(elsewhere, "bee")
    assert outbox(engine)[-1].to == "bee@example.org"


@pytest.mark.real_password_hashing  # an argon2 on one path alone would show
def test_a_known_and_an_unknown_address_take_about_as_long(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The medians of many answers (interleaved, so that the machine's moods fall on both)."""
    monkeypatch.setattr(throttle, "RESET_PER_ADDRESS", 1000)
    rounds = 40
    for number in range(rounds):
        make_user(engine, f"known{number}", password=None)
    fields = form(client.get("/password/forgot").text, "/password/forgot").fields
    timings: dict[str, list[float]] = {"known": [], "unknown": []}
    for number in range(rounds):
        for kind in ("known", "unknown"):
            login = f"{kind}{number}@example.org"
            start = time.perf_counter()
            answer = client.post(
                "/password/forgot", data={**fields, "login": login}, follow_redirects=False
            )
            timings[kind].append(time.perf_counter() - start)
            assert answer.status_code == 303
    assert len(outbox(engine)) == rounds
    known, unknown = (statistics.median(timings[kind]) for kind in ("known", "unknown"))
    assert abs(known - unknown) < max(0.01, 0.5 * min(known, unknown)), (known, unknown)


# --- the token stays secret --------------------------------------------------------------


def test_the_token_is_in_no_page_referrer_table_or_audit_event(
    client: TestClient, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="regdesk.sql")
    make_user(engine, "fox")
    link = mailed_link(client, engine)
    token = link.rsplit("/", 1)[1]
    page = client.get(link)
    assert page.headers["referrer-policy"] == "no-referrer"
    assert '<meta name="referrer" content="no-referrer">' in page.text
    assert token not in page.text
    refused = set_by_link(client, link, "short")
    assert token not in refused.text
    assert refused.headers["referrer-policy"] == "no-referrer"
    assert set_by_link(client, link).status_code == 303
    stored = database_text(engine)  # the outbox's row of the mail too
    assert token not in stored
    assert token_hash(token) in stored  # the link's row, by its hash
    for event in audit(engine, "user.password_reset_by_link"):
        assert token not in str(event.details)
    # The test client logs each address it asks for: proof that a line naming the link would
    # be caught. No other logger may write the token, nor the password.
    client_side = ("httpx", "httpcore")
    assert any(token in r.getMessage() for r in caplog.records if r.name in client_side)
    for record in caplog.records:
        if record.name not in client_side:
            assert token not in record.getMessage(), record.name
        assert NEW_PASSWORD not in record.getMessage(), record.name


def test_the_access_log_hides_the_token(sqlite_url: str, tmp_path: Path) -> None:
    """`regdesk serve`'s own access log, as an operator keeps it."""
    token = "Tq3-secret_token-of-a-mailed-link-43-chars-x"
    log = tmp_path / "access.log"
    with (
        log.open("wb") as output,
        live_server(sqlite_url, {"PYTHONUNBUFFERED": "1"}, stdout=output) as base,
    ):
        assert http_calls.get(f"{base}/password/reset/{token}").status_code == 410
        assert http_calls.get(f"{base}/password/forgot").status_code == 200
    written = log.read_text()
    assert "GET /password/reset/... HTTP/1.1" in written
    assert "GET /password/forgot HTTP/1.1" in written  # the log is kept, the rest as it was
    assert token not in written


def test_hide_link_tokens() -> None:
    assert hide_link_tokens("/password/reset/abc_DEF-123") == "/password/reset/..."
    assert hide_link_tokens("/password/reset/abc/?x=1") == "/password/reset/.../?x=1"
    assert hide_link_tokens("/password/forgot?sent") == "/password/forgot?sent"
    assert hide_link_tokens("/login?next=/password/reset/abc") == "/login?next=/password/reset/..."


def test_the_login_page_leads_to_the_forgotten_password(client: TestClient) -> None:
    page = client.get("/login")
    assert '<a href="/password/forgot">Forgot your password?</a>' in page.text
    assert "Your password was changed" not in client.get("/login?notice=<b>x</b>").text
    forgot = client.get("/password/forgot")
    assert form(forgot.text, "/password/forgot").method == "post"
    assert '<label for="login">Username or e-mail</label>' in forgot.text
