"""Issuing access tokens, and finding the live token behind a bearer credential.

Tokens are 256 random bits; only their SHA-256 is stored (decisions.md, Tokens).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import insert
from sqlalchemy.orm import Session

from regdesk.db import LoopReads, Query, naive_utc, utcnow
from regdesk.oauth.models import AccessToken
from regdesk.oauth.scopes import SCOPES, parse_scopes
from regdesk.security import new_secret, token_hash
from regdesk.users.permissions import ADMIN


class TokenKind(StrEnum):
    SERVICE = "service"  # client_credentials: the application acts as itself
    OBO = "obo"  # on behalf of the user who granted it


def issue_access_token(
    session: Session,
    *,
    application_id: int,
    scope: str,
    ttl: int,
    user_id: int | None = None,
    grant_id: int | None = None,
) -> tuple[str, dt.datetime]:
    """A new access token (returned once, in clear) and its expiry."""
    token = new_secret(32)
    now = utcnow()
    expires_at = now + dt.timedelta(seconds=ttl)
    session.execute(
        insert(AccessToken).values(
            token_hash=token_hash(token),
            application_id=application_id,
            user_id=user_id,
            grant_id=grant_id,
            scope=scope,
            created_at=now,
            expires_at=expires_at,
        )
    )
    return token, expires_at


@dataclass(frozen=True)
class LiveToken:
    """What a bearer token may do right now."""

    application_id: int
    user_id: int | None
    scopes: frozenset[str]

    @property
    def kind(self) -> TokenKind:
        return TokenKind.SERVICE if self.user_id is None else TokenKind.OBO


class TokenRefused(Exception):
    def __init__(self, expired: bool) -> None:
        super().__init__("expired" if expired else "invalid")
        self.expired = expired


LIVE_TOKEN = Query("""
    SELECT t.user_id, t.scope, t.expires_at, t.revoked_at IS NULL AND g.revoked_at IS NULL,
           a.id, a.suspended, a.service_scopes, a.obo_scopes
    FROM oauth_access_tokens t
    JOIN oauth_applications a ON a.id = t.application_id
    LEFT JOIN oauth_grants g ON g.id = t.grant_id
    WHERE t.token_hash = :hash
""")
USER_PERMISSIONS = Query("SELECT name FROM user_permissions WHERE user_id = :user_id")


def find_live_token(reads: LoopReads, token: str) -> LiveToken:
    """The token's current powers, or TokenRefused when it is not a live token.

    A token is live while unexpired and unrevoked, its application is not suspended and, for a
    user's token, its grant stands. Its scopes are those it was issued with, less any the
    application has since lost and, for a sensitive scope, any its user no longer holds.
    """
    row = reads.first(LIVE_TOKEN, hash=token_hash(token))
    if row is None:
        raise TokenRefused(expired=False)
    user_id, scope, expires_at, unrevoked, app_id, suspended, service, obo = row
    if not unrevoked or suspended:
        raise TokenRefused(expired=False)
    if naive_utc(expires_at) <= utcnow().replace(tzinfo=None):
        raise TokenRefused(expired=True)
    allowed = set(parse_scopes(service if user_id is None else obo))
    scopes = {s for s in parse_scopes(scope) if s in allowed}
    if user_id is not None and any(SCOPES[s].sensitive for s in scopes if s in SCOPES):
        held = {name for (name,) in reads.all(USER_PERMISSIONS, user_id=user_id)}
        if ADMIN not in held:
            scopes = {s for s in scopes if s not in SCOPES or not SCOPES[s].sensitive or s in held}
    return LiveToken(application_id=app_id, user_id=user_id, scopes=frozenset(scopes))
