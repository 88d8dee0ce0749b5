"""The common client_credentials request, answered on the event loop, before routing.

Registration opening brings a storm of token requests from integrations. The usual one, well
formed, from a live application with its right secret and approved scopes, is answered here by
an ASGI middleware (`QuickTokens`): one INSERT of the token's hash, on the loop's own
connection (db.LoopReads), with no worker thread, no Authlib server built, and none of the
framework's routing, dependency solving or request and response objects (which cost more than
the answer); the INSERTs of the requests that arrive together share one commit
(db.GroupedWrites). Anything else (another grant, an unknown field, a wrong secret, a scope to
refuse, a rate limit reached, a database that would make the loop wait) goes on, its body
replayed, to the token route and through Authlib's server in a worker thread
(oauth/server.py), which also writes every error answer. So the two paths cannot disagree
about what is refused: this one only ever succeeds, and only where the full path would succeed
the same way: the same reading of the credentials (oauth/clients.py), the same rate limits
charged the same way (the sender's spent failure budget refuses first; only an authenticated
request counts against its client, once). The transport rules (transport.py) apply first, as
to every request.

The application is read once and then kept (`KnownClients`): reading it again for each grant
was a seventh of the grant's time. What was kept is checked where it counts, in the database,
as the token is written: the INSERT writes the token only while the application still has the
secret's hash it was authenticated against, the scopes its token was granted from, and is not
suspended (`NEW_TOKEN`). An application changed since (suspended, its secret rotated, its
scopes narrowed, by this process or any other) fails that INSERT, which then writes nothing
for the requests it was grouped with; each goes to the full path, which reads the application
afresh, and the next grant reads it again here. A presented secret that the kept hash does not
match has the application read afresh before it is refused (its secret may have been rotated).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Dialect
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from regdesk import ratelimit
from regdesk.db import UTCDateTime, utcnow
from regdesk.db.driver import GroupedWrites, LoopReads, Query
from regdesk.errors import OAuthError, database_unavailable
from regdesk.oauth.clients import ClientCredentials, client_credentials, client_number
from regdesk.oauth.scopes import ScopeError, check_service_scopes, format_scopes, parse_scopes
from regdesk.oauth.token_form import MAX_TOKEN_BODY, token_fields
from regdesk.oauth.tokens import access_token_row, new_token
from regdesk.observability import metrics
from regdesk.observability.observed import ANSWERED_AS

TOKEN_PATH = "/api/oauth/token"

FIELDS = frozenset({"grant_type", "scope", "client_id", "client_secret"})

APPLICATION = Query(
    "SELECT secret_hash, suspended, service_scopes FROM oauth_applications WHERE id = :id"
)
# The token's row, written only while its application is as the quick path kept it (see the
# module): otherwise its application_id is NULL, which the column refuses (IntegrityError), and
# the grouped INSERTs are written by none of the requests (GroupedWrites: False).
NEW_TOKEN = Query("""
    INSERT INTO oauth_access_tokens
        (token_hash, application_id, user_id, grant_id, scope, created_at, expires_at)
    VALUES (
        :token_hash,
        (SELECT id FROM oauth_applications
         WHERE id = :application_id AND secret_hash = :secret_hash AND NOT suspended
           AND service_scopes = :approved),
        :user_id, :grant_id, :scope, :created_at, :expires_at)
""")


@dataclass(frozen=True)
class QuickClient:
    """An application that authenticated on the quick path: the hash its secret matched, and
    its approved service scopes."""

    id: int
    secret_hash: str
    approved: str


class KnownClients:
    """The live applications with approved service scopes, as this app last read them: id ->
    (secret hash, approved scopes). At most LIMIT, forgotten all at once past it. Nothing is
    kept of an application that does not exist, is suspended or may not use this grant, so
    what is kept is at most the live applications: a stranger's requests, which cannot make
    one, cannot grow it."""

    LIMIT = 1024

    def __init__(self) -> None:
        self._known: dict[int, tuple[str, str]] = {}

    def get(self, number: int) -> tuple[str, str] | None:
        return self._known.get(number)

    def read(self, number: int, row: tuple[Any, ...] | None) -> tuple[str, str] | None:
        """The application as `row` (APPLICATION's) has it, kept if live and approved."""
        if row is None:
            self.forget(number)
            return None
        secret_hash, suspended, approved = row
        if suspended or not approved:
            self.forget(number)
            return None
        if len(self._known) >= self.LIMIT:
            self._known.clear()
        known = self._known[number] = (secret_hash, approved)
        return known

    def forget(self, number: int) -> None:
        self._known.pop(number, None)


async def quick_client(
    reads: LoopReads,
    known: KnownClients,
    fields: Mapping[str, Sequence[str]],
    credentials: ClientCredentials | None,
) -> QuickClient | None:
    """The live client of a plain client_credentials request, authenticated; None: take the
    full path (another grant, an unknown field, no such client, a wrong secret...)."""
    if fields.get("grant_type") != ["client_credentials"] or not FIELDS.issuperset(fields):
        return None
    number = client_number(credentials.client_id) if credentials else None
    if credentials is None or number is None:
        return None
    application = known.get(number)
    if application is None or not credentials.match(application[0]):
        # Not kept yet, or kept with another secret's hash: rotated since, perhaps.
        application = known.read(number, await reads.first(APPLICATION, id=number))
        if application is None or not credentials.match(application[0]):
            return None
    secret_hash, approved = application
    return QuickClient(number, secret_hash, approved)


async def quick_token(
    reads: LoopReads,
    tokens: GroupedWrites,
    known: KnownClients,
    client: QuickClient,
    fields: Mapping[str, Sequence[str]],
    ttl: int,
) -> dict[str, Any] | None:
    """The token response for an authenticated client, or None: take the full path (a scope
    to refuse, an application changed since it was read, or a database that would make the
    loop wait)."""
    scope = _granted(tuple(fields.get("scope") or ()), client.approved)
    if scope is None:
        return None
    token = new_token()
    row = access_token_row(token, application_id=client.id, scope=scope, ttl=ttl, now=utcnow())
    stamp = _timestamps(reads.engine.dialect)
    written = await tokens.write(
        {
            **row,
            "created_at": stamp(row["created_at"]),
            "expires_at": stamp(row["expires_at"]),
            "secret_hash": client.secret_hash,  # as authenticated: NEW_TOKEN checks them
            "approved": client.approved,
        }
    )
    if not written:
        known.forget(client.id)  # changed since, perhaps: read it at the next grant
        return None
    return {"access_token": token, "token_type": "bearer", "expires_in": ttl, "scope": scope}


@functools.lru_cache(maxsize=1024)
def _granted(asked: tuple[str, ...], approved: str) -> str | None:
    """The scope of a token asked for with the form's `scope` values `asked` by a client
    approved for `approved`, or None: a scope to refuse (the route refuses it, as
    ServiceIntegrationGrant does). The same answer for the same text, kept: the same clients
    ask the same way, and working it out again was 4 % of a grant's time in a profile."""
    requested = parse_scopes(asked)
    try:
        check_service_scopes(requested, approved)
    except ScopeError:
        return None
    return format_scopes(requested) if requested else approved


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
        metrics.grant_answered("client_credentials", None)  # as the route counts its answers
        scope[ANSWERED_AS] = TOKEN_PATH
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
        credentials = client_credentials(fields, request.headers.get("authorization", ""))
    except OAuthError:
        return None
    if ratelimit.spent(request, "token_failure", ratelimit.sender(request)):
        return None
    state = request.app.state
    try:
        client = await quick_client(state.loop_reads, state.known_clients, fields, credentials)
        if client is None:
            return None  # the route authenticates again, and charges the failure
        # Counted here, once: the route finds the verdict on the request's state.
        verdict = ratelimit.count(request, "token", str(client.id))
        if verdict is not None and not verdict.allowed:
            return None
        ttl = state.settings.access_token_ttl
        issued = await quick_token(
            state.loop_reads, state.new_tokens, state.known_clients, client, fields, ttl
        )
    except database_unavailable():
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
