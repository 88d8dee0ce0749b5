"""A relying party nobody here wrote, against a live `regdesk serve` (issue 19, Real
components): Authlib's OpenID client. Discovery, the code flow with PKCE and nonce, the ID
token validated by `authlib.oidc.core` against the JWKS fetched from the server, userinfo,
refresh, logout; what it must refuse; and a key rotation during a live session.

The client library plays the tool; a cookie-keeping HTTP client plays the user's browser,
signing in and pressing Authorize on the real pages.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import (
    BadSignatureError,
    ExpiredTokenError,
    InvalidClaimError,
    JoseError,
    MissingClaimError,
)
from joserfc.jwk import KeySet
from sqlalchemy import update

from regdesk.config import load_settings
from regdesk.db import make_engine, write_session
from regdesk.keys.models import SigningKey
from regdesk.oidc.keys import rotate
from tests import http_calls
from tests.conftest import BACKENDS, Registered, scratch_database_url
from tests.helpers import live_server
from tests.oidc.support import CALLBACK, LOGGED_OUT, PASSWORD, World, seed
from tests.web.support import form, query


@dataclass(frozen=True)
class Live:
    base: str
    url: str  # the database's
    world: World
    es256: Registered


@contextmanager
def serving(backend: str, directory: Path) -> Iterator[Live]:
    with scratch_database_url(backend, directory, migrated=True) as url:
        engine = make_engine(url)
        world = seed(engine)
        from tests.oidc.support import register

        es256 = register(engine, name="Chat", id_token_alg="ES256")
        engine.dispose()
        with live_server(url) as base:
            yield Live(base, url, world, es256)


@pytest.fixture(scope="module", params=BACKENDS)
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """One server per database for the tests that sign fox in and check what they get: each
    signs in with a browser and a grant of its own, and changes nothing another reads."""
    with serving(request.param, tmp_path_factory.mktemp("relying-party")) as made:
        yield made


@pytest.fixture(params=BACKENDS)
def live_of_its_own(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    """A server for one test: a key rotation changes the keys every later token is signed
    with."""
    with serving(request.param, tmp_path) as made:
        yield made


class RelyingParty:
    """A tool that signs its users in with regdesk, written the way Authlib's docs show."""

    def __init__(self, base: str, app: Registered, scope: str = "openid profile email groups"):
        self.metadata = http_calls.get(f"{base}/.well-known/openid-configuration").json()
        self.client = OAuth2Client(
            app.client_id,
            app.client_secret,
            scope=scope,
            redirect_uri=CALLBACK,
            code_challenge_method="S256",
        )

    def authorization_url(self, **extra: str) -> tuple[str, str, str]:
        """(url, nonce, code_verifier)."""
        nonce, verifier = generate_token(20), generate_token(48)
        url, _ = self.client.create_authorization_url(
            self.metadata["authorization_endpoint"], nonce=nonce, code_verifier=verifier, **extra
        )
        return url, nonce, verifier

    def fetch_token(self, back: str, verifier: str) -> dict[str, Any]:
        token: dict[str, Any] = self.client.fetch_token(
            self.metadata["token_endpoint"], authorization_response=back, code_verifier=verifier
        )
        return token

    def jwks(self) -> KeySet:
        return KeySet.import_key_set(http_calls.get(self.metadata["jwks_uri"]).json())

    def validate(
        self, token: dict[str, Any], nonce: str | None, now: int | None = None
    ) -> dict[str, Any]:
        """As Authlib's OpenIDMixin.parse_id_token: signature against the JWKS, then claims."""
        decoded = jwt.decode(
            token["id_token"],
            self.jwks(),
            algorithms=self.metadata["id_token_signing_alg_values_supported"],
        )
        claims = CodeIDToken(
            decoded.claims,
            decoded.header,
            {"iss": {"values": [self.metadata["issuer"]]}},
            {
                "nonce": nonce,
                "client_id": self.client.client_id,
                "access_token": token["access_token"],
            },
        )
        claims.validate(now=now, leeway=0)
        return dict(claims)


class Browser:
    """The user's browser: signs in when asked, presses Authorize."""

    def __init__(self, base: str) -> None:
        self.http = http_calls.client(base_url=base)

    def authorize(self, url: str) -> str:
        """Follow the authorization URL, signing in and consenting as asked; where the tool
        is sent back to."""
        response = self.http.get(url)
        while response.status_code in (302, 303):
            location = response.headers["location"]
            if location.startswith(CALLBACK):
                return location
            response = self.http.get(urljoin(str(response.url), location))
        if urlsplit(str(response.url)).path == "/login":
            fields = form(response.text, "/login").fields
            fields.update(username="fox", password=PASSWORD)
            response = self.http.post("/login", data=fields, follow_redirects=True)
        fields = form(response.text, "/oauth/authorize").fields
        decided = self.http.post("/oauth/authorize", data={**fields, "decision": "authorize"})
        assert decided.status_code == 303, decided.text
        location: str = decided.headers["location"]
        return location


def test_sign_in_with_authlib_then_userinfo_refresh_and_logout(live: Live) -> None:
    tool, browser = RelyingParty(live.base, live.world.app), Browser(live.base)
    url, nonce, verifier = tool.authorization_url()
    back = browser.authorize(url)
    assert query(back)["iss"] == [live.base]
    token = tool.fetch_token(back, verifier)

    claims = tool.validate(token, nonce)
    assert claims["sub"] == str(live.world.fox)
    assert claims["email"] == "fox@example.org"
    assert claims["groups"] == ["Dealer", "Staff"]
    assert claims["iss"] == live.base

    me = tool.client.get(tool.metadata["userinfo_endpoint"]).json()
    assert me["sub"] == claims["sub"]
    assert me["name"] == "Fae Fox"
    assert tool.client.post(tool.metadata["userinfo_endpoint"]).json() == me

    renewed = tool.client.refresh_token(
        tool.metadata["token_endpoint"], refresh_token=token["refresh_token"]
    )
    again = tool.validate(renewed, None)
    assert again["sub"] == claims["sub"]
    assert again["auth_time"] == claims["auth_time"]

    # The same nonce a second time, while its code lives: refused by the server.
    replay = browser.authorize(url)
    assert query(replay)["error"] == ["invalid_request"]

    logout = browser.http.get(
        tool.metadata["end_session_endpoint"],
        params={
            "id_token_hint": token["id_token"],
            "post_logout_redirect_uri": LOGGED_OUT,
            "state": "s1",
        },
    )
    assert logout.headers["location"] == f"{LOGGED_OUT}?state=s1"
    assert browser.http.get("/account").status_code == 303  # signed out


def test_the_library_refuses_a_bad_id_token(live: Live) -> None:
    tool, browser = RelyingParty(live.base, live.world.app), Browser(live.base)
    url, nonce, verifier = tool.authorization_url()
    token = tool.fetch_token(browser.authorize(url), verifier)
    claims = tool.validate(token, nonce)

    head, payload, signature = token["id_token"].split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged["sub"] = str(live.world.owl)
    body = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
    with pytest.raises(BadSignatureError):
        tool.validate({**token, "id_token": f"{head}.{body}.{signature}"}, nonce)
    with pytest.raises(ExpiredTokenError):
        tool.validate(token, nonce, now=claims["exp"] + 1)
    with pytest.raises(InvalidClaimError):  # a replayed token: not this request's nonce
        tool.validate(token, "another nonce")
    with pytest.raises(InvalidClaimError):  # at_hash binds it to its access token
        tool.validate({**token, "access_token": "swapped"}, nonce)

    # Asked without a nonce, the ID token has none: a tool that expects one refuses it.
    unasked = tool.client.create_authorization_url(
        tool.metadata["authorization_endpoint"], code_verifier=(verifier := generate_token(48))
    )[0]
    bare = tool.fetch_token(browser.authorize(unasked), verifier)
    assert "nonce" not in tool.validate(bare, None)
    with pytest.raises(MissingClaimError):
        tool.validate(bare, "expected")


def test_an_es256_tool(live: Live) -> None:
    tool, browser = RelyingParty(live.base, live.es256, "openid email"), Browser(live.base)
    url, nonce, verifier = tool.authorization_url()
    token = tool.fetch_token(browser.authorize(url), verifier)
    header = jwt.decode(token["id_token"], tool.jwks(), algorithms=["ES256"]).header
    assert header["alg"] == "ES256"
    assert tool.validate(token, nonce)["email"] == "fox@example.org"


def test_a_key_rotation_during_a_live_session(live_of_its_own: Live) -> None:
    live = live_of_its_own
    tool, browser = RelyingParty(live.base, live.world.app), Browser(live.base)
    url, nonce, verifier = tool.authorization_url()
    before = tool.fetch_token(browser.authorize(url), verifier)
    old_kid = jwt.decode(before["id_token"], tool.jwks(), algorithms=["RS256"]).header["kid"]

    engine = make_engine(live.url)
    with write_session(engine) as session:
        rotated = rotate(session)
    assert rotated["RS256"][0] == old_kid

    # The session goes on: a refresh signs with the new key; the old token still verifies.
    after = tool.client.refresh_token(
        tool.metadata["token_endpoint"], refresh_token=before["refresh_token"]
    )
    assert jwt.decode(after["id_token"], tool.jwks(), algorithms=["RS256"]).header["kid"] != old_kid
    assert tool.validate(after, None)["sub"] == str(live.world.fox)
    assert tool.validate(before, nonce)["sub"] == str(live.world.fox)
    assert old_kid in [
        key["kid"] for key in http_calls.get(tool.metadata["jwks_uri"]).json()["keys"]
    ]

    # The overlap ends: the old key is no longer published, and its tokens no longer verify.
    overlap = load_settings().key_overlap
    with engine.begin() as connection:
        connection.execute(
            update(SigningKey)
            .where(SigningKey.kid == old_kid)
            .values(retired_at=dt.datetime.now(dt.UTC) - overlap - dt.timedelta(seconds=1))
        )
    engine.dispose()
    assert old_kid not in [
        key["kid"] for key in http_calls.get(tool.metadata["jwks_uri"]).json()["keys"]
    ]
    with pytest.raises(JoseError):
        tool.validate(before, nonce)
    assert tool.validate(after, None)["sub"] == str(live.world.fox)
