"""Sign-in sessions (ASVS 4.0 V3.2.1: a new session token at authentication; V3.2.2: enough
entropy; V3.3.1: logout invalidates the session; decisions.md, Cookies and CSRF). What the
session store promises on its own (the cookie's attributes, the stored hash, the timeouts):
tests/web/test_sessions.py.

Session fixation: whatever session cookie a browser carried before login (planted by another
site, a sibling subdomain or someone at the keyboard), it signs no one in as the user who
logs in, and the login answers with a fresh id.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select

from regdesk.web.models import WebSession
from tests.client import TestClient
from tests.security.support import new_user, other_browser
from tests.web.support import audit, form, log_in, session_cookie, use_session_cookie


def signed_in_as(client: TestClient, cookie: str) -> str | None:
    """Whose account page `cookie` opens (its e-mail address is the username's, support.py),
    or None when it opens none."""
    use_session_cookie(client, cookie)
    page = client.get("/account", follow_redirects=False)
    if page.status_code != 200:
        return None
    found = re.search(r"(user\d+)@example\.org", page.text)
    assert found, page.text
    return found.group(1)


def session_owner(engine: Engine, cookie: str) -> int | None:
    digest = hashlib.sha256(cookie.encode()).hexdigest()
    with engine.connect() as connection:
        owner = connection.scalar(
            select(WebSession.user_id).where(WebSession.session_hash == digest)
        )
    return None if owner is None else int(owner)


def stored_hashes(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return set(connection.scalars(select(WebSession.session_hash)))


def _attackers_live_session(app: FastAPI, engine: Engine) -> str:
    """The attacker's own session id, planted in the victim's browser: the classic fixation."""
    attacker = other_browser(app)
    username, _ = new_user(engine)
    log_in(attacker, username)
    value = session_cookie(attacker)
    assert value
    return value


def _chosen_by_the_attacker(app: FastAPI, engine: Engine) -> str:
    return base64.urlsafe_b64encode(b"attacker-chosen session id!!!!!!").decode().rstrip("=")


def _an_ended_session(app: FastAPI, engine: Engine) -> str:
    browser = other_browser(app)
    username, _ = new_user(engine)
    log_in(browser, username)
    value = session_cookie(browser)
    assert value
    page = browser.get("/logout")
    browser.post("/logout", data=form(page.text, "/logout").fields)
    return value


def _empty(app: FastAPI, engine: Engine) -> str:
    return ""


def _overlong(app: FastAPI, engine: Engine) -> str:
    return "A" * 4000


def _sql(app: FastAPI, engine: Engine) -> str:
    return "x' OR '1'='1"


PLANTED: dict[str, Callable[[FastAPI, Engine], str]] = {
    "the attacker's own live session": _attackers_live_session,
    "a value the attacker chose": _chosen_by_the_attacker,
    "a session that has ended": _an_ended_session,
    "empty": _empty,
    "overlong": _overlong,
    "an SQL payload": _sql,
}


@pytest.mark.parametrize("plant", list(PLANTED.values()), ids=list(PLANTED))
def test_a_planted_session_id_signs_no_one_in_as_the_victim(
    app: FastAPI, client: TestClient, engine: Engine, plant: Callable[[FastAPI, Engine], str]
) -> None:
    planted = plant(app, engine)
    victim, victim_id = new_user(engine)
    use_session_cookie(client, planted)
    assert log_in(client, victim).status_code == 303
    fresh = session_cookie(client)
    assert fresh
    assert fresh != planted
    assert signed_in_as(client, fresh) == victim
    assert signed_in_as(client, planted) != victim
    assert session_owner(engine, planted) != victim_id


def test_logging_in_again_replaces_the_session(client: TestClient, engine: Engine) -> None:
    """Re-authentication (a second login in the same browser) also gets a new id, and the
    old one is gone from the server."""
    username, _ = new_user(engine)
    log_in(client, username)
    first = session_cookie(client)
    assert first
    log_in(client, username)
    second = session_cookie(client)
    assert second
    assert second != first
    assert hashlib.sha256(first.encode()).hexdigest() not in stored_hashes(engine)
    assert signed_in_as(client, first) is None


def test_logging_in_gives_a_new_session_id_and_kills_the_old_one(
    client: TestClient, engine: Engine
) -> None:
    """Whoever signs in next in the same browser (another person at a shared desk) gets a new
    id too, and the session the browser held before is gone from the server."""
    fox, fox_id = new_user(engine)
    owl, owl_id = new_user(engine)
    use_session_cookie(client, "planted-by-someone-else-0123456789abcdef")
    log_in(client, fox)
    first = session_cookie(client)
    assert first
    assert first != "planted-by-someone-else-0123456789abcdef"
    log_in(client, owl)
    second = session_cookie(client)
    assert second
    assert second != first
    assert f"{owl}@example.org" in client.get("/account").text
    use_session_cookie(client, first)
    assert client.get("/account", follow_redirects=False).headers["location"] == (
        "/login?next=%2Faccount"
    )
    with engine.connect() as connection:
        theirs = WebSession.user_id.in_([fox_id, owl_id])
        assert len(connection.scalars(select(WebSession.id).where(theirs)).all()) == 1


def _post_logout(client: TestClient) -> None:
    page = client.get("/logout")
    response = client.post("/logout", data=form(page.text, "/logout").fields)
    assert response.status_code == 200


def _oauth_logout(client: TestClient) -> None:
    client.get("/oauth/logout", follow_redirects=False)


LOGOUTS: dict[str, Callable[[TestClient], None]] = {
    "the logout form": _post_logout,
    "an application's /oauth/logout": _oauth_logout,
}


@pytest.mark.parametrize("logout", list(LOGOUTS.values()), ids=list(LOGOUTS))
def test_logout_ends_the_session_on_the_server(
    client: TestClient, engine: Engine, logout: Callable[[TestClient], None]
) -> None:
    """ASVS V3.3.1: a copy of the cookie kept from before (the back button, a stolen copy)
    is worth nothing afterwards: the server forgot the session, not just the browser."""
    username, _ = new_user(engine)
    log_in(client, username)
    kept = session_cookie(client)
    assert kept
    digest = hashlib.sha256(kept.encode()).hexdigest()
    assert digest in stored_hashes(engine)
    logout(client)
    assert session_cookie(client) is None
    assert digest not in stored_hashes(engine)
    assert signed_in_as(client, kept) is None


def test_logging_out_ends_the_session_on_the_server(client: TestClient, engine: Engine) -> None:
    """The logout form as a visitor sees it: a confirmation page, then the signed-out page; the
    logout is recorded, and the session is gone."""
    username, user_id = new_user(engine)
    log_in(client, username)
    cookie = session_cookie(client)
    assert cookie
    earlier = {event.id for event in audit(engine, "user.logout")}
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
    [event] = [event for event in audit(engine, "user.logout") if event.id not in earlier]
    assert event.actor_user_id == user_id
    with engine.connect() as connection:
        mine = WebSession.user_id == user_id
        assert connection.scalars(select(WebSession.id).where(mine)).all() == []


def test_session_ids_are_long_random_and_never_repeat(client: TestClient, engine: Engine) -> None:
    """ASVS V3.2.2 asks for 64 bits; ours are 256 (43 URL-safe base64 characters)."""
    username, _ = new_user(engine)
    seen = set()
    for _ in range(20):
        log_in(client, username)
        value = session_cookie(client)
        assert value
        assert len(value) >= 43
        assert len(base64.urlsafe_b64decode(value + "=")) >= 32
        seen.add(value)
    assert len(seen) == 20
