"""The `oic` package (pyoidc, an OpenID-certified relying-party library) against a live
`regdesk serve` (issue 19, Real components): discovery, the code flow with PKCE and nonce,
ID-token validation (its signature against the JWKS, issuer, audience, nonce), userinfo,
refresh, logout; and a tampered or expired ID token, which it refuses."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from jwkest import BadSignature
from oic import rndstr
from oic.oic import Client
from oic.oic.message import (
    AccessTokenResponse,
    AuthorizationResponse,
    EXPError,
    RegistrationResponse,
)
from oic.utils.authn.client import CLIENT_AUTHN_METHOD

from regdesk.db import make_engine
from tests import http_calls
from tests.conftest import BACKENDS, scratch_database_url
from tests.helpers import live_server
from tests.oidc.support import CALLBACK, LOGGED_OUT, World, seed
from tests.oidc.test_relying_party import Browser
from tests.web.support import query


@pytest.fixture(scope="module", params=BACKENDS)
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, World]]:
    """One server per database, shared: each test signs fox in with a client and a grant of
    its own, and changes nothing the other reads."""
    directory = tmp_path_factory.mktemp("pyoidc")
    with scratch_database_url(request.param, directory, migrated=True) as url:
        engine = make_engine(url)
        world = seed(engine)
        engine.dispose()
        with live_server(url) as base:
            yield base, world


def test_sign_in_with_pyoidc(live: tuple[str, World]) -> None:
    base, world = live
    rp = Client(client_authn_method=CLIENT_AUTHN_METHOD)
    provider = rp.provider_config(base)  # discovery; pyoidc checks the issuer is the base
    assert provider["issuer"] == base
    rp.store_registration_info(
        RegistrationResponse(
            client_id=world.app.client_id,
            client_secret=world.app.client_secret,
            redirect_uris=[CALLBACK],
            post_logout_redirect_uris=[LOGGED_OUT],
        )
    )
    state, nonce = rndstr(), rndstr()
    challenge, verifier = rp.add_code_challenge()
    request = rp.construct_AuthorizationRequest(
        request_args={
            "client_id": world.app.client_id,
            "response_type": "code",
            "scope": ["openid", "email", "profile"],
            "nonce": nonce,
            "redirect_uri": CALLBACK,
            "state": state,
            **challenge,
        }
    )
    back = Browser(base).authorize(request.request(rp.authorization_endpoint))
    answer = rp.parse_response(
        AuthorizationResponse, info=urlsplit(back).query, sformat="urlencoded"
    )
    assert answer["state"] == state

    tokens = rp.do_access_token_request(
        state=state,
        request_args={"code": answer["code"], "code_verifier": verifier},
        authn_method="client_secret_basic",
    )
    assert isinstance(tokens, AccessTokenResponse), tokens
    id_token = tokens["id_token"]  # verified by pyoidc: signature (JWKS), iss, aud, nonce
    assert id_token["sub"] == str(world.fox)
    assert id_token["nonce"] == nonce
    assert id_token["email"] == "fox@example.org"

    me = rp.do_user_info_request(state=state)
    assert me["sub"] == id_token["sub"]
    assert me["preferred_username"] == "fox"

    renewed = rp.do_access_token_refresh(state=state, authn_method="client_secret_basic")
    assert isinstance(renewed, AccessTokenResponse), renewed
    assert renewed["id_token"]["sub"] == id_token["sub"]

    end = rp.construct_EndSessionRequest(
        state=state,
        request_args={"post_logout_redirect_uri": LOGGED_OUT, "state": "bye"},
    )
    browser = Browser(base)
    logout = browser.http.get(end.request(rp.end_session_endpoint))
    assert logout.headers["location"].startswith(LOGGED_OUT)
    assert query(logout.headers["location"])["state"] == ["bye"]


def test_pyoidc_refuses_a_tampered_or_expired_id_token(live: tuple[str, World]) -> None:
    """The token response as pyoidc checks it (`parse_response`): the genuine one passes; with
    its ID token's payload changed (signature kept), or read an hour and more later (pyoidc's
    `skew`: the relying party's clock ahead), it is refused."""
    base, world = live
    rp = Client(client_authn_method=CLIENT_AUTHN_METHOD)
    rp.provider_config(base)
    rp.store_registration_info(
        RegistrationResponse(
            client_id=world.app.client_id,
            client_secret=world.app.client_secret,
            redirect_uris=[CALLBACK],
        )
    )
    state = rndstr()
    challenge, verifier = rp.add_code_challenge()
    request = rp.construct_AuthorizationRequest(
        request_args={
            "client_id": world.app.client_id,
            "response_type": "code",
            "scope": ["openid", "email"],
            "nonce": rndstr(),
            "redirect_uri": CALLBACK,
            "state": state,
            **challenge,
        }
    )
    back = Browser(base).authorize(request.request(rp.authorization_endpoint))
    body = http_calls.post(
        rp.token_endpoint,
        data={
            "grant_type": "authorization_code",
            "code": query(back)["code"][0],
            "redirect_uri": CALLBACK,
            "code_verifier": verifier,
        },
        auth=(world.app.client_id, world.app.client_secret),
    ).json()

    def parsed(id_token: str, **kwargs: int) -> AccessTokenResponse:
        answer = rp.parse_response(
            AccessTokenResponse, info=json.dumps({**body, "id_token": id_token}), **kwargs
        )
        assert isinstance(answer, AccessTokenResponse)
        return answer

    assert parsed(body["id_token"])["id_token"]["sub"] == str(world.fox)
    head, payload, signature = body["id_token"].split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged = base64.urlsafe_b64encode(
        json.dumps({**claims, "sub": str(world.owl)}).encode()
    ).rstrip(b"=")
    with pytest.raises(BadSignature):
        parsed(f"{head}.{forged.decode()}.{signature}")
    with pytest.raises(EXPError):
        parsed(body["id_token"], skew=-(claims["exp"] - claims["iat"]) - 60)
