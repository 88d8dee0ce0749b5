"""Second factors on /account (accounts.md, Second factor): an authenticator app confirmed by
a code before it counts and removed given the password, ten single-use recovery codes kept as
hashes, no secret in clear in the database; each change an audit event and a mail."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select

from regdesk.accounts.factor_models import TotpFactor
from regdesk.db import read_session
from tests.accounts.factor_support import (
    account_form,
    add_app,
    code,
    confirm_app,
    start_app_setup,
)
from tests.accounts.password_support import field_errors, outbox
from tests.client import TestClient
from tests.helpers import database_text
from tests.web.support import PASSWORD, audit, make_user, signed_in

pytestmark = pytest.mark.postgres


def test_an_app_counts_once_confirmed_and_brings_ten_recovery_codes(
    client: TestClient, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    signed_in(client)
    secret = start_app_setup(client)
    setup = client.get("/account/totp")
    assert setup.headers["cache-control"] == "no-store"
    assert "<svg" in setup.text
    assert 'class="totp-qr"' in setup.text
    assert "<script" not in setup.text
    assert audit(engine, "user.factor_added") == []  # not before its code

    refused = confirm_app(client, "000000" if code(secret) != "000000" else "111111")
    assert refused.status_code == 400
    assert "That is not the code your app shows" in refused.text
    assert audit(engine, "user.factor_added") == []

    secret, codes = add_app(client)
    assert len(codes) == 10 == len(set(codes))
    # Read from paper: no character that is mistaken for another (0 and o, 1, i and l).
    assert not set("".join(codes)) & set("0o1il")
    [added] = audit(engine, "user.factor_added")
    assert (added.actor_user_id, added.target_id, added.details) == (
        fox,
        str(fox),
        {"factor": "totp"},
    )
    assert len(audit(engine, "user.recovery_codes_generated")) == 1
    subjects = [(m.to, m.subject) for m in outbox(engine)]
    assert subjects == [
        ("fox@example.org", "A second factor was added to your account"),
        ("fox@example.org", "New recovery codes were made for your account"),
    ]
    page = client.get("/account").text
    assert "10 of your ten recovery codes are left" in page
    assert "Remove the app" in page

    stored = database_text(engine)
    assert secret not in stored
    assert secret.lower() not in stored
    for recovery in codes:
        assert recovery not in stored
        assert recovery.replace("-", "") not in stored
    for mail in outbox(engine):
        assert secret not in mail.text + mail.html
        assert codes[0] not in mail.text + mail.html


def test_new_recovery_codes_replace_the_old(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    signed_in(client)
    _, first = add_app(client)
    answer = client.post(
        "/account/recovery-codes", data=account_form(client, "/account/recovery-codes")
    )
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "no-store"
    assert "the codes you had before no longer work" in answer.text
    assert len(audit(engine, "user.recovery_codes_generated")) == 2
    assert outbox(engine)[-1].subject == "New recovery codes were made for your account"
    assert first[0] not in answer.text


def test_removing_the_app_asks_the_password(client: TestClient, engine: Engine) -> None:
    fox = make_user(engine, "fox")
    signed_in(client)
    add_app(client)
    fields = account_form(client, "/account/totp/remove")
    refused = client.post("/account/totp/remove", data={**fields, "current_password": "a guess"})
    assert refused.status_code == 400
    assert field_errors(refused.text) == {"totp_password": "That is not your current password."}
    assert audit(engine, "user.factor_removed") == []

    done = client.post(
        "/account/totp/remove",
        data={**fields, "current_password": PASSWORD},
        follow_redirects=False,
    )
    assert (done.status_code, done.headers["location"]) == (303, "/account?factor=removed")
    [removed] = audit(engine, "user.factor_removed")
    assert (removed.target_id, removed.details) == (str(fox), {"factor": "totp"})
    assert outbox(engine)[-1].subject == "A second factor was removed from your account"
    with read_session(engine) as session:
        assert session.scalars(select(TotpFactor)).all() == []
    page = client.get("/account?factor=removed").text
    assert "Add an authenticator app" in page
    assert "You get ten recovery codes when you add a second factor." in page  # codes gone


def test_the_forms_need_their_csrf_token(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    signed_in(client)
    for action in ("/account/totp", "/account/recovery-codes", "/account/totp/remove"):
        assert client.post(action, data={"csrf_token": "forged"}).status_code == 403
    assert client.get("/account/totp", follow_redirects=False).headers["location"] == "/account"
