"""Failed logins are throttled in the database (accounts/throttle.py): per login and address, per
login, per address, and per trusted browser, each counted for whom it is meant."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select, update

from regdesk.accounts import throttle
from regdesk.accounts.devices import COOKIE
from regdesk.accounts.models import LoginFailure
from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import write_session
from regdesk.ratelimit import address_key
from regdesk.security import hash_password
from regdesk.users.models import User
from tests.client import TestClient
from tests.helpers import database_text
from tests.web.support import PASSWORD, log_in, make_user, session_cookie

TOO_MANY = "Too many failed attempts to log in"


def elsewhere(app: FastAPI, address: str) -> TestClient:
    """Another browser, at another address (`client` has already run the app's lifespan)."""
    return TestClient(app, base_url="https://testserver", client=(address, 50000))


def assert_throttled(response: httpx.Response) -> int:
    assert response.status_code == 429, response.text
    assert TOO_MANY in response.text
    retry_after = int(response.headers["retry-after"])
    assert 0 < retry_after <= 15 * 60
    return retry_after


def trusted_browser(app: FastAPI, address: str, login: str = "fox") -> TestClient:
    """A browser at `address` that has signed in to `login`'s account (and signed out again:
    only its device cookie is left)."""
    browser = elsewhere(app, address)
    assert log_in(browser, login, PASSWORD).status_code == 303
    assert browser.cookies.get(COOKIE)
    browser.cookies.delete("regdesk_session")
    return browser


def fail(browser: TestClient, login: str, times: int) -> None:
    for _ in range(times):
        assert log_in(browser, login, "wrong").status_code == 200


def test_the_sixth_failure_with_one_login_at_one_address_holds_it_up_even_with_the_password(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine)
    for login in ("fox", "FOX", "Fox", "fox", "fOx"):  # one login, whatever its case
        assert log_in(client, login, "wrong").status_code == 200
    retry_after = assert_throttled(log_in(client, "fox", PASSWORD))
    assert retry_after > 14 * 60
    assert session_cookie(client) is None
    assert 'id="username"' in log_in(client, "fox", PASSWORD).text  # the form, to try later


def test_an_unknown_login_is_throttled_alike(client: TestClient, engine: Engine) -> None:
    # Else the 6th answer would tell which usernames exist.
    fail(client, "nobody", throttle.PER_PAIR)
    assert_throttled(log_in(client, "NOBODY", "wrong"))


def test_a_login_held_up_at_one_address_is_not_held_up_at_another(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    fail(elsewhere(app, "203.0.113.9"), "fox", throttle.PER_PAIR)
    assert log_in(client, "fox", PASSWORD).status_code == 303  # the owner, from home


def test_a_login_guessed_from_many_addresses_holds_up_new_browsers_but_not_known_ones(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    known = trusted_browser(app, "198.51.100.7")
    addresses = throttle.PER_LOGIN // throttle.PER_PAIR
    for number in range(addresses):
        fail(elsewhere(app, f"203.0.113.{number + 1}"), "fox", throttle.PER_PAIR)
    assert_throttled(log_in(elsewhere(app, "192.0.2.50"), "fox", PASSWORD))
    assert log_in(known, "fox", PASSWORD).status_code == 303


def test_a_spray_from_one_address_holds_up_new_browsers_there_and_no_one_else(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    venue = "192.0.2.80"
    regular = trusted_browser(app, venue)
    attacker = elsewhere(app, venue)
    for number in range(throttle.PER_ADDRESS):
        assert log_in(attacker, f"guess{number}", "wrong").status_code == 200
    assert_throttled(log_in(elsewhere(app, venue), "fox", PASSWORD))
    assert log_in(regular, "fox", PASSWORD).status_code == 303
    assert log_in(elsewhere(app, "198.51.100.7"), "fox", PASSWORD).status_code == 303


def test_a_trusted_browser_has_a_budget_of_its_own(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    browser = trusted_browser(app, "198.51.100.7")
    fail(browser, "fox", throttle.PER_DEVICE)  # its own typos: the pair's 5 do not apply
    assert_throttled(log_in(browser, "fox", PASSWORD))
    # ...and they held up nobody else at its address.
    assert log_in(elsewhere(app, "198.51.100.7"), "fox", PASSWORD).status_code == 303


def test_a_browser_is_trusted_only_for_the_accounts_it_signed_in_to(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    make_user(engine, "owl")
    browser = trusted_browser(app, "198.51.100.7", "owl")
    fail(elsewhere(app, "198.51.100.7"), "fox", throttle.PER_PAIR)
    assert_throttled(log_in(browser, "fox", PASSWORD))
    assert log_in(browser, "owl", PASSWORD).status_code == 303


def test_a_new_password_ends_the_trust_of_every_browser(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    user_id = make_user(engine)
    browser = trusted_browser(app, "198.51.100.7")
    with write_session(engine) as session:  # as an administrator's reset does
        session.execute(
            update(User).where(User.id == user_id).values(password_hash=hash_password(PASSWORD))
        )
    fail(elsewhere(app, "198.51.100.7"), "fox", throttle.PER_PAIR)
    assert_throttled(log_in(browser, "fox", PASSWORD))


@pytest.mark.parametrize(
    "tamper",
    [
        lambda value: value[:-2] + ("AA" if not value.endswith("AA") else "BB"),  # signature
        lambda value: "e" + value[1:],  # payload
        lambda value: "",
        lambda value: "x" * 5000,
    ],
)
def test_a_tampered_device_cookie_is_trusted_for_nothing(
    client: TestClient, app: FastAPI, engine: Engine, tamper: Callable[[str], str]
) -> None:
    make_user(engine)
    browser = trusted_browser(app, "198.51.100.7")
    value = browser.cookies.get(COOKIE)
    assert value is not None
    browser.cookies.clear()
    browser.cookies.set(COOKIE, tamper(value), domain="testserver.local", path="/login")
    fail(elsewhere(app, "198.51.100.7"), "fox", throttle.PER_PAIR)
    assert_throttled(log_in(browser, "fox", PASSWORD))


def test_a_success_does_not_forgive_another_addresss_failures(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    attacker = elsewhere(app, "203.0.113.9")
    fail(attacker, "fox", throttle.PER_PAIR - 1)
    assert log_in(client, "fox", PASSWORD).status_code == 303  # the owner, from home
    fail(attacker, "fox", 1)
    assert_throttled(log_in(attacker, "fox", PASSWORD))


def test_a_success_forgives_that_addresss_own_failures_by_username_and_email(
    client: TestClient, engine: Engine
) -> None:
    make_user(engine)
    for _ in range(2):  # the second round passes only if the first one's failures were forgiven
        fail(client, "fox", throttle.PER_PAIR - 1)
        fail(client, "fox@example.org", throttle.PER_PAIR - 1)
        assert log_in(client, "fox@example.org", PASSWORD).status_code == 303
        client.cookies.clear()  # signed out, and trusted no more: the pair limits apply again


def test_failures_older_than_the_window_no_longer_count(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    fail(client, "fox", throttle.PER_PAIR)
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
        fail(unlimited, "fox", throttle.PER_PAIR + 1)
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
    assert (address_key(first) == address_key(second)) is same


def test_concurrent_guesses_cannot_all_slip_under_the_limit(engine: Engine) -> None:
    """Each attempt counts, then records its failure, in one transaction. Without the lock
    (on PostgreSQL; SQLite's write lock does it there) all twelve would see a count of 0."""
    attempt = throttle.attempt("fox", "192.0.2.1", None)
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
    assert let_in.count(True) == throttle.PER_PAIR
