"""Changing one's password on /account (accounts.md, Password reset: "asks for the current
one"): the current password is checked, and a wrong one is a failed login for the throttle;
the new one meets the rule; the other web sessions end, this one stays, the applications keep
their tokens; an audit event and a mail say so."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from regdesk.accounts import throttle
from tests.accounts.password_support import (
    NEW_PASSWORD,
    change_on_account,
    field_errors,
    outbox,
)
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.web.support import (
    PASSWORD,
    audit,
    form,
    log_in,
    make_user,
    register_app,
    signed_in,
)

pytestmark = pytest.mark.postgres


def another_browser(client: TestClient) -> TestClient:
    return TestClient(client.app, base_url="https://testserver")


def test_the_account_page_has_the_form(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    signed_in(client)
    page = client.get("/account").text
    change = form(page, "/account/password")
    assert change.method == "post"
    assert set(change.fields) == {
        "csrf_token",
        "username",
        "current_password",
        "password",
        "password_again",
    }
    assert '<label for="current_password">Current password</label>' in page
    assert 'autocomplete="new-password"' in page
    assert [button["text"] for button in change.buttons] == ["Change password"]


def test_a_change_ends_the_other_sessions_and_keeps_this_one(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    fox = make_user(engine, "fox")
    token = apps.mint(register_app(engine), "pii:basic", user_id=fox)
    elsewhere = another_browser(client)
    signed_in(elsewhere)
    signed_in(client)

    done = change_on_account(client, PASSWORD)
    assert (done.status_code, done.headers["location"]) == (303, "/account?password_changed")
    page = client.get(done.headers["location"])
    assert page.status_code == 200  # this session stays
    assert "Your password was changed." in page.text
    assert elsewhere.get("/account", follow_redirects=False).status_code == 303  # ended
    assert client.get("/api/users/current", headers=bearer(token)).status_code == 200  # kept
    assert "do not match" in log_in(another_browser(client), "fox", PASSWORD).text
    assert log_in(another_browser(client), "fox", NEW_PASSWORD).status_code == 303

    [event] = audit(engine, "user.password_changed")
    assert (event.actor_user_id, event.target_id) == (fox, str(fox))
    assert event.details == {"sessions_ended": 1}
    [mail] = outbox(engine)
    assert (mail.to, mail.subject) == ("fox@example.org", "Your password was changed")
    assert "on your account page" in mail.text
    assert "https://testserver/password/forgot" in mail.text
    assert 'href="https://testserver/password/forgot"' in mail.html
    assert NEW_PASSWORD not in mail.text + mail.html + str(event.details)


def test_a_wrong_current_password_is_refused(client: TestClient, engine: Engine) -> None:
    fox = make_user(engine, "fox")
    signed_in(client)
    refused = change_on_account(client, "not my password")
    assert refused.status_code == 400
    assert field_errors(refused.text) == {"current_password": "That is not your current password."}
    assert 'role="alert"' in refused.text
    assert log_in(another_browser(client), "fox", PASSWORD).status_code == 303  # unchanged
    assert audit(engine, "user.password_changed") == []
    [failed] = audit(engine, "user.password_change_failed")
    assert (failed.target_id, failed.details) == (str(fox), {"reason": "wrong_password"})
    assert "not my password" not in str(failed.details)
    assert outbox(engine) == []


def test_wrong_current_passwords_count_as_failed_logins(client: TestClient, engine: Engine) -> None:
    """A stolen session guesses no more than the login form lets anyone: after PER_PAIR wrong
    passwords, even the right one is not checked, here and at /login from the same address."""
    make_user(engine, "fox")
    signed_in(client)
    for _ in range(throttle.PER_PAIR):
        assert change_on_account(client, "a guess").status_code == 400
    held = change_on_account(client, PASSWORD)
    assert held.status_code == 429
    assert 0 < int(held.headers["retry-after"]) <= 15 * 60
    assert "Too many wrong passwords for this account" in held.text
    assert audit(engine, "user.password_changed") == []
    assert log_in(another_browser(client), "fox", PASSWORD).status_code == 429


@pytest.mark.parametrize(
    ("password", "again", "field"),
    [
        ("short", "short", "password"),
        ("QWERTYUIOP", "QWERTYUIOP", "password"),  # common, in another case
        ("Fox@Example.org", "Fox@Example.org", "password"),  # the account's own address
        (NEW_PASSWORD, NEW_PASSWORD + " ", "password_again"),
    ],
    ids=["short", "common", "own-address", "typed-twice-differently"],
)
def test_a_refused_new_password_changes_nothing(
    client: TestClient, engine: Engine, password: str, again: str, field: str
) -> None:
    make_user(engine, "fox")
    elsewhere = another_browser(client)
    signed_in(elsewhere)
    signed_in(client)
    refused = change_on_account(client, PASSWORD, password, again)
    assert refused.status_code == 400
    assert list(field_errors(refused.text)) == [field]
    assert elsewhere.get("/account").status_code == 200  # no session ended
    assert log_in(another_browser(client), "fox", PASSWORD).status_code == 303
    assert audit(engine, "user.password_changed") == []
    assert outbox(engine) == []


def test_a_visitor_not_signed_in_is_sent_to_log_in(client: TestClient) -> None:
    answer = client.post("/account/password", data={"password": "x"}, follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/login?next=%2Faccount")
