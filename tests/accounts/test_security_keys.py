"""Security keys (accounts.md, Second factor; WebAuthn): added on /account from the options of
a page of their own, and used at the second step of signing in. A software key (SoftKey)
answers as a browser would, so the server's checks run for real: the relying party and origin,
the challenge (kept server-side, good once), the signature and its counter; refused answers are
throttled as wrong codes are. The browser's side is tests/e2e/test_security_key.py."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, select

from regdesk.accounts import throttle
from regdesk.accounts.factor_models import SecurityKey
from regdesk.db import read_session
from tests.accounts.factor_support import RECOVERY_CODE, add_app
from tests.accounts.password_support import outbox
from tests.accounts.security_key_support import SoftKey, page_options
from tests.client import TestClient
from tests.web.support import audit, form, log_in, make_user, session_cookie, signed_in

pytestmark = pytest.mark.postgres

NEW_KEY = "/account/security-keys/new"
KEY_STEP = "/login/second-factor/security-key"


def fresh(client: TestClient) -> TestClient:
    return TestClient(client.app, base_url="https://testserver")


def offer_key(client: TestClient, key: SoftKey) -> tuple[str, dict[str, str]]:
    """Open the page that adds a key: the answer `key` gives its options, and the form."""
    page = client.get(NEW_KEY)
    assert page.status_code == 200, page.text
    return key.create(page_options(page.text)), form(page.text, "/account/security-keys").fields


def add_key(client: TestClient, key: SoftKey, name: str = "Blue key") -> httpx.Response:
    answer, fields = offer_key(client, key)
    return client.post(
        "/account/security-keys",
        data={**fields, "name": name, "credential": answer},
        follow_redirects=False,
    )


def keys(engine: Engine) -> list[SecurityKey]:
    with read_session(engine) as session:
        return list(session.scalars(select(SecurityKey).order_by(SecurityKey.id)))


def key_step(browser: TestClient, key: SoftKey, **kwargs: str) -> httpx.Response:
    page = browser.get(KEY_STEP)
    assert page.status_code == 200, page.text
    fields = form(page.text, KEY_STEP).fields
    answer = key.get(page_options(page.text), **kwargs)
    return browser.post(KEY_STEP, data={**fields, "credential": answer}, follow_redirects=False)


@pytest.fixture
def fox_with_a_key(client: TestClient, engine: Engine) -> SoftKey:
    make_user(engine, "fox")
    signed_in(client)
    key = SoftKey()
    assert add_key(client, key).status_code == 200  # the recovery codes, a first factor's
    return key


def test_the_options_name_this_site_and_exclude_the_keys_held(
    client: TestClient, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    signed_in(client)
    page = client.get(NEW_KEY)
    assert page.headers["cache-control"] == "no-store"
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'self'" in policy
    assert '<script src="/static/webauthn.js" defer></script>' in page.text
    assert "<noscript>" in page.text
    options = page_options(page.text)
    assert options["rp"] == {"id": "testserver", "name": "regdesk"}
    assert options["user"]["name"] == "fox"
    assert options["authenticatorSelection"]["userVerification"] == "preferred"
    assert options["excludeCredentials"] == []
    assert client.get("/static/webauthn.js").status_code == 200
    # /account itself keeps running no script.
    account = client.get("/account")
    assert "<script" not in account.text
    assert "script-src 'none'" in account.headers["content-security-policy"]

    key = SoftKey()
    added = add_key(client, key)
    assert added.status_code == 200
    assert len(RECOVERY_CODE.findall(added.text)) == 10
    [stored] = keys(engine)
    assert (stored.user_id, stored.name, stored.credential_id) == (fox, "Blue key", key.id)
    [event] = audit(engine, "user.factor_added")
    assert event.details == {"factor": "security_key", "name": "Blue key"}
    assert [m.subject for m in outbox(engine)] == [
        "A second factor was added to your account",
        "New recovery codes were made for your account",
    ]
    again = page_options(client.get(NEW_KEY).text)
    assert [c["id"] for c in again["excludeCredentials"]] == [key.id]


def test_a_second_key_brings_no_new_codes_and_the_same_key_is_refused(
    client: TestClient, engine: Engine, fox_with_a_key: SoftKey
) -> None:
    added = add_key(client, SoftKey(), "Laptop")
    assert (added.status_code, added.headers["location"]) == (303, "/account?factor=added")
    assert len(audit(engine, "user.recovery_codes_generated")) == 1
    assert add_key(client, fox_with_a_key, "Again").status_code == 400
    assert [k.name for k in keys(engine)] == ["Blue key", "Laptop"]


def test_a_bad_registration_is_refused(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    signed_in(client)
    key = SoftKey()
    _, fields = offer_key(client, key)
    for credential in (
        "",
        "not json",
        '{"id": 1}',
        key.create({"challenge": "AAAA", "rp": {"id": "testserver"}}),
    ):
        refused = client.post(
            "/account/security-keys", data={**fields, "name": "Blue", "credential": credential}
        )
        assert refused.status_code == 400
    # Another site's origin: refused, and its challenge is spent with it.
    page = client.get(NEW_KEY)
    fields = form(page.text, "/account/security-keys").fields
    options = page_options(page.text)
    other = key.create(options, origin="https://evil.example")
    assert (
        client.post(
            "/account/security-keys", data={**fields, "name": "B", "credential": other}
        ).status_code
        == 400
    )
    good = key.create(options)
    spent = client.post("/account/security-keys", data={**fields, "name": "B", "credential": good})
    assert spent.status_code == 400
    assert "did not work" in spent.text
    # No name: asked for one.
    nameless = client.post(
        "/account/security-keys", data={**fields, "name": " ", "credential": good}
    )
    assert (nameless.status_code, "Give the key a name" in nameless.text) == (400, True)
    assert keys(engine) == []
    assert audit(engine, "user.factor_added") == []


def test_a_key_signs_in_at_the_second_step(
    client: TestClient, engine: Engine, fox_with_a_key: SoftKey
) -> None:
    browser = fresh(client)
    answer = log_in(browser, "fox", next_="/volunteer")
    assert (answer.status_code, answer.headers["location"]) == (303, "/login/second-factor")
    step = browser.get("/login/second-factor").text
    assert f'href="{KEY_STEP}"' in step
    assert "<script" not in step
    page = browser.get(KEY_STEP)
    assert "script-src 'self'" in page.headers["content-security-policy"]
    options = page_options(page.text)
    assert options["rpId"] == "testserver"
    assert [c["id"] for c in options["allowCredentials"]] == [fox_with_a_key.id]

    done = key_step(browser, fox_with_a_key)
    assert (done.status_code, done.headers["location"]) == (303, "/volunteer")
    assert session_cookie(browser) is not None
    [*_, login] = audit(engine, "user.login")
    assert login.details == {"second_factor": "security_key"}
    [stored] = keys(engine)
    assert stored.sign_count == fox_with_a_key.sign_count == 2
    assert stored.last_used_at is not None


def test_a_challenge_is_good_once(
    client: TestClient, engine: Engine, fox_with_a_key: SoftKey
) -> None:
    browser = fresh(client)
    log_in(browser, "fox")
    page = browser.get(KEY_STEP)
    fields = form(page.text, KEY_STEP).fields
    options = page_options(page.text)
    answer = fox_with_a_key.get(options)
    assert browser.post(KEY_STEP, data={**fields, "credential": answer}).status_code == 200
    thief = fresh(client)
    log_in(thief, "fox")
    thief.get(KEY_STEP)  # a challenge of its own, which does not bring the spent one back
    fields = form(thief.get(KEY_STEP).text, KEY_STEP).fields
    replayed = thief.post(KEY_STEP, data={**fields, "credential": answer}, follow_redirects=False)
    assert replayed.status_code == 400
    # Even a fresh signature over a spent challenge is refused.
    again = fox_with_a_key.get(options)
    assert thief.post(KEY_STEP, data={**fields, "credential": again}).status_code == 400
    assert session_cookie(thief) is None


def test_a_bad_assertion_is_refused_and_throttled(
    client: TestClient, engine: Engine, fox_with_a_key: SoftKey
) -> None:
    browser = fresh(client)
    log_in(browser, "fox")
    stranger = SoftKey(credential_id=fox_with_a_key.credential_id)  # its id, another key
    refused = key_step(browser, stranger)
    assert refused.status_code == 400
    assert "did not work" in refused.text
    [failed] = audit(engine, "user.login_failed")
    assert failed.details == {"reason": "wrong_security_key"}
    assert key_step(browser, fox_with_a_key, origin="https://evil.example").status_code == 400
    assert key_step(browser, SoftKey()).status_code == 400  # a key not the account's
    for _ in range(throttle.PER_PAIR - 3):
        assert key_step(browser, stranger).status_code == 400
    held = key_step(browser, fox_with_a_key)
    assert held.status_code == 429
    assert session_cookie(browser) is None


def test_a_lagging_counter_is_refused(
    client: TestClient, engine: Engine, fox_with_a_key: SoftKey
) -> None:
    """A cloned key reports a count its original has passed."""
    clone = SoftKey(fox_with_a_key.private_key, fox_with_a_key.credential_id, 0)
    browser = fresh(client)
    log_in(browser, "fox")
    assert key_step(browser, fox_with_a_key).status_code == 303
    other = fresh(client)
    log_in(other, "fox")
    assert key_step(other, clone).status_code == 400


def test_a_key_that_counts_nothing_still_signs_in(client: TestClient, engine: Engine) -> None:
    make_user(engine, "fox")
    signed_in(client)
    key = SoftKey(counts=False)
    assert add_key(client, key).status_code == 200
    for _ in range(2):
        browser = fresh(client)
        log_in(browser, "fox")
        assert key_step(browser, key).status_code == 303


def test_the_key_page_needs_a_pending_login_and_a_key(client: TestClient, engine: Engine) -> None:
    answer = client.get(KEY_STEP, follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/login")
    make_user(engine, "fox")
    signed_in(client)
    add_app(client)  # a second factor, but no key
    browser = fresh(client)
    log_in(browser, "fox")
    assert f'href="{KEY_STEP}"' not in browser.get("/login/second-factor").text
    to_codes = browser.get(KEY_STEP, follow_redirects=False)
    assert (to_codes.status_code, to_codes.headers["location"]) == (303, "/login/second-factor")
