"""A user's grant at the token endpoint: the code exchange (authorization_code, with PKCE) and
rotating refresh tokens with reuse detection (api.md 3.2, 4.2; decisions.md, Tokens).

- authorization_code consumes the code atomically when it is looked up, so a code is redeemed
  once whatever the concurrency; a second redemption revokes the grant the first one made.
  PKCE is Authlib's CodeChallenge. `scope` on the exchange may narrow the grant.
- refresh_token consumes the presented token with one conditional UPDATE (`consumed_at IS
  NULL`), so of two concurrent refreshes exactly one wins on any number of processes; the
  loser, like any later presentation of a consumed token, revokes the whole grant.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from authlib.oauth2.rfc6749 import (
    AuthorizationCodeGrant,
    RefreshTokenGrant,
)
from authlib.oauth2.rfc6749.errors import (
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
)
from authlib.oauth2.rfc6749.hooks import hooked
from authlib.oauth2.rfc7636 import CodeChallenge
from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.oauth.clients import TOKEN_ENDPOINT_AUTH_METHODS, OAuthClient
from regdesk.oauth.grants import revoke_grants
from regdesk.oauth.models import (
    Application,
    AuthorizationCode,
    Grant,
    RefreshToken,
)
from regdesk.oauth.scopes import (
    format_scopes,
    parse_scopes,
)
from regdesk.oauth.tokens import token_key
from regdesk.observability import metrics
from regdesk.security import token_hash

if TYPE_CHECKING:
    from regdesk.oauth.server import RegdeskAuthorizationServer


@dataclass(frozen=True)
class GrantUser:
    """The user a code or refresh token was granted by, as Authlib's grants carry it: a code
    and a grant go when their user does (ON DELETE CASCADE), so the id is enough."""

    id: int


# --- authorization_code ----------------------------------------------------------------------


@dataclass(frozen=True)
class RedeemedCode:
    """An authorization code just consumed: Authlib's AuthorizationCodeMixin."""

    row: AuthorizationCode

    def get_redirect_uri(self) -> str:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return self.row.scope

    def get_nonce(self) -> str | None:
        return self.row.nonce

    def get_auth_time(self) -> int | None:
        """When the user signed in (OpenID Connect's `auth_time`), in seconds."""
        return int(self.row.auth_time.timestamp()) if self.row.auth_time else None


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
        return cast("RegdeskAuthorizationServer", self.server).session

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

    def authenticate_user(self, code: RedeemedCode) -> GrantUser:
        return GrantUser(code.row.user_id)

    # Hooked as Authlib's own: its extensions (OpenID Connect's ID token) run after it.
    @hooked  # type: ignore[untyped-decorator]
    def create_token_response(self) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        # As Authlib's, but `scope` on the exchange may narrow the grant (decisions.md).
        code: RedeemedCode = self.request.authorization_code
        user = self.authenticate_user(code)
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
        return cast("RegdeskAuthorizationServer", self.server)

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
        digest = token_key(presented)
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
        metrics.refresh_token_reused()
        record_event(
            session,
            Actor(label=f"app:{credential.grant.application_id}", user_id=credential.grant.user_id),
            "oauth.refresh_token_reused",
            target_type="grant",
            target_id=credential.grant.id,
        )
        raise InvalidGrantError("The refresh token was already used; the grant is revoked.")

    def authenticate_user(self, credential: PresentedRefreshToken) -> GrantUser:
        return GrantUser(credential.grant.user_id)

    def revoke_old_credential(self, credential: PresentedRefreshToken) -> None:
        """Already consumed, atomically, in validate_token_request."""
