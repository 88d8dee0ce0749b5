"""OpenID Connect, attacked (oidc.md; OpenID Connect Core 1.0 3.1.3.7 and 15.5.2, RP-Initiated
Logout 1.0 2 and 3): whom an ID token is for and who issued it, `azp`, `at_hash`, the nonce,
and where the end-session endpoint may send a browser.

What a relying party must refuse is judged by a client library nobody here wrote (Authlib's
`CodeIDToken`, as `authlib.integrations` validates an ID token), so these tests prove that
regdesk's tokens carry what such a library checks, and that one made for somebody else fails.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidClaimError, MissingClaimError
from joserfc.jwk import KeySet, RSAKey
from sqlalchemy import Engine, func, select

from regdesk.app import create_app
from regdesk.config import DEFAULT_PUBLIC_URL
from regdesk.db import read_session, utcnow, write_session
from regdesk.oauth.models import AuthorizationCode
from regdesk.oidc.keys import IdTokenKeys, jose_key
from tests.client import TestClient
from tests.conftest import PUBLIC_URL, Registered
from tests.oidc.support import (
    CALLBACK,
    LOGGED_OUT,
    authorize_params,
    consent,
    exchange,
    refresh,
    register,
    verified_claims,
)
from tests.security.conftest import generous_settings
from tests.security.support import new_user, unique
from tests.web.support import PASSWORD, form, log_in, query, session_cookie


def sign_in(client: TestClient, engine: Engine) -> int:
    """A user of this test's own, signed in at `client`; their id."""
    username, user_id = new_user(engine)
    assert log_in(client, username, PASSWORD).status_code == 303
    return user_id


def openid_app(engine: Engine, **settings: Any) -> Registered:
    return register(engine, name=unique("Wiki"), **settings)


def library_check(
    tokens: dict[str, Any],
    keys_from: TestClient,
    *,
    issuer: str,
    client_id: str,
    nonce: str | None,
) -> dict[str, Any]:
    """The ID token as Authlib's client validates it: signature against the provider's JWKS,
    then `iss`, `aud`, `azp`, `exp`, `iat`, `nonce` and `at_hash` (CodeIDToken)."""
    decoded = jwt.decode(tokens["id_token"], _jwks(keys_from), algorithms=["RS256", "ES256"])
    claims = CodeIDToken(
        decoded.claims,
        decoded.header,
        {"iss": {"values": [issuer]}},
        {"nonce": nonce, "client_id": client_id, "access_token": tokens["access_token"]},
    )
    claims.validate(leeway=0)
    return dict(claims)


def _jwks(client: TestClient) -> KeySet:
    return KeySet.import_key_set(client.get("/oauth/jwks").json())


def half_hash(access_token: str) -> str:
    """OpenID Connect Core 3.1.3.6: the left half of the SHA-256 of the access token (RS256 and
    ES256 both hash with SHA-256)."""
    digest = hashlib.sha256(access_token.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


# --- aud, azp, iss ---------------------------------------------------------------------------


def test_the_id_token_is_for_the_client_it_was_issued_to_only(
    client: TestClient, engine: Engine
) -> None:
    ours, theirs = openid_app(engine), openid_app(engine)
    sign_in(client, engine)
    tokens = exchange(client, ours, consent(client, ours, "openid email", nonce="n1"))
    renewed = refresh(client, ours, tokens["refresh_token"])
    for issued in (tokens, renewed):
        claims = verified_claims(client, issued["id_token"])
        # One audience, a string, the client's id; `azp` the same (Core 2: azp names the
        # party the token was issued to).
        assert claims["aud"] == ours.client_id
        assert claims["azp"] == ours.client_id
    assert library_check(tokens, client, issuer=PUBLIC_URL, client_id=ours.client_id, nonce="n1")[
        "aud"
    ] == (ours.client_id)
    # Another application's client refuses it: it is not the audience, nor the authorized
    # party (Authlib checks the client's id against `azp`, which the token names).
    with pytest.raises(InvalidClaimError, match=r"azp|aud"):
        library_check(tokens, client, issuer=PUBLIC_URL, client_id=theirs.client_id, nonce="n1")


@pytest.fixture(scope="module")
def hostless(engine: Engine, database_url: str) -> Iterator[TestClient]:
    """The service without REGDESK_PUBLIC_URL, reached by a request naming another host."""
    settings = generous_settings(database_url)
    with TestClient(create_app(settings), base_url="https://evil.example") as client:
        yield client


def test_the_id_token_names_the_configured_issuer_whatever_the_host(
    client: TestClient, engine: Engine, hostless: TestClient
) -> None:
    """The `iss` of every ID token is the issuer of the discovery document (REGDESK_PUBLIC_URL,
    or without it a fixed loopback address), never the `Host` a request names."""
    app = openid_app(engine)
    for speaker, issuer in ((client, PUBLIC_URL), (hostless, DEFAULT_PUBLIC_URL)):
        speaker.cookies.clear()
        assert speaker.get("/.well-known/openid-configuration").json()["issuer"] == issuer
        sign_in(speaker, engine)
        tokens = exchange(speaker, app, consent(speaker, app, "openid"))
        assert verified_claims(speaker, tokens["id_token"])["iss"] == issuer
        renewed = refresh(speaker, app, tokens["refresh_token"])
        assert verified_claims(speaker, renewed["id_token"])["iss"] == issuer
        library_check(tokens, speaker, issuer=issuer, client_id=app.client_id, nonce=None)
    # A client that expects another issuer (a mix-up) refuses the token.
    with pytest.raises(InvalidClaimError, match="iss"):
        library_check(
            tokens, hostless, issuer="https://evil.example", client_id=app.client_id, nonce=None
        )


# --- at_hash ----------------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_at_hash_binds_the_id_token_to_its_access_token(
    client: TestClient, engine: Engine, algorithm: str
) -> None:
    app = openid_app(engine, id_token_alg=algorithm)
    sign_in(client, engine)
    tokens = exchange(client, app, consent(client, app, "openid", nonce="n"))
    renewed = refresh(client, app, tokens["refresh_token"])
    for issued in (tokens, renewed):
        claims = verified_claims(client, issued["id_token"])
        assert claims["at_hash"] == half_hash(issued["access_token"])
    # An ID token offered with another access token (the refreshed one: same user, same
    # client) is refused by the client library.
    swapped = {**tokens, "access_token": renewed["access_token"]}
    with pytest.raises(InvalidClaimError, match="at_hash"):
        library_check(swapped, client, issuer=PUBLIC_URL, client_id=app.client_id, nonce="n")


# --- nonce ------------------------------------------------------------------------------------


def _codes_with(engine: Engine, nonce: str) -> int:
    with read_session(engine) as session:
        found = session.scalar(select(func.count()).where(AuthorizationCode.nonce == nonce))
        return int(found or 0)


def test_a_replayed_nonce_is_refused_while_its_code_lives(
    client: TestClient, engine: Engine
) -> None:
    """oidc.md: a nonce is refused when reused within its code's life, redeemed or not: by
    the authorization request, and by a second consent form opened before the first was sent."""
    app, other = openid_app(engine), openid_app(engine)
    sign_in(client, engine)
    nonce = unique("nonce")
    # Two tabs open the consent screen for the same request; the first is sent.
    first = client.get("/oauth/authorize", params=authorize_params(app, "openid", nonce=nonce))
    second = client.get("/oauth/authorize", params=authorize_params(app, "openid", nonce=nonce))
    sent = client.post(
        "/oauth/authorize",
        data={**form(first.text, "/oauth/authorize").fields, "decision": "authorize"},
        follow_redirects=False,
    )
    code = query(sent.headers["location"])["code"][0]
    late = client.post(
        "/oauth/authorize",
        data={**form(second.text, "/oauth/authorize").fields, "decision": "authorize"},
        follow_redirects=False,
    )
    assert query(late.headers["location"])["error"] == ["invalid_request"]
    assert "code" not in query(late.headers["location"])
    # Replayed in a new request, before and after its code is redeemed.
    for _ in ("unredeemed", "redeemed"):
        again = client.get(
            "/oauth/authorize",
            params=authorize_params(app, "openid", nonce=nonce),
            follow_redirects=False,
        )
        assert again.status_code == 302
        assert query(again.headers["location"])["error"] == ["invalid_request"]
        if _ == "unredeemed":
            tokens = exchange(client, app, code)
            assert verified_claims(client, tokens["id_token"])["nonce"] == nonce
    assert _codes_with(engine, nonce) == 1
    # Another application's codes hold none of this one's nonces.
    consent(client, other, "openid", nonce=nonce)
    assert _codes_with(engine, nonce) == 2


@pytest.mark.parametrize("sent", [None, ""])
def test_a_missing_nonce_is_never_made_up(
    client: TestClient, engine: Engine, sent: str | None
) -> None:
    """No nonce asked, none in the ID token (nor in a refresh's): a client that sent one and
    gets a token without it (a token minted for another request) refuses it."""
    app = openid_app(engine)
    sign_in(client, engine)
    extra = {} if sent is None else {"nonce": sent}
    tokens = exchange(client, app, consent(client, app, "openid", **extra))
    renewed = refresh(client, app, tokens["refresh_token"])
    for issued in (tokens, renewed):
        assert "nonce" not in verified_claims(client, issued["id_token"])
    library_check(tokens, client, issuer=PUBLIC_URL, client_id=app.client_id, nonce=None)
    with pytest.raises(MissingClaimError, match="nonce"):
        library_check(tokens, client, issuer=PUBLIC_URL, client_id=app.client_id, nonce="mine")


# --- the end-session endpoint -------------------------------------------------------------------

NEAR_MISSES = [
    LOGGED_OUT + "/",
    LOGGED_OUT + "?",
    LOGGED_OUT + "?next=https://evil.example",
    LOGGED_OUT + "#",
    LOGGED_OUT.replace("https://", "http://"),
    LOGGED_OUT.replace("rp.example", "RP.example"),
    LOGGED_OUT.replace("logged-out", "Logged-out"),
    LOGGED_OUT.replace("rp.example", "rp.example:443"),
    LOGGED_OUT.replace("rp.example", "rp.example:8443"),
    LOGGED_OUT.replace("rp.example", "rp.example.evil.example"),
    LOGGED_OUT.replace("rp.example", "evil.rp.example"),
    LOGGED_OUT.replace("rp.example", "rp.example@evil.example"),
    LOGGED_OUT.replace("https://", "https://evil.example@"),
    LOGGED_OUT.replace("https://", "//"),
    LOGGED_OUT + "-evil",
    LOGGED_OUT + "/../../evil",
    LOGGED_OUT.replace("logged-out", "logged%2Dout"),
    LOGGED_OUT.replace("/logged-out", "/x/../logged-out"),
    " " + LOGGED_OUT,
    LOGGED_OUT + "%00",
    CALLBACK,  # a redirect URI is no post-logout redirect URI
    "https://evil.example/logged-out",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("uri", NEAR_MISSES)
def test_end_session_goes_back_only_to_a_registered_address_exactly(
    client: TestClient, engine: Engine, uri: str
) -> None:
    app = openid_app(engine)
    sign_in(client, engine)
    hint = exchange(client, app, consent(client, app, "openid"))["id_token"]
    for named in ({"client_id": app.client_id}, {"id_token_hint": hint}):
        params = {**named, "post_logout_redirect_uri": uri, "state": "s"}
        answer = client.get("/oauth/end-session", params=params, follow_redirects=False)
        assert answer.status_code == 200, (named, answer.headers.get("location"))
        assert "location" not in answer.headers
        assert "Signed out" in answer.text
    assert session_cookie(client) is None


def test_end_session_goes_back_to_the_registered_address(
    client: TestClient, engine: Engine
) -> None:
    """The control: the registered address, as registered, is followed."""
    app = openid_app(engine)
    sign_in(client, engine)
    hint = exchange(client, app, consent(client, app, "openid"))["id_token"]
    params = {"id_token_hint": hint, "post_logout_redirect_uri": LOGGED_OUT, "state": "s"}
    answer = client.get("/oauth/end-session", params=params, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == f"{LOGGED_OUT}?state=s"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _compact(header: dict[str, Any], claims: dict[str, Any], sign: Any) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(sign(signing_input.encode()))}"


def signing_key(engine: Engine) -> tuple[str, RSAKey]:
    """The RS256 key regdesk signs ID tokens with now (from its key store): its kid and it."""
    with write_session(engine) as session:
        key = IdTokenKeys().key(session, "RS256")
    private = jose_key(key)
    assert isinstance(private, RSAKey)
    return key.kid, private


def forged_hints(client: TestClient, engine: Engine, genuine: str) -> dict[str, str]:
    """ID tokens regdesk did not sign, or signed for someone else, naming the same client."""
    head = json.loads(base64.urlsafe_b64decode(genuine.split(".")[0] + "=="))
    claims = verified_claims(client, genuine)
    published = {key["kid"]: key for key in client.get("/oauth/jwks").json()["keys"]}
    public_pem = RSAKey.import_key(published[head["kid"]]).as_pem(private=False)
    stranger = RSAKey.generate_key(2048)
    kid, ours = signing_key(engine)
    assert kid == head["kid"]
    signed = {"alg": "RS256", "kid": kid}
    return {
        "alg none": _compact({"alg": "none", "kid": head["kid"]}, claims, lambda _: b""),
        # The public key used as an HMAC secret (algorithm confusion).
        "HS256 with the public key": _compact(
            {"alg": "HS256", "kid": head["kid"]},
            claims,
            lambda data: hmac.new(public_pem, data, hashlib.sha256).digest(),
        ),
        "another key under our kid": jwt.encode(signed, claims, stranger),
        "our key, another issuer": jwt.encode(
            signed, {**claims, "iss": "https://evil.example"}, ours
        ),
        "our key, two audiences": jwt.encode(signed, {**claims, "aud": [claims["aud"], "1"]}, ours),
        "an unknown kid": jwt.encode({**signed, "kid": "unknown"}, claims, ours),
    }


def test_end_session_trusts_only_id_tokens_it_signed_for_itself(
    client: TestClient, engine: Engine
) -> None:
    app = openid_app(engine)
    sign_in(client, engine)
    genuine = exchange(client, app, consent(client, app, "openid"))["id_token"]
    for name, hint in forged_hints(client, engine, genuine).items():
        params = {"id_token_hint": hint, "post_logout_redirect_uri": LOGGED_OUT}
        answer = client.get("/oauth/end-session", params=params, follow_redirects=False)
        assert answer.status_code == 200, name
        assert "location" not in answer.headers, name
    # An expired ID token we signed still names its client (RP-Initiated Logout 1.0, 2).
    claims = verified_claims(client, genuine)
    kid, ours = signing_key(engine)
    now = int(utcnow().timestamp())
    expired = jwt.encode(
        {"alg": "RS256", "kid": kid}, {**claims, "iat": now - 7200, "exp": now - 3600}, ours
    )
    params = {"id_token_hint": expired, "post_logout_redirect_uri": LOGGED_OUT}
    answer = client.get("/oauth/end-session", params=params, follow_redirects=False)
    assert answer.headers["location"] == LOGGED_OUT
