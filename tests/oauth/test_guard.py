"""The bearer guard in front of every API route (api.md 5; decisions.md, Scopes and Errors).

No live token: 401 `Invalid token.` or `Token expired.`, the messages real clients look for.
A live token without the route's scope: 403 naming it. Both with RFC 6750 challenges.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

import httpx
from sqlalchemy import Engine, delete, insert, update

from regdesk.audit.service import Actor
from regdesk.db import utcnow, write_session
from regdesk.oauth import tokens
from regdesk.oauth.applications import set_suspended, update_application
from regdesk.oauth.models import AccessToken, Grant, UserPermission
from regdesk.users.service import NewUser, create_user
from tests.client import TestClient
from tests.conftest import Apps, Registered, bearer
from tests.oauth.support import TOKEN_URL, assert_insufficient_scope, assert_invalid_token, basic

Headers = Mapping[str, str | bytes]
USER_READ = "user:read"
VOLUNTEER_READ = "volunteer:read"


def add_user(engine: Engine, username: str, permissions: tuple[str, ...] = ()) -> int:
    with write_session(engine) as session:
        user = create_user(
            session,
            Actor("test"),
            NewUser(
                username=username,
                email=f"{username}@example.org",
                first_name="Sam",
                last_name="Doe",
                permissions=permissions,
            ),
        )
        return user.id


def service_token(client: TestClient, app: Registered) -> str:
    response = client.post(
        TOKEN_URL,
        data={"grant_type": "client_credentials"},
        headers=basic(app.client_id, app.client_secret),
    )
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


def volunteer_routes(
    client: TestClient, user_id: int
) -> dict[str, Callable[[Headers], httpx.Response]]:
    """Every volunteer:read route, called with the given headers."""
    return {
        "volunteer search": lambda headers: client.post(
            "/api/v0/volunteers/search", json={}, headers=headers
        ),
        "departments": lambda headers: client.get(
            "/api/v0/volunteers/departments", headers=headers
        ),
        "a user's volunteer record": lambda headers: client.get(
            f"/api/v0/users/{user_id}/volunteer", headers=headers
        ),
    }


def get_user(client: TestClient, user_id: int | str, headers: Headers) -> httpx.Response:
    return client.get(f"/api/v0/users/{user_id}", headers=headers)


def expire(engine: Engine, token: str) -> None:
    with write_session(engine) as session:
        session.execute(
            update(AccessToken)
            .where(AccessToken.token_hash == tokens.token_key(token))
            .values(expires_at=utcnow() - dt.timedelta(seconds=1))
        )


# --- no live token -------------------------------------------------------------------------


def test_anything_but_a_live_token_is_401_invalid_token(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    user_id = add_user(engine, "sam")
    token = apps.service_token(USER_READ)
    assert get_user(client, user_id, bearer(token)).status_code == 200
    for scheme in ("bearer", "BEARER"):  # RFC 7235: the scheme is case-insensitive
        assert get_user(client, user_id, {"Authorization": f"{scheme} {token}"}).status_code == 200

    refused: dict[str, Headers] = {
        "no Authorization header": {},
        "Bearer and nothing": {"Authorization": "Bearer"},
        "Bearer and blanks": {"Authorization": "Bearer    "},
        "Basic credentials": basic("1", "a-client-secret-of-some-kind"),
        "the Discord bot's first token": bearer("invalid"),
        "600 characters of garbage": bearer("x" * 600),
        "400 characters of garbage": bearer("y" * 400),
        "the token in another case": bearer(token.swapcase()),
        "the token twice": bearer(f"{token} {token}"),
        "the token cut short": bearer(token[:-1]),
        "the token without a scheme": {"Authorization": token},
        "another scheme": {"Authorization": f"Token {token}"},
        "bytes that are not UTF-8": {"Authorization": b"Bearer \xe9\xff"},
    }
    for label, headers in refused.items():
        for response in (
            get_user(client, user_id, headers),
            # The guard answers first: no 404 for an unknown id, no 400 for a bad body.
            get_user(client, 999, headers),
            get_user(client, "abc", headers),
            client.post("/api/v0/users/search", json={"limit": 0}, headers=headers),
            client.post("/api/v0/volunteers/search", json={"nextPage": "x"}, headers=headers),
        ):
            assert response.status_code == 401, f"{label}: {response.request.url} {response.text}"
            assert_invalid_token(response)
    # RFC 6750 2.3 (a token in the URI) is not offered.
    assert_invalid_token(client.get(f"/api/v0/users/{user_id}?access_token={token}"))


def test_expired_token_is_401_token_expired(client: TestClient, engine: Engine, apps: Apps) -> None:
    user_id = add_user(engine, "sam")
    app = apps.register(service_scopes=USER_READ)
    token = apps.mint(app, USER_READ)
    assert get_user(client, user_id, bearer(token)).status_code == 200
    expire(engine, token)
    response = get_user(client, user_id, bearer(token))
    assert_invalid_token(response, "Token expired.")
    # Expiry is told before the scope is looked at: the client knows to get a new token.
    response = client.post("/api/v0/volunteers/search", json={}, headers=bearer(token))
    assert_invalid_token(response, "Token expired.")
    assert "expired" in response.headers["www-authenticate"]


def test_suspension_stops_tokens_at_once_and_for_good(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    user_id = add_user(engine, "sam")
    app = apps.register(service_scopes=USER_READ)
    token = service_token(client, app)
    app_id = app.id
    assert get_user(client, user_id, bearer(token)).status_code == 200
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), app_id, True)
    assert_invalid_token(get_user(client, user_id, bearer(token)))
    # Reinstated (decisions.md, Scopes): the application starts anew, its old token stays dead.
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), app_id, False)
    assert_invalid_token(get_user(client, user_id, bearer(token)))
    assert get_user(client, user_id, bearer(service_token(client, app))).status_code == 200

    # An expired token of a suspended application is simply not a live token.
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), app_id, True)
    expire(engine, token)
    assert_invalid_token(get_user(client, user_id, bearer(token)))


# --- a live token without the scope --------------------------------------------------------


def test_a_live_token_without_the_routes_scope_is_403(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    user_id = add_user(engine, "sam")
    users_only = apps.service_token(USER_READ)
    volunteers_only = apps.service_token(VOLUNTEER_READ)
    registrations_only = apps.service_token("registration:read")

    for label, call in volunteer_routes(client, user_id).items():
        for token in (users_only, registrations_only):
            assert_insufficient_scope(call(bearer(token)), VOLUNTEER_READ)
        assert call(bearer(volunteers_only)).status_code in (200, 404), label
    for token in (volunteers_only, registrations_only):
        assert_insufficient_scope(get_user(client, user_id, bearer(token)), USER_READ)
        # 403 comes before the body is looked at.
        response = client.post("/api/v0/users/search", json={"limit": 0}, headers=bearer(token))
        assert_insufficient_scope(response, USER_READ)
    response = client.put(
        f"/api/v0/users/{user_id}/roles/1", json={"scope": "convention"}, headers=bearer(users_only)
    )
    assert_insufficient_scope(response, "user:roles:update")


def test_a_scope_removed_from_the_application_stops_working_at_once(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    user_id = add_user(engine, "sam")
    app = apps.register(service_scopes=f"{USER_READ} {VOLUNTEER_READ}")
    token = service_token(client, app)
    calls = volunteer_routes(client, user_id)
    assert all(call(bearer(token)).status_code in (200, 404) for call in calls.values())

    with write_session(engine) as session:
        update_application(session, Actor("test"), app.id, service_scopes=USER_READ)
    for call in calls.values():
        assert_insufficient_scope(call(bearer(token)), VOLUNTEER_READ)
    assert get_user(client, user_id, bearer(token)).status_code == 200

    # Given back, the scope is the application's again, but not this token's (decisions.md).
    with write_session(engine) as session:
        scopes = f"{USER_READ} {VOLUNTEER_READ}"
        update_application(session, Actor("test"), app.id, service_scopes=scopes)
    for call in calls.values():
        assert_insufficient_scope(call(bearer(token)), VOLUNTEER_READ)
    fresh = service_token(client, app)
    assert all(call(bearer(fresh)).status_code in (200, 404) for call in calls.values())


# --- a user's (OBO) token ------------------------------------------------------------------


def test_a_users_token_keeps_a_sensitive_scope_only_while_the_user_holds_it(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    target = add_user(engine, "target")
    app = apps.register(obo_scopes=f"pii:basic {USER_READ}", redirect_uris=["https://x.example/cb"])
    for permission in (USER_READ, "admin"):
        holder = add_user(engine, f"holder-{permission.replace(':', '-')}")
        # Granted while the holder held the permission; then it was taken away.
        with write_session(engine) as session:
            session.execute(insert(UserPermission).values(user_id=holder, name=permission))
        token = apps.mint(app, f"pii:basic {USER_READ}", user_id=holder)
        basic_only = apps.mint(app, "pii:basic", user_id=holder)
        with write_session(engine) as session:
            session.execute(delete(UserPermission).where(UserPermission.user_id == holder))

        # Without the permission the sensitive scope does not count.
        assert_insufficient_scope(get_user(client, target, bearer(token)), USER_READ)
        with write_session(engine) as session:
            session.execute(insert(UserPermission).values(user_id=holder, name=permission))
        assert get_user(client, target, bearer(token)).status_code == 200, permission
        # The permission does not add a scope the token was not issued with.
        assert_insufficient_scope(get_user(client, target, bearer(basic_only)), USER_READ)

        # The permission taken away: the scope stops counting at once.
        with write_session(engine) as session:
            session.execute(delete(UserPermission).where(UserPermission.user_id == holder))
        assert_insufficient_scope(get_user(client, target, bearer(token)), USER_READ)
        with write_session(engine) as session:
            session.execute(insert(UserPermission).values(user_id=holder, name=permission))
        assert get_user(client, target, bearer(token)).status_code == 200, permission

        # The user revokes the application: the grant and every token of it die.
        with write_session(engine) as session:
            session.execute(
                update(Grant).where(Grant.user_id == holder).values(revoked_at=utcnow())
            )
        assert_invalid_token(get_user(client, target, bearer(token)))
        assert_invalid_token(get_user(client, target, bearer(basic_only)))


def test_a_users_token_cannot_use_a_scope_the_application_lost(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    target = add_user(engine, "target")
    holder = add_user(engine, "holder", permissions=("admin",))
    app = apps.register(obo_scopes=f"pii:basic {USER_READ}", redirect_uris=["https://x.example/cb"])
    token = apps.mint(app, f"pii:basic {USER_READ}", user_id=holder)
    assert get_user(client, target, bearer(token)).status_code == 200
    with write_session(engine) as session:
        update_application(session, Actor("test"), app.id, obo_scopes="pii:basic")
    assert_insufficient_scope(get_user(client, target, bearer(token)), USER_READ)


# --- cookies -------------------------------------------------------------------------------


def test_cookies_play_no_part(client: TestClient, engine: Engine, apps: Apps) -> None:
    user_id = add_user(engine, "sam")
    token = service_token(client, apps.register(service_scopes=USER_READ))
    for name in ("session", "regdesk_session", "access_token", "Authorization"):
        client.cookies.set(name, token)
    assert client.get("/").status_code == 200
    assert_invalid_token(get_user(client, user_id, {}))
    assert_invalid_token(get_user(client, user_id, {"X-CSRF-Token": "a-csrf-token"}))
    assert get_user(client, user_id, bearer(token)).status_code == 200


def test_what_the_guard_keeps_of_tokens_is_bounded() -> None:
    """The guard keeps what a token's row means (its scopes, parsed, less cutoffs), keyed by
    the row's text; a stream of new tokens must not make that grow without end."""
    start = dt.datetime(2026, 1, 1)
    for second in range(2 * tokens._POWERS_KEPT):
        tokens._powers("user:read", start + dt.timedelta(seconds=second), "user:read", "{}", None)
    assert tokens._powers.cache_info().currsize <= tokens._POWERS_KEPT
