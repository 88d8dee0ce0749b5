"""Failed logins are throttled per account and per client address, in the database."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import write_session
from regdesk.web import throttle
from regdesk.web.models import LoginFailure
from tests.helpers import database_text
from tests.web.support import PASSWORD, log_in, make_user, session_cookie

TOO_MANY = "Too many failed attempts to log in"


def elsewhere(app: FastAPI, address: str) -> TestClient:
    """Another browser, at another address (`client` has already run the app's lifespan)."""
    return TestClient(app, base_url="https://testserver", client=(address, 50000))


def assert_throttled(response: object) -> int:
    assert getattr(response, "status_code", None) == 429
    assert TOO_MANY in response.text  # type: ignore[attr-defined]
    retry_after = int(response.headers["retry-after"])  # type: ignore[attr-defined]
    assert 0 < retry_after <= 15 * 60
    return retry_after


def test_the_sixth_attempt_on_an_account_is_refused_even_with_the_right_password(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine)
    for login in ("fox", "FOX", "fox@example.org", "fox", "Fox@example.org"):  # one account
        assert log_in(client, login, "wrong").status_code == 200
    retry_after = assert_throttled(log_in(client, "fox", PASSWORD))
    assert retry_after > 14 * 60
    assert session_cookie(client) is None
    assert 'id="username"' in log_in(client, "fox", PASSWORD).text  # the form, to try later


def test_an_unknown_account_is_throttled_alike(client: TestClient, engine: Engine) -> None:
    # Else the 6th answer would tell which usernames exist.
    for _ in range(5):
        log_in(client, "nobody", "wrong")
    assert_throttled(log_in(client, "NOBODY", "wrong"))


def test_twenty_failures_from_one_address_stop_it_for_every_account(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    for number in range(throttle.PER_ADDRESS):
        assert log_in(client, f"guess{number}", "wrong").status_code == 200
    assert_throttled(log_in(client, "fox", PASSWORD))
    # The account itself is not locked: its owner elsewhere gets in.
    assert log_in(elsewhere(app, "198.51.100.7"), "fox", PASSWORD).status_code == 303


def test_a_success_does_not_forgive_another_addresss_failures(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    attacker = elsewhere(app, "203.0.113.9")
    for _ in range(4):
        log_in(attacker, "fox", "wrong")
    assert log_in(client, "fox", PASSWORD).status_code == 303  # the owner, from home
    log_in(attacker, "fox", "wrong")
    assert_throttled(log_in(attacker, "fox", PASSWORD))


def test_a_success_forgives_that_addresss_own_failures(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    for _ in range(4):
        log_in(client, "fox", "wrong")
    assert log_in(client, "fox", PASSWORD).status_code == 303
    for _ in range(4):
        log_in(client, "fox", "wrong")
    assert log_in(client, "fox", PASSWORD).status_code == 303


def test_failures_older_than_the_window_no_longer_count(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    for _ in range(5):
        log_in(client, "fox", "wrong")
    assert log_in(client, "fox", PASSWORD).status_code == 429
    with engine.begin() as connection:
        connection.execute(
            update(LoginFailure).values(
                occurred_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=15, seconds=1)
            )
        )
    assert log_in(client, "fox", PASSWORD).status_code == 303


def test_failures_are_kept_without_what_was_typed(client: TestClient, engine: Engine) -> None:
    log_in(client, "someone-typed-this-login", "wrong")
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(LoginFailure)) == 1
    assert "someone-typed-this-login" not in database_text(engine)


def test_no_throttling_when_rate_limits_are_off(engine: Engine, database_url: str) -> None:
    make_user(engine)
    app = create_app(load_settings(database_url=database_url, rate_limits="off"))
    with TestClient(app, base_url="https://testserver") as unlimited:
        for _ in range(6):
            log_in(unlimited, "fox", "wrong")
        assert log_in(unlimited, "fox", PASSWORD).status_code == 303


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("2001:db8:1:2::5", "2001:db8:1:2:ffff::1", True),  # one subscriber's /64
        ("2001:db8:1:2::5", "2001:db8:1:3::5", False),
        ("::ffff:192.0.2.1", "192.0.2.1", True),
        ("192.0.2.1", "192.0.2.2", False),
    ],
)
def test_addresses_are_counted_as_subscribers(first: str, second: str, same: bool) -> None:
    assert (throttle.address_key(first) == throttle.address_key(second)) is same


def test_concurrent_guesses_cannot_all_slip_under_the_limit(engine: Engine) -> None:
    """Each attempt counts, then records its failure, in one transaction. Without the lock
    (on PostgreSQL; SQLite's write lock does it there) all twelve would see a count of 0."""
    attempt = throttle.attempt("fox", 1, "192.0.2.1")
    let_in: list[bool] = []
    start = threading.Barrier(12)

    def guess() -> None:
        start.wait()
        with write_session(engine) as db:
            throttle.lock(db, attempt)
            allowed = throttle.retry_after(db, attempt) is None
            time.sleep(0.05)  # the password check
            if allowed:
                throttle.record_failure(db, attempt)
        let_in.append(allowed)

    threads = [threading.Thread(target=guess) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert let_in.count(True) == throttle.PER_ACCOUNT
