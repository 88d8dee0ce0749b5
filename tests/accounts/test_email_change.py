"""The e-mail address on /account (accounts.md, Sign-up and verification): changing it asks
the current password and mails a link to the new address, which replaces the old one only
when the link is followed (the old address is told); an unconfirmed address gets a notice and
its link again, throttled."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import Engine, select

from regdesk.accounts import throttle
from regdesk.db import read_session
from regdesk.users.models import User
from tests.accounts.password_support import Mail, field_errors, outbox
from tests.client import TestClient
from tests.web.support import PASSWORD, audit, form, make_user, signed_in

pytestmark = pytest.mark.postgres
LINK = re.compile(r"https://testserver/verify/[A-Za-z0-9_-]+")


def change(client: TestClient, address: str, password: str = PASSWORD) -> httpx.Response:
    fields = form(client.get("/account").text, "/account/email").fields
    fields.update(email=address, current_password=password)
    return client.post("/account/email", data=fields, follow_redirects=False)


def resend(client: TestClient) -> httpx.Response:
    fields = form(client.get("/account").text, "/account/email/resend").fields
    return client.post("/account/email/resend", data=fields, follow_redirects=False)


def follow(client: TestClient, mail: Mail) -> httpx.Response:
    found = LINK.search(mail.text)
    assert found, mail.text
    page = client.get(found.group(0))
    if page.status_code != 200:
        return page
    button = form(page.text, "")  # it posts back to the link itself
    return client.post(found.group(0), data=button.fields)


def stored(engine: Engine, username: str) -> tuple[str, bool]:
    with read_session(engine) as session:
        user = session.scalars(select(User).where(User.username == username)).one()
        return user.email, user.verified


def test_a_new_address_replaces_the_old_only_once_confirmed(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine, "fox", email="fox@example.org")
    signed_in(client)
    sent = change(client, "fox@new.example.org")
    assert (sent.status_code, sent.headers["location"]) == (303, "/account?email_sent")
    page = client.get("/account?email_sent").text
    assert "We sent a link to <strong>fox@new.example.org</strong>" in page
    assert stored(engine, "fox")[0] == "fox@example.org"  # until the link is followed
    [link_mail] = outbox(engine)
    assert (link_mail.to, link_mail.subject) == (
        "fox@new.example.org",
        "Confirm your e-mail address",
    )

    done = follow(client, link_mail)
    assert done.status_code == 200
    assert stored(engine, "fox") == ("fox@new.example.org", True)
    told = outbox(engine)[-1]
    assert (told.to, told.subject) == ("fox@example.org", "Your e-mail address was changed")
    assert "fox@new.example.org" in told.text
    assert "https://testserver/password/forgot" in told.text
    assert audit(engine, "user.email_change_requested")
    assert audit(engine, "user.email_verified")


def test_the_current_password_is_asked_and_wrong_ones_are_throttled(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine, "fox", email="fox@example.org")
    signed_in(client)
    for _ in range(throttle.PER_PAIR):
        refused = change(client, "fox@new.example.org", password="not my password at all")
        assert refused.status_code == 400
        assert "email_password" in field_errors(refused.text)
    assert change(client, "fox@new.example.org").status_code == 429  # even the right one now
    assert outbox(engine) == []
    assert len(audit(engine, "user.email_change_failed")) == throttle.PER_PAIR


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("not an address", ""),
        ("FOX@example.org", "already your address"),
        ("otter@example.org", "belongs to another account"),
    ],
)
def test_a_new_address_must_be_an_address_and_nobody_elses(
    client: TestClient, engine: Engine, address: str, problem: str
) -> None:
    make_user(engine, "fox", email="fox@example.org")
    make_user(engine, "otter", email="otter@example.org")
    signed_in(client)
    refused = change(client, address)
    assert refused.status_code == 400
    assert problem in field_errors(refused.text)["email"]
    assert outbox(engine) == []


def test_an_unconfirmed_address_has_a_notice_and_its_link_again(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine, "fox", email="fox@example.org")  # made unconfirmed
    signed_in(client)
    assert "is not confirmed yet" in client.get("/account").text
    for _ in range(throttle.RESET_PER_LOGIN):
        assert resend(client).status_code == 303
    mails = outbox(engine)
    assert [m.to for m in mails] == ["fox@example.org"] * throttle.RESET_PER_LOGIN
    assert resend(client).status_code == 429  # nobody's mailbox is flooded
    old = follow(TestClient(client.app, base_url="https://testserver"), mails[0])
    assert old.status_code == 410  # only the newest link works
    assert follow(client, mails[-1]).status_code == 200
    assert stored(engine, "fox") == ("fox@example.org", True)
    assert "is not confirmed yet" not in client.get("/account").text
