"""The token endpoint's engine: Authlib's AuthorizationServer, adapted to our ASGI app.

The adapter is thin: the route reads the form once, keeping every value of a repeated field,
and hands it over as a `TokenRequest`; Authlib authenticates the client and runs the grant;
our hooks load clients and store tokens through the request's database session. A server is
made per request because Authlib's `query_client(client_id)` hook receives no request, so the
server itself must carry the session.

The grants are Authlib's, with our rules where they differ (decisions.md, Scopes and Tokens):
- client_credentials checks the requested scopes against the registry and the application's
  approved scopes; an omitted scope means every approved scope.
- authorization_code consumes the code atomically when it is looked up, so a code is redeemed
  once whatever the concurrency; a second redemption revokes the grant the first one made.
  PKCE is Authlib's CodeChallenge. `scope` on the exchange may narrow the grant.
- refresh_token consumes the presented token with one conditional UPDATE (`consumed_at IS
  NULL`), so of two concurrent refreshes exactly one wins on any number of processes; the
  loser, like any later presentation of a consumed token, revokes the whole grant.
Tokens are random strings made by `_generate_token`; `save_token` writes their hashes with the
rows the grant needs, in the request's transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    OAuth2Payload,
    OAuth2Request,
    RefreshTokenGrant,
)
from authlib.oauth2.rfc6749.errors import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
)
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from sqlalchemy import CursorResult, insert, select, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import naive_utc, utcnow
from regdesk.oauth.clients import TOKEN_ENDPOINT_AUTH_METHODS, OAuthClient, load_client
from regdesk.oauth.grants import revoke_grants
from regdesk.oauth.models import (
    AccessToken,
    Application,
    AuthorizationCode,
    Grant,
    RefreshToken,
    UserPermission,
)
from regdesk.oauth.scopes import (
    SCOPES,
    ScopeError,
    check_service_scopes,
    format_scopes,
    parse_scopes,
)
from regdesk.oauth.tokens import ended_by_suspension, token_scopes
from regdesk.security import new_secret, token_hash
from regdesk.users.models import User

# Authlib logs issued tokens at DEBUG ("Issue token %r"): never let that reach a handler.
logging.getLogger("authlib").setLevel(logging.INFO)


def error_description(text: str, limit: int = 200) -> str:
    """Text fit for `error_description`: RFC 6749 5.2 allows printable ASCII less `"` and `\\`
    (Authlib raises on anything else), and a client's input echoed in it may hold anything."""
    safe = "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text)
    return safe if len(safe) <= limit else safe[: limit - 3] + "..."


class FormPayload(OAuth2Payload):  # type: ignore[misc]
    """The token request's fields. `scope` may be sent repeated (decisions.md): all its values
    count, joined by spaces; any other field sent twice is refused before we get here."""

    def __init__(self, fields: Mapping[str, Sequence[str]]) -> None:
        self._datalist = defaultdict(list, {k: list(v) for k, v in fields.items()})
        self._data = {
            key: " ".join(values) if key == "scope" else values[-1]
            for key, values in fields.items()
        }

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist


class TokenRequest(OAuth2Request):  # type: ignore[misc]
    def __init__(
        self, uri: str, headers: Mapping[str, str], fields: Mapping[str, Sequence[str]]
    ) -> None:
        # Starlette's Headers: Authlib looks up "Authorization" and needs case-insensitivity.
        super().__init__(method="POST", uri=uri, headers=headers)
        self.payload = FormPayload(fields)

    @property
    def form(self) -> dict[str, str]:
        fields: dict[str, str] = self.payload.data
        return fields


class ServiceIntegrationGrant(ClientCredentialsGrant):  # type: ignore[misc]
    """client_credentials (api.md 4.2, 5.2) with decisions.md's scope rules."""

    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(TOKEN_ENDPOINT_AUTH_METHODS)

    def validate_requested_scope(self) -> None:
        client: OAuthClient = self.request.client
        try:
            check_service_scopes(
                parse_scopes(self.request.payload.scope), client.application.service_scopes
            )
        except ScopeError as exc:
            raise InvalidScopeError(description=error_description(f"{exc}.")) from None


# --- authorization_code ----------------------------------------------------------------------


@dataclass(frozen=True)
class RedeemedCode:
    """An authorization code just consumed: Authlib's AuthorizationCodeMixin."""

    row: AuthorizationCode

    def get_redirect_uri(self) -> str:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return self.row.scope


class Pkce(CodeChallenge):  # type: ignore[misc]
    """RFC 7636, S256 only; enforced once a challenge was sent (decisions.md, Tokens)."""

    SUPPORTED_CODE_CHALLENGE_METHOD: ClassVar[list[str]] = ["S256"]

    def get_authorization_code_challenge(self, code: RedeemedCode) -> str | None:
        return code.row.code_challenge

    def get_authorization_code_challenge_method(self, code: RedeemedCode) -> str | None:
        return code.row.code_challenge_method


class UserAuthorizationGrant(AuthorizationCodeGrant):  # type: ignore[misc]
    """api.md 4.2, grant type authorization_code. The authorization side is in
    oauth/authorization.py; this is the exchange at the token endpoint."""

    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(TOKEN_ENDPOINT_AUTH_METHODS)

    @property
    def session(self) -> Session:
        return cast(RegdeskAuthorizationServer, self.server).session

    def query_authorization_code(self, code: str, client: OAuthClient) -> RedeemedCode | None:
        row = self.session.scalars(
            select(AuthorizationCode).where(AuthorizationCode.code_hash == token_hash(code))
        ).first()
        if row is None or row.application_id != client.id:
            return None
        now = utcnow()
        consumed = self.session.execute(
            update(AuthorizationCode)
            .where(AuthorizationCode.id == row.id, AuthorizationCode.used_at.is_(None))
            .values(used_at=now)
        )
        if not cast(CursorResult[Any], consumed).rowcount:
            self._replayed(row)
            return None
        if row.expires_at <= now:
            return None
        return RedeemedCode(row)

    def _replayed(self, row: AuthorizationCode) -> None:
        """RFC 6749 4.1.2: a code used twice revokes what it issued."""
        revoked = revoke_grants(self.session, Grant.id == row.grant_id, "code_replayed")
        record_event(
            self.session,
            Actor(label=f"app:{row.application_id}"),
            "oauth.code_replayed",
            target_type="application",
            target_id=row.application_id,
            details={"grants_revoked": len(revoked)},
        )

    def delete_authorization_code(self, code: RedeemedCode) -> None:
        """Kept, marked used, so that a replay is recognised; `tokens purge` removes it."""

    def authenticate_user(self, code: RedeemedCode) -> User | None:
        return self.session.get(User, code.row.user_id)

    def create_token_response(self) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        # As Authlib's, but `scope` on the exchange may narrow the grant (decisions.md).
        code: RedeemedCode = self.request.authorization_code
        user = self.authenticate_user(code)
        if user is None:
            raise InvalidGrantError("There is no user for this code.")
        self.request.user = user
        granted = parse_scopes(code.get_scope())
        requested = parse_scopes(self.request.payload.scope)
        if not set(requested) <= set(granted):
            raise InvalidScopeError(description="The scope goes beyond what the user granted.")
        token = self.generate_token(
            user=user, scope=format_scopes(requested or granted), include_refresh_token=True
        )
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


# --- refresh_token ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PresentedRefreshToken:
    """A refresh token, consumed by this request: Authlib's credential for the grant."""

    row: RefreshToken
    grant: Grant

    def get_scope(self) -> str:
        return self.row.scope

    def check_client(self, client: OAuthClient) -> bool:
        return self.grant.application_id == client.id


class UserRefreshGrant(RefreshTokenGrant):  # type: ignore[misc]
    """api.md 3.2 and 4.2: rotation, reuse detection, narrowing scopes."""

    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(TOKEN_ENDPOINT_AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True

    @property
    def server_(self) -> RegdeskAuthorizationServer:
        return cast(RegdeskAuthorizationServer, self.server)

    def validate_token_request(self) -> None:
        client = self._validate_request_client()
        self.request.client = client
        presented = self.request.form.get("refresh_token")
        if not presented:
            raise InvalidRequestError("The parameter 'refresh_token' is missing.")
        credential = self._live_credential(presented, client)
        self._validate_token_scope(credential)
        self._consume(credential)
        self.request.refresh_token = credential

    def _live_credential(self, presented: str, client: OAuthClient) -> PresentedRefreshToken:
        session = self.server_.session
        digest = token_hash(presented)
        grant_id = session.scalar(
            select(RefreshToken.grant_id).where(RefreshToken.token_hash == digest)
        )
        if grant_id is None:
            raise InvalidGrantError("The refresh token is invalid.")
        # One lock order for everything that touches a grant: the grant's row first, then its
        # tokens (revocation does the same). Concurrent refreshes of one grant wait here in
        # turn instead of deadlocking on each other's token rows. SQLite: its write lock.
        session.execute(select(Grant.id).where(Grant.id == grant_id).with_for_update())
        found = session.execute(
            select(RefreshToken, Grant, Application.scopes_version)
            .join(Grant, Grant.id == RefreshToken.grant_id)
            .join(Application, Application.id == Grant.application_id)
            .where(RefreshToken.token_hash == digest)
        ).first()
        if found is None or found[1].application_id != client.id:
            raise InvalidGrantError("The refresh token is invalid.")
        row, grant, scopes_version = found
        credential = PresentedRefreshToken(row, grant)
        if row.consumed_at is not None:
            self._reused(credential)
        if row.revoked_at is not None or grant.revoked_at is not None:
            raise InvalidGrantError("The refresh token was revoked.")
        if grant.app_scopes_version != scopes_version:  # api.md 5.1.5
            raise InvalidGrantError("The application's permissions changed: authorize again.")
        idle = self.server_.refresh_token_idle_ttl
        last_use = row.created_at
        if idle and last_use < utcnow() - dt.timedelta(seconds=idle):
            raise InvalidGrantError("The refresh token lay unused too long: authorize again.")
        return credential

    def _consume(self, credential: PresentedRefreshToken) -> None:
        consumed = self.server_.session.execute(
            update(RefreshToken)
            .where(
                RefreshToken.id == credential.row.id,
                RefreshToken.consumed_at.is_(None),
                RefreshToken.revoked_at.is_(None),
            )
            .values(consumed_at=utcnow())
        )
        if not cast(CursorResult[Any], consumed).rowcount:
            self._reused(credential)  # another request consumed it first

    def _reused(self, credential: PresentedRefreshToken) -> None:
        """A consumed refresh token came back: someone holds a copy. Kill the grant."""
        session = self.server_.session
        revoke_grants(session, Grant.id == credential.grant.id, "refresh_token_reused")
        record_event(
            session,
            Actor(label=f"app:{credential.grant.application_id}", user_id=credential.grant.user_id),
            "oauth.refresh_token_reused",
            target_type="grant",
            target_id=credential.grant.id,
        )
        raise InvalidGrantError("The refresh token was already used; the grant is revoked.")

    def authenticate_user(self, credential: PresentedRefreshToken) -> User | None:
        return self.server_.session.get(User, credential.grant.user_id)

    def revoke_old_credential(self, credential: PresentedRefreshToken) -> None:
        """Already consumed, atomically, in validate_token_request."""


# --- revocation (RFC 7009) and introspection (RFC 7662) --------------------------------------


@dataclass(frozen=True)
class KnownToken:
    """An access or refresh token found by its hash, as the endpoints below see it."""

    kind: str  # "access_token" or "refresh_token"
    id: int
    application_id: int
    user_id: int | None
    grant_id: int | None
    scope: str
    expires_at: dt.datetime | None
    revoked: bool

    def check_client(self, client: OAuthClient) -> bool:
        return self.application_id == client.id

    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= utcnow()

    def is_revoked(self) -> bool:
        return self.revoked


def find_token(session: Session, value: str, hint: str | None) -> KnownToken | None:
    """The access or refresh token a revocation or introspection request names, with the
    powers it has now: as the bearer guard sees an access token (oauth/tokens.py), and a
    refresh token dead once its grant could no longer refresh."""
    digest = token_hash(value)
    lookups = [_access_token, _refresh_token]
    if hint == "refresh_token":
        lookups.reverse()
    for lookup in lookups:
        if (found := lookup(session, digest)) is not None:
            return found
    return None


def _access_token(session: Session, digest: str) -> KnownToken | None:
    found = session.execute(
        select(AccessToken, Application, Grant.revoked_at)
        .join(Application, Application.id == AccessToken.application_id)
        .outerjoin(Grant, Grant.id == AccessToken.grant_id)
        .where(AccessToken.token_hash == digest)
    ).first()
    if found is None:
        return None
    access, application, grant_revoked_at = found
    issued = naive_utc(access.created_at)
    user_id = access.user_id
    scopes = token_scopes(
        parse_scopes(access.scope),
        issued,
        allowed=application.service_scopes if user_id is None else application.obo_scopes,
        cutoffs=application.scope_cutoffs,
        user_permissions=None if user_id is None else lambda: _permissions(session, user_id),
    )
    dead = (
        access.revoked_at is not None
        or grant_revoked_at is not None
        or ended_by_suspension(issued, application.tokens_valid_after)
    )
    return KnownToken(
        "access_token",
        access.id,
        access.application_id,
        access.user_id,
        access.grant_id,
        format_scopes([scope for scope in parse_scopes(access.scope) if scope in scopes]),
        access.expires_at,
        dead,
    )


def _permissions(session: Session, user_id: int) -> set[str]:
    return set(
        session.scalars(select(UserPermission.name).where(UserPermission.user_id == user_id))
    )


def _refresh_token(session: Session, digest: str) -> KnownToken | None:
    found = session.execute(
        select(RefreshToken, Grant, Application.scopes_version)
        .join(Grant, Grant.id == RefreshToken.grant_id)
        .join(Application, Application.id == Grant.application_id)
        .where(RefreshToken.token_hash == digest)
    ).first()
    if found is None:
        return None
    row, grant, scopes_version = found
    dead = (
        row.revoked_at is not None
        or row.consumed_at is not None
        or grant.revoked_at is not None
        or grant.app_scopes_version != scopes_version  # it would no longer refresh (api.md 5.1.5)
    )
    return KnownToken(
        "refresh_token",
        row.id,
        grant.application_id,
        grant.user_id,
        grant.id,
        row.scope,
        None,
        dead,
    )


class Revocation(RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS: ClassVar[list[str]] = list(TOKEN_ENDPOINT_AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> KnownToken | None:
        return find_token(
            cast(RegdeskAuthorizationServer, self.server).session, token_string, token_type_hint
        )

    def revoke_token(self, token: KnownToken, request: OAuth2Request) -> None:
        """An access token dies alone; a refresh token takes its whole grant with it
        (RFC 7009 2.1: its access tokens SHOULD go too)."""
        session = cast(RegdeskAuthorizationServer, self.server).session
        if token.kind == "refresh_token" and token.grant_id is not None:
            revoke_grants(session, Grant.id == token.grant_id, "revoked_by_client")
        else:
            session.execute(
                update(AccessToken)
                .where(AccessToken.id == token.id, AccessToken.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
        record_event(
            session,
            Actor(label=f"app:{token.application_id}"),
            "oauth.token_revoked",
            target_type="application",
            target_id=token.application_id,
            details={"kind": token.kind},
        )


class Introspection(IntrospectionEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS: ClassVar[list[str]] = list(TOKEN_ENDPOINT_AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> KnownToken | None:
        return find_token(
            cast(RegdeskAuthorizationServer, self.server).session, token_string, token_type_hint
        )

    def check_permission(
        self, token: KnownToken, client: OAuthClient, request: OAuth2Request
    ) -> bool:
        return token.check_client(client)  # decisions.md: for the token's own client

    def introspect_token(self, token: KnownToken) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "active": True,
            "client_id": str(token.application_id),
            "scope": token.scope,
            "token_type": "bearer" if token.kind == "access_token" else "refresh_token",
            "iss": cast(RegdeskAuthorizationServer, self.server).issuer,
        }
        if token.user_id is not None:
            payload["sub"] = str(token.user_id)
        if token.expires_at is not None:
            payload["exp"] = int(token.expires_at.timestamp())
        return payload


# --- the server ------------------------------------------------------------------------------


class RegdeskAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's server over one request: `client` is the client that request authenticated
    (oauth/routes.py, before anything ran), or None, and then `client_refusal` says why."""

    def __init__(
        self,
        session: Session,
        *,
        client: OAuthClient | None,
        client_refusal: str,
        access_token_ttl: int,
        refresh_token_idle_ttl: int = 0,
        issuer: str = "",
    ) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.session = session
        self.client = client
        self.client_refusal = client_refusal
        self.access_token_ttl = access_token_ttl
        self.refresh_token_idle_ttl = refresh_token_idle_ttl
        self.issuer = issuer
        self.register_token_generator("default", self._generate_token)
        self.register_grant(ServiceIntegrationGrant)
        self.register_grant(UserAuthorizationGrant, [Pkce(required=False)])
        self.register_grant(UserRefreshGrant)
        self.register_endpoint(Revocation)
        self.register_endpoint(Introspection)

    def query_client(self, client_id: str) -> OAuthClient | None:
        return load_client(self.session, client_id)

    def authenticate_client(
        self, request: OAuth2Request, methods: list[str], endpoint: str = "token"
    ) -> OAuthClient:
        """The client authenticated once for this request, where Authlib's flow asks for it
        (so its other checks keep their order): one reading of the credentials for all."""
        if self.client is None:
            raise InvalidClientError(description=self.client_refusal)
        return self.client

    def _generate_token(
        self,
        grant_type: str,
        client: OAuthClient,
        user: Any = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        token: dict[str, Any] = {
            "access_token": new_secret(32),
            "token_type": "bearer",
            "expires_in": expires_in or self.access_token_ttl,
            "scope": client.get_allowed_scope(scope),
        }
        if include_refresh_token:
            token["refresh_token"] = new_secret(32)
        return token

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        """Store the hashes of what `_generate_token` made, with the rows the grant needs."""
        client: OAuthClient = request.client
        grant_type = request.payload.grant_type
        user_id = request.user.id if request.user is not None else None
        grant_id = None
        if grant_type == "authorization_code":
            code: RedeemedCode = request.authorization_code
            grant = Grant(
                application_id=client.id,
                user_id=user_id,
                scope=code.row.scope,
                app_scopes_version=client.application.scopes_version,
                created_at=utcnow(),
            )
            self.session.add(grant)
            self.session.flush()
            code.row.grant_id = grant_id = grant.id
        elif grant_type == "refresh_token":
            grant_id = cast(PresentedRefreshToken, request.refresh_token).grant.id
        now = utcnow()
        access_id = self.session.execute(
            insert(AccessToken)
            .values(
                token_hash=token_hash(token["access_token"]),
                application_id=client.id,
                user_id=user_id,
                grant_id=grant_id,
                scope=token["scope"],
                created_at=now,
                expires_at=now + dt.timedelta(seconds=token["expires_in"]),
            )
            .returning(AccessToken.id)
        ).scalar_one()
        if "refresh_token" in token:
            self.session.execute(
                insert(RefreshToken).values(
                    token_hash=token_hash(token["refresh_token"]),
                    grant_id=grant_id,
                    scope=token["scope"],
                    access_token_id=access_id,
                    created_at=now,
                )
            )

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No listeners: the audit log is written by the grants themselves."""

    def create_oauth2_request(self, request: TokenRequest) -> TokenRequest:
        return request

    def create_token_response(
        self, request: TokenRequest
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        # RFC 6749 5.2 (3.1: empty means omitted): a missing grant_type is a missing parameter,
        # invalid_request; Authlib would answer unsupported_grant_type for "grant_type=None".
        if not request.payload.grant_type:
            error = InvalidRequestError("The parameter 'grant_type' is missing.")
            result: tuple[int, dict[str, Any], dict[str, str]] = self.handle_error_response(
                request, error
            )
            return result
        return super().create_token_response(request)  # type: ignore[no-any-return]

    def handle_response(
        self, status: int, body: dict[str, Any], headers: list[tuple[str, str]]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        return status, body, dict(headers)
