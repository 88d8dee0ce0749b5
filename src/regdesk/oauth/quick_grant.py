"""The common client_credentials request, answered on the event loop.

Registration opening brings a storm of token requests from integrations. The usual one, well
formed, from a live application with its right secret and approved scopes, is answered here:
one read of the application and one INSERT of the token's hash, on the loop's own connections
(db.LoopReads), with no worker thread and no Authlib server built; the INSERTs of the requests
that arrive together share one commit (db.GroupedWrites). Anything else (another
grant, an unknown field, a wrong secret, a scope to refuse, a database that would make the
loop wait) goes the full way, through Authlib's server in a worker thread (oauth/server.py),
which also writes every error answer. So the two paths cannot disagree about what is refused:
this one only ever succeeds, and only where the full path would succeed the same way.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Dialect

from regdesk.db import ID_MAX, GroupedWrites, LoopReads, Query, UTCDateTime, utcnow
from regdesk.oauth.clients import basic_credentials
from regdesk.oauth.scopes import ScopeError, check_service_scopes, format_scopes, parse_scopes
from regdesk.security import new_secret, token_hash, verify_client_secret

FIELDS = frozenset({"grant_type", "scope", "client_id", "client_secret"})

APPLICATION = Query(
    "SELECT secret_hash, suspended, service_scopes FROM oauth_applications WHERE id = :id"
)
NEW_TOKEN = Query("""
    INSERT INTO oauth_access_tokens (token_hash, application_id, scope, created_at, expires_at)
    VALUES (:token_hash, :application_id, :scope, :created_at, :expires_at)
""")


async def quick_token(
    reads: LoopReads,
    tokens: GroupedWrites,
    fields: Mapping[str, Sequence[str]],
    authorization: str,
    ttl: int,
) -> dict[str, Any] | None:
    """The token response for a plain client_credentials request, or None: take the full path."""
    if fields.get("grant_type") != ["client_credentials"] or not FIELDS.issuperset(fields):
        return None
    credentials = _credentials(fields, authorization)
    if credentials is None:
        return None
    client_id, secrets = credentials
    if not (client_id.isascii() and client_id.isdigit() and 0 < int(client_id) <= ID_MAX):
        return None
    row = reads.first(APPLICATION, id=int(client_id))
    if row is None:
        return None
    secret_hash, suspended, approved = row
    if suspended or not approved or not any(verify_client_secret(secret_hash, s) for s in secrets):
        return None
    requested = parse_scopes(fields.get("scope"))
    try:
        check_service_scopes(requested, approved)  # as ServiceIntegrationGrant does
    except ScopeError:
        return None
    scope = format_scopes(requested) if requested else approved
    token, now = new_secret(32), utcnow()
    stamp = _timestamps(reads.engine.dialect)
    written = await tokens.write(
        {
            "token_hash": token_hash(token),
            "application_id": int(client_id),
            "scope": scope,
            "created_at": stamp(now),
            "expires_at": stamp(now + dt.timedelta(seconds=ttl)),
        }
    )
    if not written:
        return None
    return {"access_token": token, "token_type": "bearer", "expires_in": ttl, "scope": scope}


def _credentials(
    fields: Mapping[str, Sequence[str]], authorization: str
) -> tuple[str, list[str]] | None:
    """The client id and the readings of its secret, from exactly one of HTTP Basic and the
    form fields (client_secret_basic, client_secret_post)."""
    in_form = "client_id" in fields or "client_secret" in fields
    if authorization:
        return None if in_form else basic_credentials(authorization)
    ids, secrets = fields.get("client_id", ()), fields.get("client_secret", ())
    if len(ids) != 1 or len(secrets) != 1 or not ids[0] or not secrets[0]:
        return None
    return ids[0], [secrets[0]]


@functools.cache
def _timestamps(dialect: Dialect) -> Any:
    """How the database stores a UTCDateTime, as SQLAlchemy would bind it."""
    return UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
