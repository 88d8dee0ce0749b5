"""A user's grant at the token endpoint: api.md 3.2's transitions as a table, then the rules
of decisions.md (Tokens) around codes, PKCE, refresh rotation and revocation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine, select, update

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import read_session, write_session
from regdesk.oauth.applications import set_suspended, update_application
from regdesk.oauth.grants import end_access, revoke_application
from regdesk.oauth.models import AccessToken, AuthorizationCode, Grant, RefreshToken
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.oauth.support import assert_oauth_error
from tests.oauth.user_flow import REDIRECT, Flow, make_flow, pkce_pair
from tests.web.support import make_user


@pytest.fixture
def flow(client: TestClient, apps: Apps, engine: Engine) -> Flow:
    return make_flow(client, apps, engine, service="user:read")


def me(flow: Flow, access_token: str) -> int:
    return flow.client.get("/api/users/current", headers=bearer(access_token)).status_code


def age(engine: Engine, model: type, column: str, seconds: int) -> None:
    """Move every row's `column` `seconds` into the past (time passes)."""
    with engine.begin() as connection:
        connection.execute(
            update(model).values({column: dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)})
        )


# --- api.md 3.2, one row a case ----------------------------------------------------------------


def code_issued(flow: Flow) -> None:
    """User grants access on the consent screen -> code delivered (with state)."""
    code = flow.code()
    with read_session(flow.engine) as session:
        stored = session.scalars(select(AuthorizationCode)).one()
    assert stored.code_hash != code
    assert stored.used_at is None
    assert stored.expires_at - stored.created_at == dt.timedelta(minutes=10)


def code_exchanged(flow: Flow) -> None:
    """Token request with a valid code -> access and refresh token, with scope and expires_in."""
    body = flow.exchange(flow.code("pii:basic pii:email")).json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope", "refresh_token"}
    assert body["token_type"] == "bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == "pii:basic pii:email"
    assert me(flow, body["access_token"]) == 200


def access_token_expires(flow: Flow) -> None:
    """Time passes -> expired; the refresh token is still usable."""
    body = flow.tokens()
    age(flow.engine, AccessToken, "expires_at", 1)
    answer = flow.client.get("/api/users/current", headers=bearer(body["access_token"]))
    assert answer.status_code == 401
    assert answer.json() == {"errors": {"authentication": {"message": "Token expired."}}}
    assert flow.refresh(body["refresh_token"]).status_code == 200


def refresh_rotates(flow: Flow) -> None:
    """Refresh request, not used, not revoked -> used; new access and refresh token."""
    first = flow.tokens()
    second = flow.refresh(first["refresh_token"]).json()
    assert second["refresh_token"] != first["refresh_token"]
    assert second["scope"] == first["scope"]
    assert me(flow, second["access_token"]) == 200
    with read_session(flow.engine) as session:
        consumed = session.scalars(select(RefreshToken).order_by(RefreshToken.id)).first()
    assert consumed is not None
    assert consumed.consumed_at is not None


def user_revokes(flow: Flow) -> None:
    """User revokes access -> revoked; cannot be used."""
    body = flow.tokens()
    with write_session(flow.engine) as session:
        revoke_application(session, Actor("test"), flow.user_id, flow.app.id)
    assert flow.refresh(body["refresh_token"]).json()["error"] == "invalid_grant"
    assert me(flow, body["access_token"]) == 401


def service_token_expires(flow: Flow) -> None:
    """Service token: time passes -> expired; a new one by client_credentials, no refresh."""
    body = flow.token(grant_type="client_credentials").json()
    assert "refresh_token" not in body
    age(flow.engine, AccessToken, "expires_at", 1)
    answer = flow.client.get(f"/api/v0/users/{flow.user_id}", headers=bearer(body["access_token"]))
    assert answer.json()["errors"]["authentication"]["message"] == "Token expired."
    again = flow.token(grant_type="client_credentials").json()
    assert (
        flow.client.get(
            f"/api/v0/users/{flow.user_id}", headers=bearer(again["access_token"])
        ).status_code
        == 200
    )


def refresh_never_expires_by_time(flow: Flow) -> None:
    """A refresh token does not expire until it is used or revoked."""
    body = flow.tokens()
    age(flow.engine, RefreshToken, "created_at", 400 * 86400)
    age(flow.engine, AccessToken, "expires_at", 400 * 86400)
    assert flow.refresh(body["refresh_token"]).status_code == 200


TRANSITIONS: list[Callable[[Flow], None]] = [
    code_issued,
    code_exchanged,
    access_token_expires,
    refresh_rotates,
    user_revokes,
    service_token_expires,
    refresh_never_expires_by_time,
]


@pytest.mark.parametrize("transition", TRANSITIONS, ids=lambda t: t.__name__)
def test_token_lifecycle(flow: Flow, transition: Callable[[Flow], None]) -> None:
    transition(flow)


# --- codes ------------------------------------------------------------------------------------


def test_a_code_works_once_and_its_replay_revokes_what_it_issued(flow: Flow) -> None:
    code = flow.code()
    first = flow.exchange(code).json()
    replay = flow.exchange(code)
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert me(flow, first["access_token"]) == 401
    assert flow.refresh(first["refresh_token"]).json()["error"] == "invalid_grant"
    with read_session(flow.engine) as session:
        actions = session.scalars(select(AuditEvent.action)).all()
    assert "oauth.code_replayed" in actions


@dataclass(frozen=True)
class BadExchange:
    name: str
    change: Callable[[Flow, str], dict[str, str]]


def _other_client(flow: Flow, code: str) -> dict[str, str]:
    return {"code": code}


BAD_EXCHANGES = [
    ("wrong redirect_uri", {"redirect_uri": REDIRECT + "/x"}),
    ("no redirect_uri", {"redirect_uri": ""}),
    ("unknown code", {"code": "nope"}),
    ("wider scope", {"scope": "pii:basic pii:phone"}),
]


@pytest.mark.parametrize(("name", "change"), BAD_EXCHANGES, ids=[b[0] for b in BAD_EXCHANGES])
def test_bad_exchanges_are_refused(flow: Flow, name: str, change: dict[str, str]) -> None:
    code = flow.code("pii:basic pii:email")
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    form.update(change)
    answer = flow.token(**{k: v for k, v in form.items() if v})
    assert answer.status_code == 400
    expected = "invalid_scope" if name == "wider scope" else "invalid_grant"
    assert answer.json()["error"] == expected


def test_a_code_is_bound_to_its_client(flow: Flow, apps: Apps) -> None:
    code = flow.code()
    other = apps.register(obo_scopes="pii:basic pii:email", redirect_uris=[REDIRECT])
    answer = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        auth=(other.client_id, other.client_secret),
    )
    assert answer.json()["error"] == "invalid_grant"
    # Another client's attempt does not spend it: a stolen code cannot lock its client out.
    assert flow.exchange(code).status_code == 200


def test_a_code_expires_after_ten_minutes(flow: Flow) -> None:
    code = flow.code()
    age(flow.engine, AuthorizationCode, "expires_at", 1)
    assert flow.exchange(code).json()["error"] == "invalid_grant"


def test_scope_on_the_exchange_narrows_the_tokens(flow: Flow) -> None:
    body = flow.exchange(flow.code("pii:basic pii:email"), scope="pii:basic").json()
    assert body["scope"] == "pii:basic"
    record = flow.client.get("/api/users/current", headers=bearer(body["access_token"])).json()
    assert "email" not in record
    assert flow.refresh(body["refresh_token"], scope="pii:basic pii:email").json()["error"] == (
        "invalid_scope"
    )


# --- PKCE -------------------------------------------------------------------------------------


def test_pkce_s256_round_trip(flow: Flow) -> None:
    verifier, challenge = pkce_pair()
    assert flow.exchange(flow.code(challenge=challenge), code_verifier=verifier).status_code == 200


@pytest.mark.parametrize("verifier", ["", "wrong" * 10, None], ids=["empty", "wrong", "missing"])
def test_pkce_is_enforced_once_a_challenge_was_sent(flow: Flow, verifier: str | None) -> None:
    _, challenge = pkce_pair()
    extra = {} if verifier is None else {"code_verifier": verifier}
    answer = flow.exchange(flow.code(challenge=challenge), **extra)
    assert answer.status_code == 400
    assert answer.json()["error"] in ("invalid_grant", "invalid_request")


def test_a_verifier_for_a_code_without_challenge_is_refused(flow: Flow) -> None:
    verifier, _ = pkce_pair()
    assert flow.exchange(flow.code(), code_verifier=verifier).status_code == 400


# --- refresh ----------------------------------------------------------------------------------


def test_reuse_of_a_consumed_refresh_token_revokes_the_grant(flow: Flow) -> None:
    first = flow.tokens()
    second = flow.refresh(first["refresh_token"]).json()
    reuse = flow.refresh(first["refresh_token"])
    assert reuse.json()["error"] == "invalid_grant"
    assert flow.refresh(second["refresh_token"]).json()["error"] == "invalid_grant"
    assert me(flow, second["access_token"]) == 401
    with read_session(flow.engine) as session:
        grant = session.scalars(select(Grant)).one()
        actions = session.scalars(select(AuditEvent.action)).all()
    assert grant.revoked_reason == "refresh_token_reused"
    assert "oauth.refresh_token_reused" in actions


def test_refresh_narrows_and_removed_scopes_stay_removed(flow: Flow) -> None:
    first = flow.tokens("pii:basic pii:email")
    narrow = flow.refresh(first["refresh_token"], scope="pii:basic").json()
    assert narrow["scope"] == "pii:basic"
    widen = flow.refresh(narrow["refresh_token"], scope="pii:basic pii:email")
    assert widen.json()["error"] == "invalid_scope"
    # The refused widening consumed nothing: the token still refreshes, and stays narrow.
    again = flow.refresh(narrow["refresh_token"]).json()
    assert again["scope"] == "pii:basic"


def test_a_refresh_token_is_bound_to_its_client(flow: Flow, apps: Apps) -> None:
    body = flow.tokens()
    other = apps.register(obo_scopes="pii:basic")
    answer = flow.client.post(
        "/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]},
        auth=(other.client_id, other.client_secret),
    )
    assert answer.json()["error"] == "invalid_grant"


def test_changed_application_scopes_force_a_new_authorization(flow: Flow) -> None:
    body = flow.tokens()
    with write_session(flow.engine) as session:
        update_application(
            session, Actor("test"), flow.app.id, obo_scopes="pii:basic pii:email pii:address"
        )
    answer = flow.refresh(body["refresh_token"])
    assert answer.json()["error"] == "invalid_grant"
    assert "authorize again" in answer.json()["error_description"]


def test_a_suspended_application_cannot_refresh(flow: Flow) -> None:
    body = flow.tokens()
    with write_session(flow.engine) as session:
        set_suspended(session, Actor("test"), flow.app.id, True)
    answer = flow.refresh(body["refresh_token"])
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"


def test_an_idle_timeout_when_configured(flow: Flow, database_url: str) -> None:
    from regdesk.app import create_app
    from regdesk.config import load_settings

    body = flow.tokens()
    age(flow.engine, RefreshToken, "created_at", 7200)
    strict = create_app(load_settings(database_url=database_url, refresh_token_idle_ttl=3600))
    with TestClient(strict, base_url="https://testserver") as other:
        answer = other.post(
            "/api/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]},
            auth=(flow.app.client_id, flow.app.client_secret),
        )
    assert answer.json()["error"] == "invalid_grant"


# --- revocation, introspection, metadata -------------------------------------------------------


def test_ending_an_applications_access_ends_every_users_grants_and_codes(
    flow: Flow, apps: Apps
) -> None:
    """end_access(application_id=...), as a suspension calls it: every user's grants, tokens
    and unredeemed codes with that application end; the same user's other application keeps
    its own."""
    owl = Flow(flow.client, flow.engine, flow.app, make_user(flow.engine, "owl", password=None))
    other = apps.register(obo_scopes="pii:basic pii:email", redirect_uris=[REDIRECT])
    elsewhere = Flow(flow.client, flow.engine, other, flow.user_id)
    ended = [(f, f.tokens(), f.code()) for f in (flow, owl)]
    kept, kept_code = elsewhere.tokens(), elsewhere.code()
    unknown = flow.exchange("no-such-code").json()

    with write_session(flow.engine) as session:
        revoked = end_access(session, reason="application_suspended", application_id=flow.app.id)

    assert len(revoked) == 2
    for each, tokens, code in ended:
        assert me(each, tokens["access_token"]) == 401
        assert_oauth_error(each.refresh(tokens["refresh_token"]), 400, "invalid_grant")
        refused = each.exchange(code)
        assert_oauth_error(refused, 400, "invalid_grant")
        assert refused.json() == unknown  # as if it had never been issued
    assert me(elsewhere, kept["access_token"]) == 200
    assert elsewhere.exchange(kept_code).status_code == 200
    with read_session(flow.engine) as session:
        reasons = session.scalars(select(Grant.revoked_reason).where(Grant.id.in_(revoked)))
        assert set(reasons) == {"application_suspended"}


def test_ending_a_users_access_spares_other_users(flow: Flow) -> None:
    """end_access(user_id=...), as a password reset calls it."""
    owl = Flow(flow.client, flow.engine, flow.app, make_user(flow.engine, "owl", password=None))
    fox_tokens, fox_code = flow.tokens(), flow.code()
    owl_tokens, owl_code = owl.tokens(), owl.code()
    with write_session(flow.engine) as session:
        assert len(end_access(session, reason="password_reset", user_id=flow.user_id)) == 1
    assert me(flow, fox_tokens["access_token"]) == 401
    assert_oauth_error(flow.exchange(fox_code), 400, "invalid_grant")
    assert me(owl, owl_tokens["access_token"]) == 200
    assert owl.exchange(owl_code).status_code == 200


def test_ending_access_needs_a_user_or_an_application(engine: Engine) -> None:
    """Neither given would mean everyone's access: refused rather than guessed."""
    with write_session(engine) as session, pytest.raises(ValueError, match="user_id"):
        end_access(session, reason="oops")


def test_revoking_a_refresh_token_kills_its_grant(flow: Flow) -> None:
    body = flow.tokens()
    answer = flow.client.post(
        "/api/oauth/revoke",
        data={"token": body["refresh_token"], "token_type_hint": "refresh_token"},
        auth=(flow.app.client_id, flow.app.client_secret),
    )
    assert answer.status_code == 200
    assert me(flow, body["access_token"]) == 401
    assert flow.refresh(body["refresh_token"]).json()["error"] == "invalid_grant"


def test_revoking_an_access_token_leaves_the_refresh_token(flow: Flow) -> None:
    body = flow.tokens()
    flow.client.post(
        "/api/oauth/revoke",
        data={"token": body["access_token"]},
        auth=(flow.app.client_id, flow.app.client_secret),
    )
    assert me(flow, body["access_token"]) == 401
    assert flow.refresh(body["refresh_token"]).status_code == 200


def test_revoking_an_unknown_token_is_fine_but_needs_client_auth(flow: Flow) -> None:
    auth = (flow.app.client_id, flow.app.client_secret)
    assert flow.client.post("/api/oauth/revoke", data={"token": "x"}, auth=auth).status_code == 200
    refused = flow.client.post("/api/oauth/revoke", data={"token": "x"}, auth=("1", "nope"))
    assert refused.status_code == 401


def test_an_unknown_token_type_hint_is_a_400_with_its_description(flow: Flow) -> None:
    """RFC 7009 2.2.1 and decisions.md: an RFC 6749 5.2 error, 400 (401 is for invalid_client)."""
    auth = (flow.app.client_id, flow.app.client_secret)
    for endpoint in ("/api/oauth/revoke", "/api/oauth/introspect"):
        answer = flow.client.post(
            endpoint, data={"token": "x", "token_type_hint": "id_token"}, auth=auth
        )
        assert_oauth_error(answer, 400, "unsupported_token_type")


def test_introspection_for_the_tokens_own_client(flow: Flow, apps: Apps) -> None:
    body = flow.tokens()
    auth = (flow.app.client_id, flow.app.client_secret)
    active = flow.client.post(
        "/api/oauth/introspect", data={"token": body["access_token"]}, auth=auth
    ).json()
    assert active["active"] is True
    assert active["scope"] == "pii:basic pii:email"
    assert active["client_id"] == flow.app.client_id
    assert active["sub"] == str(flow.user_id)
    other = apps.register(obo_scopes="pii:basic")
    foreign = flow.client.post(
        "/api/oauth/introspect",
        data={"token": body["access_token"]},
        auth=(other.client_id, other.client_secret),
    ).json()
    assert foreign == {"active": False}
    flow.refresh(body["refresh_token"])
    spent = flow.client.post(
        "/api/oauth/introspect", data={"token": body["refresh_token"]}, auth=auth
    ).json()
    assert spent == {"active": False}


def test_metadata_describes_the_server(client: TestClient) -> None:
    document = client.get("/.well-known/oauth-authorization-server").json()
    assert document["issuer"] == "https://testserver"
    assert document["token_endpoint"] == "https://testserver/api/oauth/token"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert set(document["grant_types_supported"]) == {
        "authorization_code",
        "refresh_token",
        "client_credentials",
    }
