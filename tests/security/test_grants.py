"""Stolen or replayed credentials at the token endpoint: authorization codes, refresh tokens,
PKCE and client authentication (RFC 6749 4.1.2, 4.1.3, 10.5; RFC 9700 2.1.1, 2.2.2, 2.5, 4.5,
4.8, 4.14; RFC 7636 4.6; decisions.md, Tokens).

Every user and application here is the test's own (support.new_flow), in a shared database.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from regdesk.oauth.models import AccessToken, Grant
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.oauth.support import assert_oauth_error, basic
from tests.oauth.user_flow import Flow, pkce_pair
from tests.security.support import REDIRECT, new_flow

SCOPES = "pii:basic pii:email"


@pytest.fixture
def flow(client: TestClient, apps: Apps, engine: Engine) -> Flow:
    return new_flow(client, apps, engine, obo=SCOPES)


def me(flow: Flow, access_token: str) -> int:
    response: httpx.Response = flow.client.get("/api/users/current", headers=bearer(access_token))
    return response.status_code


def refresh_refused(flow: Flow, refresh_token: str) -> bool:
    answer = flow.refresh(refresh_token)
    return answer.status_code == 400 and answer.json()["error"] == "invalid_grant"


def live_grants(flow: Flow) -> int:
    with flow.engine.connect() as connection:
        return int(
            connection.scalar(
                select(func.count())
                .select_from(Grant)
                .where(Grant.application_id == flow.app.id, Grant.revoked_at.is_(None))
            )
            or 0
        )


def tokens_issued(flow: Flow) -> int:
    with flow.engine.connect() as connection:
        return int(
            connection.scalar(
                select(func.count())
                .select_from(AccessToken)
                .where(AccessToken.application_id == flow.app.id)
            )
            or 0
        )


# --- authorization code replay ----------------------------------------------------------------


def _replay_at_once(flow: Flow, code: str, first: dict[str, Any]) -> list[dict[str, Any]]:
    assert flow.exchange(code).json()["error"] == "invalid_grant"
    return [first]


def _replay_after_a_refresh(flow: Flow, code: str, first: dict[str, Any]) -> list[dict[str, Any]]:
    """The tokens descended from the code by refreshing die with it."""
    second = flow.refresh(first["refresh_token"]).json()
    assert flow.exchange(code).json()["error"] == "invalid_grant"
    return [second]


def _replay_with_basic_credentials(
    flow: Flow, code: str, first: dict[str, Any]
) -> list[dict[str, Any]]:
    answer = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        headers=basic(flow.app.client_id, flow.app.client_secret),
    )
    assert_oauth_error(answer, 400, "invalid_grant")
    return [first]


def _replay_with_a_narrower_scope(
    flow: Flow, code: str, first: dict[str, Any]
) -> list[dict[str, Any]]:
    assert flow.exchange(code, scope="pii:basic").json()["error"] == "invalid_grant"
    return [first]


def _replay_with_a_wrong_redirect_uri(
    flow: Flow, code: str, first: dict[str, Any]
) -> list[dict[str, Any]]:
    answer = flow.token(
        grant_type="authorization_code", code=code, redirect_uri="https://evil.example/cb"
    )
    assert answer.json()["error"] == "invalid_grant"
    return [first]


REPLAYS: dict[str, Callable[[Flow, str, dict[str, Any]], list[dict[str, Any]]]] = {
    "at once": _replay_at_once,
    "after a refresh": _replay_after_a_refresh,
    "with HTTP Basic": _replay_with_basic_credentials,
    "with a narrower scope": _replay_with_a_narrower_scope,
    "with a wrong redirect_uri": _replay_with_a_wrong_redirect_uri,
}


@pytest.mark.parametrize("replay", list(REPLAYS.values()), ids=list(REPLAYS))
def test_a_replayed_code_is_refused_and_revokes_what_it_issued(
    flow: Flow, replay: Callable[[Flow, str, dict[str, Any]], list[dict[str, Any]]]
) -> None:
    """RFC 6749 4.1.2: "If an authorization code is used more than once, the authorization
    server MUST deny the request and SHOULD revoke ... all tokens previously issued based on
    that authorization code" (RFC 9700 4.5)."""
    code = flow.code(SCOPES)
    first = flow.exchange(code).json()
    assert me(flow, first["access_token"]) == 200
    for issued in replay(flow, code, first):
        assert me(flow, issued["access_token"]) == 401
        assert refresh_refused(flow, issued["refresh_token"])
    assert me(flow, first["access_token"]) == 401
    assert live_grants(flow) == 0


def test_a_code_replayed_by_another_client_revokes_nothing_and_gets_nothing(
    flow: Flow, apps: Apps
) -> None:
    """A stolen spent code in another client's hands is worthless, and cannot be used by that
    client to make the victim's tokens die either."""
    code = flow.code(SCOPES)
    first = flow.exchange(code).json()
    other = apps.register(obo_scopes=SCOPES, redirect_uris=[REDIRECT])
    answer = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        auth=(other.client_id, other.client_secret),
    )
    assert_oauth_error(answer, 400, "invalid_grant")
    assert me(flow, first["access_token"]) == 200


# --- refresh token replay -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("generations", "replayed"),
    [(1, 0), (2, 0), (2, 1), (3, 1)],
    ids=["first-after-one-rotation", "first-after-two", "middle-after-two", "middle-after-three"],
)
def test_a_replayed_refresh_token_revokes_the_whole_grant(
    flow: Flow, generations: int, replayed: int
) -> None:
    """RFC 9700 2.2.2 and 4.14.2: rotation with reuse detection. Whoever presents a spent
    refresh token (the thief or the client), every token of the grant dies: the newest too."""
    chain = [flow.tokens(SCOPES)]
    for _ in range(generations):
        answer = flow.refresh(chain[-1]["refresh_token"])
        assert answer.status_code == 200, answer.text
        chain.append(answer.json())
    assert refresh_refused(flow, chain[replayed]["refresh_token"])
    newest = chain[-1]
    assert me(flow, newest["access_token"]) == 401
    assert refresh_refused(flow, newest["refresh_token"])
    assert live_grants(flow) == 0


def test_a_refresh_token_replay_leaves_the_users_other_grants_alone(
    client: TestClient, apps: Apps, engine: Engine, flow: Flow
) -> None:
    """Reuse detection kills the one grant, not the user's other applications."""
    other = Flow(
        client, engine, apps.register(obo_scopes=SCOPES, redirect_uris=[REDIRECT]), flow.user_id
    )
    theirs = other.tokens(SCOPES)
    first = flow.tokens(SCOPES)
    flow.refresh(first["refresh_token"])
    assert refresh_refused(flow, first["refresh_token"])
    assert me(other, theirs["access_token"]) == 200
    assert other.refresh(theirs["refresh_token"]).status_code == 200


# --- token confusion: one kind of credential where another is expected ----------------------


def test_a_refresh_token_is_no_access_token(flow: Flow) -> None:
    body = flow.tokens(SCOPES)
    assert me(flow, body["refresh_token"]) == 401


def test_an_access_token_is_no_refresh_token(flow: Flow) -> None:
    body = flow.tokens(SCOPES)
    assert refresh_refused(flow, body["access_token"])
    assert me(flow, body["access_token"]) == 200  # and refusing it did not revoke anything


def test_a_code_is_no_refresh_token(flow: Flow) -> None:
    code = flow.code(SCOPES)
    assert refresh_refused(flow, code)
    assert flow.exchange(code).status_code == 200


def test_a_refresh_token_is_no_code(flow: Flow) -> None:
    body = flow.tokens(SCOPES)
    assert flow.exchange(body["refresh_token"]).json()["error"] == "invalid_grant"
    assert me(flow, body["access_token"]) == 200


def test_an_access_token_is_no_client_secret(flow: Flow) -> None:
    body = flow.tokens(SCOPES)
    answer = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(flow.app.client_id, body["access_token"]),
    )
    assert_oauth_error(answer, 401, "invalid_client")


# --- PKCE downgrade ---------------------------------------------------------------------------


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _challenge_as_verifier(verifier: str, challenge: str) -> dict[str, str]:
    """As if the method were `plain`: the challenge itself sent as the verifier."""
    return {"code_verifier": challenge}


def _verifier_with_plain_method(verifier: str, challenge: str) -> dict[str, str]:
    return {"code_verifier": challenge, "code_challenge_method": "plain"}


def _too_short_verifier(verifier: str, challenge: str) -> dict[str, str]:
    return {"code_verifier": verifier[:42]}


def _verifier_with_padding(verifier: str, challenge: str) -> dict[str, str]:
    return {"code_verifier": verifier + "="}


def _verifier_of_another_code(verifier: str, challenge: str) -> dict[str, str]:
    return {"code_verifier": pkce_pair()[0]}


def _upper_cased_verifier(verifier: str, challenge: str) -> dict[str, str]:
    return {"code_verifier": verifier.swapcase()}


def _no_verifier(verifier: str, challenge: str) -> dict[str, str]:
    return {}


def _empty_verifier(verifier: str, challenge: str) -> dict[str, str]:
    return {"code_verifier": ""}


DOWNGRADES: dict[str, Callable[[str, str], dict[str, str]]] = {
    "no verifier": _no_verifier,
    "empty verifier": _empty_verifier,
    "challenge as verifier": _challenge_as_verifier,
    "challenge as verifier, method plain": _verifier_with_plain_method,
    "verifier truncated": _too_short_verifier,
    "verifier padded": _verifier_with_padding,
    "verifier of another code": _verifier_of_another_code,
    "verifier case-flipped": _upper_cased_verifier,
}


@pytest.mark.parametrize("attempt", list(DOWNGRADES.values()), ids=list(DOWNGRADES))
def test_a_code_issued_with_a_challenge_needs_its_verifier(
    flow: Flow, attempt: Callable[[str, str], dict[str, str]]
) -> None:
    """RFC 7636 4.6, RFC 9700 2.1.1 and 4.8. A failed attempt spends the code: a thief gets one
    guess, and the right verifier after it is worth nothing."""
    verifier, challenge = pkce_pair()
    code = flow.code(SCOPES, challenge=challenge)
    answer = flow.exchange(code, **attempt(verifier, challenge))
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] in ("invalid_grant", "invalid_request")
    assert tokens_issued(flow) == 0
    assert flow.exchange(code, code_verifier=verifier).status_code == 400
    assert tokens_issued(flow) == 0


def test_a_verifier_of_42_characters_is_refused_even_when_it_matches(flow: Flow) -> None:
    """RFC 7636 4.1: 43 to 128 characters; a short verifier is guessable, however it hashes."""
    verifier = "a" * 42
    code = flow.code(SCOPES, challenge=s256(verifier))
    assert flow.exchange(code, code_verifier=verifier).status_code == 400


@pytest.mark.parametrize(
    "verifier", [pkce_pair()[0], "a" * 43, "plain"], ids=["genuine", "minimal", "short"]
)
def test_a_verifier_for_a_code_issued_without_a_challenge_is_refused(
    flow: Flow, verifier: str
) -> None:
    """RFC 9700 4.8: a downgrade is recognised by a verifier the authorization request had no
    challenge for."""
    code = flow.code(SCOPES)
    assert flow.exchange(code, code_verifier=verifier).status_code == 400
    assert tokens_issued(flow) == 0


AUTHORIZE_DOWNGRADES = {
    "method plain": {"code_challenge_method": "plain"},
    "method lower-case s256": {"code_challenge_method": "s256"},
    "method omitted (RFC 7636 would default to plain)": {},
    "method unknown": {"code_challenge_method": "S512"},
    "method without challenge": {"code_challenge_method": "S256", "code_challenge": ""},
}


@pytest.mark.parametrize(
    "extra", list(AUTHORIZE_DOWNGRADES.values()), ids=list(AUTHORIZE_DOWNGRADES)
)
def test_only_s256_challenges_are_accepted(flow: Flow, extra: dict[str, str]) -> None:
    """RFC 9700 2.1.1: plain is not to be used. The request goes back to the application with
    an error, and no code."""
    _, challenge = pkce_pair()
    params = {
        "client_id": flow.app.client_id,
        "response_type": "code",
        "redirect_uri": REDIRECT,
        "scope": "pii:basic",
        "code_challenge": challenge,
        **extra,
    }
    if params["code_challenge"] == "":
        del params["code_challenge"]
    response = flow.client.get("/oauth/authorize", params=params, follow_redirects=False)
    assert response.status_code == 302
    location = response.headers["location"]
    assert location.startswith(REDIRECT + "?error=invalid_request")
    assert "code=" not in location


# --- client impersonation -------------------------------------------------------------------


def _others_credentials(flow: Flow, other: Any, code: str) -> httpx.Response:
    """Client B with B's own credentials presents A's code."""
    response: httpx.Response = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        auth=(other.client_id, other.client_secret),
    )
    return response


def _victims_id_with_others_secret(flow: Flow, other: Any, code: str) -> httpx.Response:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": flow.app.client_id,
        "client_secret": other.client_secret,
    }
    response: httpx.Response = flow.client.post("/api/oauth/token", data=form)
    return response


def _as_a_public_client(flow: Flow, other: Any, code: str) -> httpx.Response:
    """No secret at all: "I am a public client" (regdesk has none)."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": flow.app.client_id,
    }
    response: httpx.Response = flow.client.post("/api/oauth/token", data=form)
    return response


def _as_a_public_client_with_empty_basic_secret(
    flow: Flow, other: Any, code: str
) -> httpx.Response:
    response: httpx.Response = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        headers=basic(flow.app.client_id, ""),
    )
    return response


def _basic_of_one_form_of_another(flow: Flow, other: Any, code: str) -> httpx.Response:
    """Authenticated as B by HTTP Basic, claiming to be A in the form."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": flow.app.client_id,
    }
    response: httpx.Response = flow.client.post(
        "/api/oauth/token", data=form, headers=basic(other.client_id, other.client_secret)
    )
    return response


def _wrong_secret(flow: Flow, other: Any, code: str) -> httpx.Response:
    response: httpx.Response = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        auth=(flow.app.client_id, flow.app.client_secret[:-1]),
    )
    return response


def _secret_in_the_query_string(flow: Flow, other: Any, code: str) -> httpx.Response:
    """Credentials in the URL end up in logs; they authenticate nothing (RFC 6749 2.3.1)."""
    response: httpx.Response = flow.client.post(
        "/api/oauth/token",
        params={"client_id": flow.app.client_id, "client_secret": flow.app.client_secret},
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
    )
    return response


def _bearer_token_as_client_authentication(flow: Flow, other: Any, code: str) -> httpx.Response:
    """api.md 5.2: a bearer header on the token request is ignored, never authenticates (here
    a live token of the other client, which that client could get)."""
    token = Flow(flow.client, flow.engine, other, flow.user_id).tokens(SCOPES)["access_token"]
    response: httpx.Response = flow.client.post(
        "/api/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": flow.app.client_id,
        },
        headers=bearer(token),
    )
    return response


IMPERSONATIONS: dict[str, Callable[[Flow, Any, str], httpx.Response]] = {
    "another client's own credentials": _others_credentials,
    "victim's id, another client's secret": _victims_id_with_others_secret,
    "public client (no secret)": _as_a_public_client,
    "public client (empty Basic secret)": _as_a_public_client_with_empty_basic_secret,
    "Basic of one client, form client_id of another": _basic_of_one_form_of_another,
    "secret one character short": _wrong_secret,
    "secret in the query string": _secret_in_the_query_string,
    "a live bearer token instead of a secret": _bearer_token_as_client_authentication,
}


@pytest.mark.parametrize("attempt", list(IMPERSONATIONS.values()), ids=list(IMPERSONATIONS))
def test_only_the_client_a_code_was_issued_to_can_redeem_it(
    flow: Flow, apps: Apps, attempt: Callable[[Flow, Any, str], httpx.Response]
) -> None:
    """RFC 6749 4.1.3: authenticate the client and ensure the code was issued to it. No token,
    and the victim's code still works for the victim afterwards."""
    other = apps.register(obo_scopes=SCOPES, redirect_uris=[REDIRECT])
    code = flow.code(SCOPES)
    before = tokens_issued(flow)
    answer = attempt(flow, other, code)
    assert answer.status_code in (400, 401), answer.text
    assert answer.json()["error"] in ("invalid_client", "invalid_grant", "invalid_request")
    assert "access_token" not in answer.text
    assert tokens_issued(flow) == before
    assert flow.exchange(code).status_code == 200


def test_a_refresh_token_cannot_be_used_with_its_clients_id_and_another_secret(
    flow: Flow, apps: Apps
) -> None:
    other = apps.register(obo_scopes=SCOPES, redirect_uris=[REDIRECT])
    body = flow.tokens(SCOPES)
    answer = flow.client.post(
        "/api/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": body["refresh_token"],
            "client_id": flow.app.client_id,
            "client_secret": other.client_secret,
        },
    )
    assert_oauth_error(answer, 401, "invalid_client")
    assert flow.refresh(body["refresh_token"]).status_code == 200


@pytest.mark.parametrize("hint", ["access_token", "refresh_token"])
def test_another_client_cannot_revoke_a_token(flow: Flow, apps: Apps, hint: str) -> None:
    """RFC 7009 2.1: the server "verifies whether the token was issued to the client making the
    revocation request"; a stranger's revocation changes nothing."""
    other = apps.register(obo_scopes=SCOPES, redirect_uris=[REDIRECT])
    body = flow.tokens(SCOPES)
    answer = flow.client.post(
        "/api/oauth/revoke",
        data={"token": body[hint], "token_type_hint": hint},
        auth=(other.client_id, other.client_secret),
    )
    assert answer.status_code in (200, 400, 401, 403)
    assert me(flow, body["access_token"]) == 200
    assert flow.refresh(body["refresh_token"]).status_code == 200
