"""The common client_credentials request, answered on the event loop, before routing.

Registration opening brings a storm of token requests from integrations. The usual one, well
formed, from a live application with its right secret and approved scopes, is answered here by
an ASGI middleware (`QuickTokens`): one read of the application and one INSERT of the token's
hash, on the loop's own connections (db.LoopReads), with no worker thread, no Authlib server
built, and none of the framework's routing, dependency solving or request and response objects
(which cost more than the answer); the INSERTs of the requests that arrive together share one
commit (db.GroupedWrites). Anything else (another grant, an unknown field, a wrong secret, a
scope to refuse, a rate limit reached, a database that would make the loop wait) goes on, its
body replayed, to the token route and through Authlib's server in a worker thread
(oauth/server.py), which also writes every error answer. So the two paths cannot disagree
about what is refused: this one only ever succeeds, and only where the full path would succeed
the same way. The transport rules (transport.py) apply first, as to every request.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Dialect
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from regdesk import ratelimit
from regdesk.db import ID_MAX, GroupedWrites, LoopReads, Query, UTCDateTime, utcnow
from regdesk.errors import DATABASE_UNAVAILABLE, OAuthError
from regdesk.oauth.clients import basic_credentials, named_clients
from regdesk.oauth.scopes import ScopeError, check_service_scopes, format_scopes, parse_scopes
from regdesk.oauth.token_form import MAX_TOKEN_BODY, token_fields
from regdesk.security import new_secret, token_hash, verify_client_secret

TOKEN_PATH = "/api/oauth/token"

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
    # The length first, as load_client checks it: int() refuses 4300 digits and more.
    if not (client_id.isascii() and client_id.isdigit() and len(client_id) <= 18):
        return None
    if not 0 < int(client_id) <= ID_MAX:
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


class QuickTokens:
    """ASGI middleware: answers the plain client_credentials request at the token endpoint;
    passes every other request on untouched, a token request with its body replayed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != TOKEN_PATH or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, complete = await _read_body(receive)
        answer = await _answer(scope, body) if complete else None
        if answer is None:
            await self.app(scope, _replaying(body, complete, receive), send)
            return
        issued, verdict = answer
        content = json.dumps(issued, ensure_ascii=False, separators=(",", ":")).encode()
        headers = [
            (b"content-length", str(len(content)).encode()),
            (b"content-type", b"application/json"),
            (b"cache-control", b"no-store"),
            (b"pragma", b"no-cache"),
        ]
        if verdict is not None:
            headers += [(k.lower().encode(), v.encode()) for k, v in verdict.headers().items()]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": content})


async def _answer(
    scope: Scope, body: bytes
) -> tuple[dict[str, Any], ratelimit.Verdict | None] | None:
    """The token response and the rate-limit verdict; None: the route answers instead."""
    request = Request(scope)
    try:
        fields = token_fields(body, request.headers.get("content-type", ""))
    except OAuthError:
        return None
    authorization = request.headers.get("authorization", "")
    # Counted here, once: the route finds the verdict on the request's state.
    verdict = ratelimit.count(request, "token", *named_clients(fields, authorization))
    if verdict is not None and not verdict.allowed:
        return None
    state = request.app.state
    ttl = state.settings.access_token_ttl
    try:
        issued = await quick_token(state.loop_reads, state.new_tokens, fields, authorization, ttl)
    except DATABASE_UNAVAILABLE:
        return None  # the route tries again, and answers the error as every route does
    return None if issued is None else (issued, verdict)


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request's body, and whether it is all there (not cut off, not over the limit)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True
        if size > MAX_TOKEN_BODY:
            return b"".join(chunks), False


def _replaying(body: bytes, complete: bool, receive: Receive) -> Receive:
    """`receive` as if nothing had been read: what was read comes first."""
    replayed = False

    async def receiving() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": not complete}

    return receiving
