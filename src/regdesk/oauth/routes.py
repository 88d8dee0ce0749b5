"""OAuth endpoints: token (api.md 4.2), revocation (RFC 7009), introspection (RFC 7662) and
the server's metadata (RFC 8414).

The first three share one rate limit per client (ratelimit.py), charged before the client is
authenticated. Over it: 429 with `Retry-After` and `{"error": "too_many_requests", ...}`, in
the RFC 6749 5.2 shape these endpoints always answer in (RFC 6749 names no error for it).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote_plus

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from regdesk import ratelimit
from regdesk.db import write_session
from regdesk.deps import IssuerDep, issuer
from regdesk.errors import NO_STORE, OAuthError
from regdesk.oauth.clients import TOKEN_ENDPOINT_AUTH_METHODS
from regdesk.oauth.quick_grant import quick_token
from regdesk.oauth.scopes import SCOPES
from regdesk.oauth.server import RegdeskAuthorizationServer, TokenRequest

router = APIRouter(tags=["OAuth"])

MAX_TOKEN_BODY = 16 * 1024

DEFAULT_DESCRIPTIONS = {
    "invalid_request": "The request is missing a parameter or is malformed.",
    "invalid_client": "Client authentication failed.",
    "invalid_grant": "The grant is invalid, expired or revoked.",
    "unauthorized_client": "This client may not use this grant type.",
    "unsupported_grant_type": "This grant type is not supported.",
    "invalid_scope": "The requested scope is invalid.",
}

RATE_LIMITED: dict[int | str, dict[str, Any]] = {
    429: {
        "description": "`too_many_requests`: this client has made too many requests; "
        "wait `Retry-After` seconds."
    }
}

TOKEN_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "An access token (and, for a user's grant, a refresh token).",
        "content": {
            "application/json": {
                "example": {
                    "access_token": "Jk3Q...",
                    "token_type": "bearer",
                    "expires_in": 3600,
                    "scope": "user:read volunteer:read",
                }
            }
        },
    },
    400: {"description": 'RFC 6749 5.2 error: `{"error", "error_description"}`.'},
    401: {"description": "`invalid_client`: unknown client, wrong secret or suspended."},
    **RATE_LIMITED,
}

TOKEN_REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/x-www-form-urlencoded": {
            "schema": {
                "type": "object",
                "required": ["grant_type"],
                "properties": {
                    "grant_type": {
                        "type": "string",
                        "enum": ["client_credentials", "authorization_code", "refresh_token"],
                    },
                    "code": {"type": "string", "description": "authorization_code only."},
                    "redirect_uri": {"type": "string", "description": "authorization_code."},
                    "code_verifier": {"type": "string", "description": "PKCE (S256)."},
                    "refresh_token": {"type": "string", "description": "refresh_token only."},
                    "client_id": {"type": "string", "description": "Or HTTP Basic."},
                    "client_secret": {"type": "string", "description": "Or HTTP Basic."},
                    "scope": {
                        "type": "string",
                        "description": "Space-separated; may also be sent repeated. "
                        "Omitted: every scope approved for the application.",
                    },
                },
            }
        }
    },
}


# The body of revocation and introspection (RFC 7009 2.1, RFC 7662 2.1).
TOKEN_ABOUT_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/x-www-form-urlencoded": {
            "schema": {
                "type": "object",
                "required": ["token"],
                "properties": {
                    "token": {"type": "string"},
                    "token_type_hint": {
                        "type": "string",
                        "enum": ["access_token", "refresh_token"],
                    },
                },
            }
        }
    },
}


async def read_token_fields(request: Request) -> dict[str, list[str]]:
    """The form (or JSON object) of a token request, each field with all its values."""
    body = await request.body()
    if len(body) > MAX_TOKEN_BODY:
        raise OAuthError("invalid_request", "The request body is too large.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise OAuthError("invalid_request", "The request body is not UTF-8.") from None
    fields: dict[str, list[str]] = defaultdict(list)
    if request.headers.get("content-type", "").split(";")[0].strip() == "application/json":
        for key, value in _json_fields(text).items():
            fields[key].extend(value if isinstance(value, list) else [value])
    else:
        for key, value in parse_qsl(text, keep_blank_values=True):
            fields[key].append(value)
    for key, values in fields.items():
        if key != "scope" and len(values) > 1:
            # RFC 6749 3.2: parameters MUST NOT be repeated (scope is our one exception).
            raise OAuthError("invalid_request", f"The parameter {key!r} was sent more than once.")
        if not all(isinstance(v, str) for v in values):
            raise OAuthError("invalid_request", f"The parameter {key!r} must be a string.")
    return fields


def _json_fields(text: str) -> dict[str, Any]:
    try:
        document = json.loads(text or "{}")
    except json.JSONDecodeError:
        raise OAuthError("invalid_request", "The request body is not valid JSON.") from None
    if not isinstance(document, dict):
        raise OAuthError("invalid_request", "The request body must be an object.")
    return document


@router.post(
    "/api/oauth/token",
    summary="Token endpoint",
    description="Issues access tokens (api.md 4.2): client_credentials, authorization_code "
    "(with PKCE S256) and refresh_token (rotating). "
    "Client authentication: `client_secret_post` (form fields) or `client_secret_basic`.",
    responses=TOKEN_RESPONSES,
    openapi_extra={"requestBody": TOKEN_REQUEST_BODY},
)
async def token(request: Request) -> JSONResponse:
    return await _respond(request, None)


@router.post(
    "/api/oauth/revoke",
    summary="Revoke a token (RFC 7009)",
    description="Revoking a refresh token revokes its whole grant. Answers 200 for tokens "
    "that are unknown or already dead.",
    responses=RATE_LIMITED,
    openapi_extra={"requestBody": TOKEN_ABOUT_BODY},
)
async def revoke(request: Request) -> JSONResponse:
    return await _respond(request, "revocation")


@router.post(
    "/api/oauth/introspect",
    summary="Introspect a token (RFC 7662)",
    description="For the token's own client; any other token reads as inactive.",
    responses=RATE_LIMITED,
    openapi_extra={"requestBody": TOKEN_ABOUT_BODY},
)
async def introspect(request: Request) -> JSONResponse:
    return await _respond(request, "introspection")


@router.get("/.well-known/oauth-authorization-server", summary="Server metadata (RFC 8414)")
def metadata(issuer: IssuerDep) -> JSONResponse:
    return JSONResponse(
        {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/oauth/authorize",
            "token_endpoint": f"{issuer}/api/oauth/token",
            "revocation_endpoint": f"{issuer}/api/oauth/revoke",
            "introspection_endpoint": f"{issuer}/api/oauth/introspect",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": list(TOKEN_ENDPOINT_AUTH_METHODS),
            "revocation_endpoint_auth_methods_supported": list(TOKEN_ENDPOINT_AUTH_METHODS),
            "introspection_endpoint_auth_methods_supported": list(TOKEN_ENDPOINT_AUTH_METHODS),
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "service_documentation": f"{issuer}/docs",
        }
    )


async def _respond(request: Request, endpoint: str | None) -> JSONResponse:
    """Run the token endpoint (`endpoint` None) or a named one; render its answer."""
    fields = await read_token_fields(request)
    authorization = request.headers.get("authorization", "")
    clients = named_clients(fields, authorization)
    if endpoint is None:
        state = request.app.state
        _count_request(request, clients)
        ttl = state.settings.access_token_ttl
        issued = await quick_token(state.loop_reads, state.new_tokens, fields, authorization, ttl)
        if issued is not None:
            return JSONResponse(issued, headers=NO_STORE)
    token_request = TokenRequest(str(request.url), request.headers, fields)
    status, body, headers = await run_in_threadpool(
        _server_response, request, token_request, endpoint, clients
    )
    if "error" in body:
        body.setdefault("error_description", DEFAULT_DESCRIPTIONS.get(body["error"], ""))
        body = {"error": body["error"], "error_description": body["error_description"]}
        if body["error"] == "invalid_client":
            status = 401  # decisions.md, Errors
            headers.setdefault("WWW-Authenticate", 'Basic realm="regdesk"')
    return JSONResponse(body, status_code=status, headers={**headers, **NO_STORE})


def named_clients(fields: Mapping[str, Sequence[str]], authorization: str) -> list[str]:
    """The clients a request names, in the form and in HTTP Basic, as the rate limit counts
    them: both, since authentication tries both; `01` is client 1, as `load_client` reads it;
    whatever can name no client is `unknown`."""
    named = [*fields.get("client_id", ()), _basic_user(authorization)]
    ids = [str(int(n)) for n in named if n and n.isascii() and n.isdigit() and len(n) <= 18]
    return ids or ["unknown"]


def _basic_user(authorization: str) -> str | None:
    """The client id of an HTTP Basic header, decoded as `authenticate_client_secret_basic`
    does."""
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip()).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return unquote_plus(decoded.partition(":")[0])


def _count_request(request: Request, clients: Sequence[str]) -> None:
    limited = ratelimit.count(request, "token", *clients)
    if limited is not None and not limited.allowed:
        wait = limited.retry_after
        raise OAuthError(
            "too_many_requests",
            f"Too many requests from this client. Try again in {wait} seconds.",
            status_code=429,
            headers={"Retry-After": str(wait)},
        )


def _server_response(
    request: Request, token_request: TokenRequest, endpoint: str | None, clients: Sequence[str]
) -> tuple[int, dict[str, Any], dict[str, str]]:
    # Before authentication, so that wrong secrets count too; outside the transaction. (A
    # token request was counted already, before oauth/quick_grant.py looked at it.)
    if endpoint is not None:
        _count_request(request, clients)
    settings = request.app.state.settings
    # One transaction, committed whatever the answer: a refused replay still revokes.
    with write_session(request.app.state.engine) as session:
        server = RegdeskAuthorizationServer(
            session,
            access_token_ttl=settings.access_token_ttl,
            refresh_token_idle_ttl=settings.refresh_token_idle_ttl,
            issuer=issuer(request),
        )
        result: tuple[int, dict[str, Any], dict[str, str]]
        if endpoint is None:
            result = server.create_token_response(token_request)
        else:
            result = server.create_endpoint_response(endpoint, token_request)
        return result
