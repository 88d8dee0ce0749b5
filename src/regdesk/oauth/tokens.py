"""Issuing access tokens, and finding the live token behind a bearer credential.

Tokens are 256 random bits; only their SHA-256 is stored (decisions.md, Tokens).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from regdesk.db import utcnow
from regdesk.oauth.models import AccessToken, Application, Grant
from regdesk.oauth.scopes import SCOPES, parse_scopes
from regdesk.security import new_secret, token_hash
from regdesk.users.models import UserPermission
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


def find_live_token(session: Session, token: str) -> LiveToken:
    """The token's current powers, or TokenRefused when it is not a live token.

    A token is live while unexpired and unrevoked, its application is not suspended and, for a
    user's token, its grant stands. Its scopes are those it was issued with, less any the
    application has since lost and, for a sensitive scope, any its user no longer holds.
    """
    row = session.execute(
        select(
            AccessToken.user_id,
            AccessToken.scope,
            AccessToken.expires_at,
            AccessToken.revoked_at,
            Application.id,
            Application.suspended,
            Application.service_scopes,
            Application.obo_scopes,
            Grant.revoked_at,
        )
        .join(Application, Application.id == AccessToken.application_id)
        .outerjoin(Grant, Grant.id == AccessToken.grant_id)
        .where(AccessToken.token_hash == token_hash(token))
    ).first()
    if row is None:
        raise TokenRefused(expired=False)
    user_id, scope, expires_at, revoked_at, app_id, suspended, service, obo, grant_revoked = row
    if revoked_at is not None or suspended or grant_revoked is not None:
        raise TokenRefused(expired=False)
    if expires_at <= utcnow():
        raise TokenRefused(expired=True)
    allowed = set(parse_scopes(service if user_id is None else obo))
    scopes = {s for s in parse_scopes(scope) if s in allowed}
    if user_id is not None and any(SCOPES[s].sensitive for s in scopes if s in SCOPES):
        scopes = _held_by_user(session, user_id, scopes)
    return LiveToken(application_id=app_id, user_id=user_id, scopes=frozenset(scopes))


def _held_by_user(session: Session, user_id: int, scopes: set[str]) -> set[str]:
    """A user's token keeps a sensitive scope only while the user holds that permission."""
    held = set(
        session.scalars(select(UserPermission.name).where(UserPermission.user_id == user_id))
    )
    if ADMIN in held:
        return scopes
    return {s for s in scopes if s not in SCOPES or not SCOPES[s].sensitive or s in held}
