"""What a client may ask about its tokens: revocation (RFC 7009) and introspection (RFC 7662),
and the one lookup both use, which judges a token as the bearer guard does."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from authlib.oauth2.rfc6749 import (
    OAuth2Request,
)
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import naive_utc, utcnow
from regdesk.oauth.clients import TOKEN_ENDPOINT_AUTH_METHODS, OAuthClient
from regdesk.oauth.grants import revoke_grants
from regdesk.oauth.models import (
    AccessToken,
    Application,
    Grant,
    RefreshToken,
)
from regdesk.oauth.permissions import permissions_of
from regdesk.oauth.scopes import (
    format_scopes,
    parse_scopes,
)
from regdesk.oauth.tokens import (
    ended_by_suspension,
    token_key,
    token_scopes,
)

if TYPE_CHECKING:
    from regdesk.oauth.server import RegdeskAuthorizationServer


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
    digest = token_key(value)
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
        user_permissions=None if user_id is None else lambda: permissions_of(session, user_id),
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
            cast("RegdeskAuthorizationServer", self.server).session, token_string, token_type_hint
        )

    def revoke_token(self, token: KnownToken, request: OAuth2Request) -> None:
        """An access token dies alone; a refresh token takes its whole grant with it
        (RFC 7009 2.1: its access tokens SHOULD go too)."""
        session = cast("RegdeskAuthorizationServer", self.server).session
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
            cast("RegdeskAuthorizationServer", self.server).session, token_string, token_type_hint
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
            "iss": cast("RegdeskAuthorizationServer", self.server).issuer,
        }
        if token.user_id is not None:
            payload["sub"] = str(token.user_id)
        if token.expires_at is not None:
            payload["exp"] = int(token.expires_at.timestamp())
        return payload
