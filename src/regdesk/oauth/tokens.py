"""Issuing access tokens, and finding the live token behind a bearer credential.

Tokens are 256 random bits after the time they were made; only their SHA-256 is stored, after
that time (decisions.md, Tokens; `new_token`, `token_key`).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from regdesk.db import naive_utc, utcnow
from regdesk.db.driver import LoopReads, Query
from regdesk.oauth.permissions import ADMIN
from regdesk.oauth.scopes import SCOPES, parse_scopes
from regdesk.security import b64url, new_secret, token_hash


class TokenKind(StrEnum):
    SERVICE = "service"  # client_credentials: the application acts as itself
    OBO = "obo"  # on behalf of the user who granted it


# A token begins with the millisecond it was made, in 11 hex digits (until the year 2527); its
# key (`token_key`) begins with the same digits. So the keys of new tokens come in
# order, and each new row adds to the end of the tokens' unique index. Random keys each landed
# on a page of their own anywhere in the index: a write of 16 tokens changed some 20 pages,
# each written to SQLite's log and copied again at its checkpoint (46 µs a token in a loop of
# such commits, on a copy of the demo's database with its 300,000 tokens; 9.7 µs in order).
_STAMP = 11
_TOKEN_LENGTH = _STAMP + 43
_HEX_DIGITS = frozenset("0123456789abcdef")


def new_token() -> str:
    """A new access or refresh token: the millisecond it was made (11 hex digits), then 256
    random bits (43 characters of base64url; decisions.md, Tokens). Opaque to its holder, and
    of the same characters as before (a URL's, a header's): nothing reads the time back but
    the order of the stored keys."""
    return f"{time.time_ns() // 1_000_000:0{_STAMP}x}{new_secret(32)}"


def token_key(token: str) -> str:
    """What is stored of an access or refresh token, and looked up: the time it begins with,
    then the SHA-256 of the whole token (base64url, 43 characters). A token of 43 characters,
    as regdesk issued them before, has its SHA-256 alone, in hex, as it was stored then (64
    characters: never the same as a key of the other kind, 54)."""
    stamp = token[:_STAMP]
    if len(token) == _TOKEN_LENGTH and _HEX_DIGITS.issuperset(stamp):
        digest = hashlib.sha256(token.encode()).digest()
        return stamp + b64url(digest)
    return token_hash(token)


def access_token_row(
    token: str,
    *,
    application_id: int,
    scope: str,
    ttl: int,
    now: dt.datetime,
    user_id: int | None = None,
    grant_id: int | None = None,
) -> dict[str, Any]:
    """The row that stores an access token: its hash, never the token. The one way a token is
    written, whichever path issues it (oauth/server.py's grants, oauth/quick_grant.py)."""
    return {
        "token_hash": token_key(token),
        "application_id": application_id,
        "user_id": user_id,
        "grant_id": grant_id,
        "scope": scope,
        "created_at": now,
        "expires_at": now + dt.timedelta(seconds=ttl),
    }


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
           t.created_at, a.id, a.suspended, a.service_scopes, a.obo_scopes,
           a.tokens_valid_after, CAST(a.scope_cutoffs AS TEXT)
    FROM oauth_access_tokens t
    JOIN oauth_applications a ON a.id = t.application_id
    LEFT JOIN oauth_grants g ON g.id = t.grant_id
    WHERE t.token_hash = :hash
""")
USER_PERMISSIONS = Query("SELECT name FROM user_permissions WHERE user_id = :user_id")


async def find_live_token(reads: LoopReads, token: str) -> LiveToken:
    """The token's current powers, or TokenRefused when it is not a live token.

    A token is live while unexpired and unrevoked, its application is not suspended (nor was
    since the token was issued) and, for a user's token, its grant stands. Its scopes are those
    it was issued with, less any the application has lost since (`granted_scopes`) and, for a
    sensitive scope, any its user no longer holds.
    """
    row = await reads.first(LIVE_TOKEN, hash=token_key(token))
    if row is None:
        raise TokenRefused(expired=False)
    user_id, scope, expires_at, unrevoked, created_at, app_id, suspended, *rest = row
    service, obo, valid_after, cutoffs = rest
    issued = naive_utc(created_at)
    if not unrevoked or suspended or ended_by_suspension(issued, valid_after):
        raise TokenRefused(expired=False)
    if naive_utc(expires_at) <= utcnow().replace(tzinfo=None):
        raise TokenRefused(expired=True)
    permissions: frozenset[str] | None = None  # a service token's: none asked
    if user_id is not None:
        permissions = frozenset()
        if _issued_with(scope)[1]:  # a sensitive scope: does its user still hold it?
            rows = await reads.all(USER_PERMISSIONS, user_id=user_id)
            permissions = frozenset(name for (name,) in rows)
    allowed = service if user_id is None else obo
    scopes = _powers(scope, issued, allowed, cutoffs, permissions)
    return LiveToken(application_id=app_id, user_id=user_id, scopes=scopes)


# What a token's row says it may do is worked out from its text columns (its scopes, its
# application's scopes and cutoffs, its user's permissions) by pure functions, the same answer
# for the same text: kept for the next request of the same token, which reads the row again
# (so a revocation, a suspension or a scope removed shows at once) but not its meaning: a
# changed column is a new key. Parsing them again was 7.4 µs of a token check timed alone
# (3.2 µs with this). Bounded: at most this many tokens' answers are kept.
_POWERS_KEPT = 4096


@functools.lru_cache(maxsize=_POWERS_KEPT)
def _issued_with(scope: str) -> tuple[tuple[str, ...], bool]:
    """The scopes a token was issued with, and whether one of them is sensitive."""
    scopes = tuple(parse_scopes(scope))
    return scopes, any(SCOPES[s].sensitive for s in scopes if s in SCOPES)


@functools.lru_cache(maxsize=_POWERS_KEPT)
def _powers(
    scope: str,
    issued: dt.datetime,
    allowed: str,
    cutoffs: str | None,
    permissions: frozenset[str] | None,
) -> frozenset[str]:
    """`token_scopes` of a token's row (`cutoffs`: its application's, as the JSON text both
    databases give for LIVE_TOKEN's cast); `permissions` None for a service token."""
    return frozenset(
        token_scopes(
            _issued_with(scope)[0],
            issued,
            allowed=allowed,
            cutoffs=cutoffs,
            user_permissions=None if permissions is None else lambda: permissions,
        )
    )


def token_scopes(
    scopes: Iterable[str],
    issued: dt.datetime,
    *,
    allowed: str,
    cutoffs: Mapping[str, str] | str | None,
    user_permissions: Callable[[], Collection[str]] | None,
) -> set[str]:
    """What an access token issued (naive UTC) with `scopes` may do now: those its application
    is allowed now (`allowed`: its OBO or service scopes), less those removed since it was
    issued, even when given back later (decisions.md, Scopes); for a user's token
    (`user_permissions` given), less the sensitive scopes its user no longer holds."""
    kind = TokenKind.SERVICE if user_permissions is None else TokenKind.OBO
    held = set(parse_scopes(allowed))
    removed = _cutoffs(cutoffs)
    granted = {
        scope
        for scope in scopes
        if scope in held
        and not ((cut := removed.get(cutoff_key(kind, scope))) is not None and issued <= cut)
    }
    if user_permissions is not None and any(SCOPES[s].sensitive for s in granted):
        permissions = user_permissions()
        if ADMIN not in permissions:
            granted = {s for s in granted if not SCOPES[s].sensitive or s in permissions}
    return granted


def ended_by_suspension(issued: dt.datetime, valid_after: dt.datetime | str | None) -> bool:
    """Issued (naive UTC) at or before the application's last suspension: dead for good."""
    return valid_after is not None and issued <= naive_utc(valid_after)


def cutoff_key(kind: TokenKind, scope: str) -> str:
    """The key of `Application.scope_cutoffs` for one scope of one kind of token."""
    return f"{kind.value}:{scope}"


def _cutoffs(raw: Mapping[str, str] | str | None) -> dict[str, dt.datetime]:
    # A JSON column arrives as text from SQLite's driver and parsed from PostgreSQL's.
    found: Any = json.loads(raw) if isinstance(raw, str) else (raw or {})
    return {key: naive_utc(value) for key, value in found.items()}
