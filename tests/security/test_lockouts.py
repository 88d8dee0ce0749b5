"""Lockout attacks (ASVS V2.2.1: anti-automation that does not let an attacker lock the owner
out): nobody can spend a budget that is not theirs.

- The token endpoint charges a client's own limit only to requests that authenticated as it;
  a stranger's wrong secrets are charged to the stranger's address.
- The login form slows guessing without giving a stranger a switch that locks the owner, or
  the people who share an address with the attacker (a venue's Wi-Fi), out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.accounts import throttle
from regdesk.app import create_app
from tests.client import TestClient
from tests.conftest import PUBLIC_URL, Apps
from tests.security.conftest import generous_settings
from tests.security.support import new_user
from tests.web.support import PASSWORD, form, log_in, session_cookie

TOKEN = "/api/oauth/token"
ATTACKER = "203.0.113.66"
INTEGRATION = "198.51.100.20"


def limited_app(database_url: str, **limits: str) -> FastAPI:
    return create_app(generous_settings(database_url, public_url=PUBLIC_URL, **limits))


def browser(running: TestClient, address: str) -> TestClient:
    """Another peer of the same running app at `address` (same event loop)."""
    other = TestClient(running.app, base_url=PUBLIC_URL, client=(address, 40000))
    other.portal = running.portal
    return other


@pytest.fixture
def token_limited(engine: Engine, database_url: str) -> Iterator[TestClient]:
    # Production's shape, small enough to reach: 20 requests a minute per client.
    app = limited_app(database_url, token_rate_limit="20/minute")
    with TestClient(app, base_url=PUBLIC_URL, client=(INTEGRATION, 40000)) as running:
        yield running


def test_wrong_secrets_sent_by_a_stranger_do_not_cut_the_integration_off(
    token_limited: TestClient, engine: Engine
) -> None:
    tool = Apps(engine, token_limited).register(service_scopes="user:read")
    grant = {"grant_type": "client_credentials"}
    attacker = browser(token_limited, ATTACKER)
    answers = set()
    for attempt in range(150):  # the finding: ~100 a second with the id and a wrong secret
        named = tool.client_id if attempt % 2 else f"0{tool.client_id}"
        if attempt % 3:
            answer = attacker.post(TOKEN, data=grant, auth=(named, f"guess{attempt}"))
        else:
            wrong = {**grant, "client_id": named, "client_secret": f"guess{attempt}"}
            answer = attacker.post(TOKEN, data=wrong)
        answers.add(answer.status_code)
    assert answers == {401, 429}  # the attacker is slowed down, at the attacker's address

    for _ in range(20):  # the integration keeps its whole budget
        issued = token_limited.post(TOKEN, data=grant, auth=(tool.client_id, tool.client_secret))
        assert issued.status_code == 200, issued.text
    assert issued.headers["RateLimit-Remaining"] == "0"


# --- the login form --------------------------------------------------------------------------

VENUE = "192.0.2.200"  # the convention's Wi-Fi: attendees and an attacker behind one address
HOME = "198.51.100.30"


def signed_in_before(running: TestClient, address: str, username: str) -> TestClient:
    """A browser that has signed in to `username`'s account before (and signed out)."""
    known = browser(running, address)
    assert log_in(known, username, PASSWORD).status_code == 303
    known.post("/logout", data=form(known.get("/logout").text, "/logout").fields)
    assert session_cookie(known) is None
    return known


def hammer(attacker: TestClient, logins: list[str], times: int) -> set[int]:
    """Wrong passwords for each login, `times` each, as fast as the form answers."""
    return {log_in(attacker, login, "wrong").status_code for login in logins for _ in range(times)}


def test_an_attackers_failures_do_not_stop_the_owner_at_a_browser_that_signed_in_before(
    client: TestClient, engine: Engine
) -> None:
    owner, _ = new_user(engine)
    at_home = signed_in_before(client, HOME, owner)
    at_the_venue = signed_in_before(client, VENUE, owner)
    # From the venue and from eight other addresses, by username and by e-mail, far past
    # every limit (the finding: five failures from anywhere locked the owner out).
    logins = [owner, f"{owner}@example.org", owner.upper()]
    assert 429 in hammer(browser(client, VENUE), logins, 10)
    for number in range(8):
        hammer(browser(client, f"203.0.113.{100 + number}"), logins, 6)
    assert log_in(at_home, owner, PASSWORD).status_code == 303
    assert log_in(at_the_venue, f"{owner}@example.org", PASSWORD).status_code == 303


def test_an_attackers_failures_do_not_stop_another_person_at_the_same_address(
    client: TestClient, engine: Engine
) -> None:
    victim, _ = new_user(engine)
    neighbour, _ = new_user(engine)
    attacker = browser(client, VENUE)
    assert 429 in hammer(attacker, [victim, f"{victim}@example.org"], 30)
    # Someone at the venue who never signed in from this browser gets in.
    assert log_in(browser(client, VENUE), neighbour, PASSWORD).status_code == 303

    # A spray over many accounts from the venue's address holds up new browsers there (the
    # one thing an address still says); anyone whose browser signed in before carries on.
    regular, _ = new_user(engine)
    known = signed_in_before(client, VENUE, regular)
    sprayed = [f"sprayed{number}" for number in range(throttle.PER_ADDRESS + 5)]
    assert 429 in hammer(attacker, sprayed, 1)
    assert log_in(known, regular, PASSWORD).status_code == 303


def answer_of(response: httpx.Response) -> tuple[int, str | None, str | None]:
    """What a login answer tells: its status, its message, and whether to wait."""
    found = re.search(r'<p class="alert alert-error"[^>]*>(.*?)</p>', response.text, re.S)
    return (
        response.status_code,
        found and found.group(1).strip(),
        response.headers.get("retry-after"),
    )


def test_the_throttle_does_not_tell_which_email_belongs_to_which_username(
    client: TestClient, engine: Engine
) -> None:
    owner, _ = new_user(engine)
    stranger, _ = new_user(engine)
    attacker = browser(client, "203.0.113.150")
    # The owner's username held up by failures...
    assert 429 in hammer(attacker, [owner], throttle.PER_PAIR + 1)
    # ...and then the owner's e-mail, another account's, an unknown one, and another
    # account's username: every answer the same, "wrong", none "wait".
    answers = {
        login: answer_of(log_in(attacker, login, "wrong"))
        for login in (
            f"{owner}@example.org",
            f"{stranger}@example.org",
            "nobody-at-all@example.org",
            stranger,
        )
    }
    assert len(set(answers.values())) == 1, answers
    status, message, wait = next(iter(answers.values()))
    assert (status, wait) == (200, None)
    assert message == "That username or e-mail and password do not match an account."


def test_a_held_up_login_answers_alike_whether_or_not_it_names_an_account(
    client: TestClient, engine: Engine
) -> None:
    owner, _ = new_user(engine)
    attacker = browser(client, "203.0.113.151")
    answers = []
    for login in (owner, "nobody-at-all"):
        hammer(attacker, [login], throttle.PER_PAIR)
        answers.append(answer_of(log_in(attacker, login, "wrong")))
    (status, message, wait), unknown = answers
    assert status == 429
    assert message
    assert wait
    assert unknown[:2] == (status, message)
