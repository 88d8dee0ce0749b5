"""The second step of signing in (accounts.md, Second factor): a right password for an account
with a second factor starts no session; a code from the app or a recovery code does, once;
wrong codes are throttled as passwords are."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from regdesk.accounts import throttle
from tests.accounts.factor_support import add_app, code, second_step
from tests.accounts.password_support import outbox
from tests.client import TestClient
from tests.helpers import database_text
from tests.web.support import audit, log_in, make_user, session_cookie, signed_in

pytestmark = pytest.mark.postgres


def fresh(client: TestClient) -> TestClient:
    return TestClient(client.app, base_url="https://testserver")


@pytest.fixture
def secret_and_codes(client: TestClient, engine: Engine) -> tuple[str, list[str]]:
    make_user(engine, "fox")
    signed_in(client)
    return add_app(client)


def test_a_right_password_starts_no_session_before_the_second_step(
    client: TestClient, engine: Engine, secret_and_codes: tuple[str, list[str]]
) -> None:
    secret, _ = secret_and_codes
    browser = fresh(client)
    answer = log_in(browser, "fox", next_="/volunteer")
    assert (answer.status_code, answer.headers["location"]) == (303, "/login/second-factor")
    assert session_cookie(browser) is None
    assert browser.get("/account", follow_redirects=False).status_code == 303  # not signed in
    logins_before = len(audit(engine, "user.login"))

    done = second_step(browser, code(secret, 1))
    assert (done.status_code, done.headers["location"]) == (303, "/volunteer")
    assert session_cookie(browser) is not None
    assert browser.get("/account").status_code == 200
    [*_, login] = audit(engine, "user.login")
    assert len(audit(engine, "user.login")) == logins_before + 1
    assert login.details == {"second_factor": "totp"}


def test_a_code_is_accepted_once(
    client: TestClient, engine: Engine, secret_and_codes: tuple[str, list[str]]
) -> None:
    secret, _ = secret_and_codes
    used = code(secret, 1)  # once: made again across a step's boundary, it is another code
    first = fresh(client)
    log_in(first, "fox")
    assert second_step(first, used).status_code == 303
    again = fresh(client)
    log_in(again, "fox")
    assert second_step(again, used).status_code == 400  # the same code: replayed
    assert second_step(again, code(secret)).status_code == 400  # an earlier step's
    assert session_cookie(again) is None


def test_a_wrong_code_is_refused_and_throttled(
    client: TestClient, engine: Engine, secret_and_codes: tuple[str, list[str]]
) -> None:
    secret, _ = secret_and_codes
    right = code(secret, 1)
    wrong = "000000" if right != "000000" else "111111"
    browser = fresh(client)
    log_in(browser, "fox")
    refused = second_step(browser, wrong)
    assert refused.status_code == 400
    assert "That code does not work." in refused.text
    [failed] = audit(engine, "user.login_failed")
    assert failed.details == {"reason": "wrong_second_factor"}
    for _ in range(throttle.PER_PAIR - 1):
        assert second_step(browser, wrong).status_code == 400
    held = second_step(browser, right)
    assert held.status_code == 429
    assert 0 < int(held.headers["retry-after"]) <= 15 * 60
    assert session_cookie(browser) is None


def test_a_recovery_code_works_once_and_is_mailed(
    client: TestClient, engine: Engine, secret_and_codes: tuple[str, list[str]]
) -> None:
    _, codes = secret_and_codes
    browser = fresh(client)
    log_in(browser, "fox")
    assert second_step(browser, codes[3].upper()).status_code == 303
    [used] = audit(engine, "user.recovery_code_used")
    assert used.details == {"codes_left": 9}
    assert outbox(engine)[-1].subject == "A recovery code of your account was used"
    assert "9 of your ten recovery codes are left" in browser.get("/account").text

    again = fresh(client)
    log_in(again, "fox")
    assert second_step(again, codes[3]).status_code == 400
    assert codes[3] not in database_text(engine)


def test_the_pending_login_is_bound_to_its_browser(
    client: TestClient, engine: Engine, secret_and_codes: tuple[str, list[str]]
) -> None:
    del secret_and_codes  # an account with an app
    browser = fresh(client)
    log_in(browser, "fox")
    pending = browser.cookies.get("regdesk_pending_login")
    assert pending
    thief = fresh(client)
    thief.get("/login")  # a login-form cookie of its own
    thief.cookies.set("regdesk_pending_login", pending, domain="testserver.local")
    answer = thief.get("/login/second-factor", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/login")


def test_without_a_pending_login_the_step_sends_to_the_login_form(client: TestClient) -> None:
    answer = client.get("/login/second-factor", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/login")
