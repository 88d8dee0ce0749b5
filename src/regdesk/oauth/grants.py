"""Grants: what a user has authorized, revoking it, and purging what is dead."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Engine, and_, delete, or_, select, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow, write_session
from regdesk.oauth.models import AccessToken, Application, AuthorizationCode, Grant, RefreshToken
from regdesk.oauth.scopes import parse_scopes


@dataclass(frozen=True)
class ConnectedApplication:
    application_id: int
    name: str
    description: str
    scopes: list[str]  # every scope the user's live grants to it hold
    first_granted_at: dt.datetime


def connected_applications(session: Session, user_id: int) -> list[ConnectedApplication]:
    """The applications holding a live grant of this user, with what they may do."""
    rows = session.execute(
        select(
            Application.id, Application.name, Application.description, Grant.scope, Grant.created_at
        )
        .join(Grant, Grant.application_id == Application.id)
        .where(Grant.user_id == user_id, Grant.revoked_at.is_(None))
        .order_by(Application.name, Application.id, Grant.created_at)
    ).all()
    connected: dict[int, ConnectedApplication] = {}
    for app_id, name, description, scope, created_at in rows:
        known = connected.get(app_id)
        scopes = parse_scopes(scope)
        if known is None:
            connected[app_id] = ConnectedApplication(app_id, name, description, scopes, created_at)
        else:
            known.scopes.extend(s for s in scopes if s not in known.scopes)
    return list(connected.values())


def revoke_grants(session: Session, where: Any, reason: str) -> list[int]:
    """Revoke the live grants matching `where`, with every token they begot. Their ids."""
    now = utcnow()
    ids = list(session.scalars(select(Grant.id).where(where, Grant.revoked_at.is_(None))))
    if not ids:
        return []
    session.execute(
        update(Grant).where(Grant.id.in_(ids)).values(revoked_at=now, revoked_reason=reason)
    )
    session.execute(
        update(AccessToken)
        .where(AccessToken.grant_id.in_(ids), AccessToken.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    session.execute(
        update(RefreshToken)
        .where(RefreshToken.grant_id.in_(ids), RefreshToken.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return ids


def end_access(
    session: Session, *, reason: str, user_id: int | None = None, application_id: int | None = None
) -> list[int]:
    """End what a user (or an application, or the one user's grants to the one application)
    can still do through OAuth: the live grants with every token they begot, and the codes not
    yet redeemed, deleted so that their exchange is `invalid_grant` as for an unknown code
    (RFC 6749 4.1.2). The revoked grants' ids.

    Shared by a user revoking an application (user and application), an administrator
    resetting a password (user only) and an application's suspension (application only)."""
    if user_id is None and application_id is None:
        raise ValueError("end_access needs a user_id, an application_id or both")
    grants: list[ColumnElement[bool]] = []
    codes: list[ColumnElement[bool]] = [AuthorizationCode.used_at.is_(None)]
    if user_id is not None:
        grants.append(Grant.user_id == user_id)
        codes.append(AuthorizationCode.user_id == user_id)
    if application_id is not None:
        grants.append(Grant.application_id == application_id)
        codes.append(AuthorizationCode.application_id == application_id)
    # Codes before grants: an exchange that redeemed a code first has made its grant by the
    # time the code's row is free (PostgreSQL), so the grants read next include it.
    session.execute(delete(AuthorizationCode).where(*codes))
    return revoke_grants(session, and_(*grants), reason)


def revoke_application(session: Session, actor: Actor, user_id: int, application_id: int) -> int:
    """The user takes back everything they granted an application (their account page)."""
    revoked = end_access(
        session, reason="revoked_by_user", user_id=user_id, application_id=application_id
    )
    if revoked:
        record_event(
            session,
            actor,
            "oauth.grant_revoked",
            target_type="application",
            target_id=application_id,
            details={"grants": len(revoked), "by": "user"},
        )
    return len(revoked)


# --- purge ---------------------------------------------------------------------------------

PURGE_BATCH = 5000
# A consumed refresh token is kept this long so that its replay is recognised as reuse
# (and revokes its grant) rather than looking like an unknown token.
CONSUMED_REFRESH_KEPT = dt.timedelta(days=30)


@dataclass(frozen=True)
class PurgeResult:
    codes: int
    access_tokens: int
    refresh_tokens: int
    grants: int

    def as_json(self) -> dict[str, int]:
        return {
            "authorizationCodes": self.codes,
            "accessTokens": self.access_tokens,
            "refreshTokens": self.refresh_tokens,
            "grants": self.grants,
        }


def purge(engine: Engine, batch: int = PURGE_BATCH) -> PurgeResult:
    """Delete what can never be used again, `batch` rows a transaction (not one long lock)."""
    now = utcnow()
    codes = _purge(engine, AuthorizationCode, AuthorizationCode.expires_at < now, batch)
    access = _purge(
        engine,
        AccessToken,
        or_(AccessToken.expires_at < now, AccessToken.revoked_at.is_not(None)),
        batch,
    )
    refresh = _purge(
        engine,
        RefreshToken,
        or_(
            RefreshToken.revoked_at.is_not(None),
            RefreshToken.consumed_at < now - CONSUMED_REFRESH_KEPT,
        ),
        batch,
    )
    # A revoked grant, or one whose tokens are all gone, can beget nothing more.
    live_refresh = select(RefreshToken.id).where(
        RefreshToken.grant_id == Grant.id,
        RefreshToken.consumed_at.is_(None),
        RefreshToken.revoked_at.is_(None),
    )
    grants = _purge(
        engine, Grant, or_(Grant.revoked_at.is_not(None), ~live_refresh.exists()), batch
    )
    return PurgeResult(codes, access, refresh, grants)


def _purge(engine: Engine, model: Any, condition: Any, batch: int) -> int:
    total = 0
    while True:
        with write_session(engine) as session:
            ids = list(session.scalars(select(model.id).where(condition).limit(batch)))
            if ids:
                session.execute(delete(model).where(model.id.in_(ids)))
        total += len(ids)
        if len(ids) < batch:
            return total
