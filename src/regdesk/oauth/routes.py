"""OAuth endpoints: token (api.md 4.2), revocation (RFC 7009) and introspection (RFC 7662).
The server's metadata (RFC 8414) is OpenID Connect's discovery document (regdesk.oidc).

They authenticate the client once, before anything else is done (oauth/clients.py),
and charge the rate limits by the outcome (ratelimit.py): an authenticated request to its
client's limit, a failed one to the sender's address. Over either: 429 with `Retry-After` and
`{"error": "too_many_requests", ...}`, in the RFC 6749 5.2 shape these endpoints always answer
in (RFC 6749 names no error for it).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from regdesk import ratelimit
from regdesk.db import write_session
from regdesk.deps import issuer
from regdesk.errors import NO_STORE, OAuthError, OAuthErrorBody
from regdesk.oauth.clients import (
    ClientCredentials,
    OAuthClient,
    authenticate,
    client_credentials,
)
from regdesk.oauth.server import RegdeskAuthorizationServer, TokenRequest
from regdesk.oauth.token_form import token_fields
from regdesk.observability import metrics

router = APIRouter(tags=["OAuth"])

DEFAULT_DESCRIPTIONS = {
    "invalid_request": "The request is missing a parameter or is malformed.",
    "invalid_client": "Client authentication failed.",
    "invalid_grant": "The grant is invalid, expired or revoked.",
    "unauthorized_client": "This client may not use this grant type.",
    "unsupported_grant_type": "This grant type is not supported.",
    "invalid_scope": "The requested scope is invalid.",
    "unsupported_token_type": "token_type_hint must be access_token or refresh_token.",
}

# What the token, revocation and introspection endpoints answer when they refuse a request.
OAUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "description": 'RFC 6749 5.2 error: `{"error", "error_description"}`.',
        "model": OAuthErrorBody,
    },
    401: {
        "description": "`invalid_client`: unknown client, wrong secret or suspended.",
        "model": OAuthErrorBody,
    },
    429: {
        "description": "`too_many_requests`: this client has made too many requests; "
        "wait `Retry-After` seconds.",
        "model": OAuthErrorBody,
    },
}


class TokenResponse(BaseModel):
    """api.md 4.2."""

    model_config = ConfigDict(extra="forbid")

    access_token: str
    token_type: Literal["bearer"]
    expires_in: int = Field(description="Seconds.")
    scope: str
    refresh_token: str | None = Field(
        default=None, description="Absent for client_credentials (api.md 3.2)."
    )


TOKEN_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "An access token (and, for a user's grant, a refresh token).",
        "model": TokenResponse,
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
    **OAUTH_ERRORS,
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
    return token_fields(await request.body(), request.headers.get("content-type", ""))


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
    responses=OAUTH_ERRORS,
    openapi_extra={"requestBody": TOKEN_ABOUT_BODY},
)
async def revoke(request: Request) -> JSONResponse:
    return await _respond(request, "revocation")


@router.post(
    "/api/oauth/introspect",
    summary="Introspect a token (RFC 7662)",
    description="For the token's own client; any other token reads as inactive.",
    responses=OAUTH_ERRORS,
    openapi_extra={"requestBody": TOKEN_ABOUT_BODY},
)
async def introspect(request: Request) -> JSONResponse:
    return await _respond(request, "introspection")


async def _respond(request: Request, endpoint: str | None) -> JSONResponse:
    """Run the token endpoint (`endpoint` None) or a named one; render its answer."""
    fields: dict[str, list[str]] = {}
    try:
        fields = await read_token_fields(request)
        credentials = client_credentials(fields, request.headers.get("authorization", ""))
        # The address this request is for, as the settings name it: the transport rules decided
        # whether it may be answered (transport.py), so Authlib's own HTTPS check finds it so.
        token_request = TokenRequest(issuer(request) + request.url.path, request.headers, fields)
        status, body, headers = await run_in_threadpool(
            _server_response, request, token_request, endpoint, credentials
        )
    except OAuthError as refused:
        if endpoint is None:
            _grant_answered(fields, refused.error)
        raise
    if endpoint is None:
        _grant_answered(fields, body.get("error"))
    if "error" in body:
        body.setdefault("error_description", DEFAULT_DESCRIPTIONS.get(body["error"], ""))
        body = {"error": body["error"], "error_description": body["error_description"]}
        if body["error"] == "invalid_client":
            status = 401  # decisions.md, Errors
            headers.setdefault("WWW-Authenticate", 'Basic realm="regdesk"')
        else:
            status = 400  # decisions.md, Errors (Authlib says 401 for unsupported_token_type)
    return JSONResponse(body, status_code=status, headers={**headers, **NO_STORE})


def _grant_answered(fields: dict[str, list[str]], error: str | None) -> None:
    """The token endpoint's answer counted (/metrics), as the quick path counts its own."""
    metrics.grant_answered(next(iter(fields.get("grant_type", ())), None), error)


def _server_response(
    request: Request,
    token_request: TokenRequest,
    endpoint: str | None,
    credentials: ClientCredentials | None,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    settings = request.app.state.settings
    # One transaction, committed whatever the answer: a refused replay still revokes.
    with write_session(request.app.state.engine) as session:
        client = _authenticated_client(request, session, credentials)
        server = RegdeskAuthorizationServer(
            session,
            client=client,
            client_refusal=UNKNOWN_CLIENT if credentials else NO_CREDENTIALS,
            access_token_ttl=settings.access_token_ttl,
            refresh_token_idle_ttl=settings.refresh_token_idle_ttl,
            issuer=issuer(request),
            extensions=request.app.state.grant_extensions,
        )
        result: tuple[int, dict[str, Any], dict[str, str]]
        if endpoint is None:
            result = server.create_token_response(token_request)
        else:
            result = server.create_endpoint_response(endpoint, token_request)
        return result


UNKNOWN_CLIENT = "Unknown client or wrong secret."
NO_CREDENTIALS = (
    "The client must authenticate: HTTP Basic, or client_id and client_secret in the form."
)


def _authenticated_client(
    request: Request, session: Session, credentials: ClientCredentials | None
) -> OAuthClient | None:
    """The client the credentials authenticate, or None (Authlib then answers invalid_client
    where its grant or endpoint asks for it). Charges the outcome to the limits: the client's
    own when authenticated (counted once: QuickTokens may have counted it), else the sender's
    address, whose spent budget refuses the request before its credentials are checked."""
    address = ratelimit.sender(request)
    if refused := ratelimit.spent(request, "token_failure", address):
        raise _too_many("Too many failed client authentications from your address.", refused)
    client = authenticate(session, credentials)
    if client is None:
        ratelimit.count(request, "token_failure", address)
        return None
    verdict = ratelimit.verdict_of(request) or ratelimit.count(request, "token", str(client.id))
    if verdict is not None and not verdict.allowed:
        raise _too_many("Too many requests from this client.", verdict)
    return client


def _too_many(reason: str, verdict: ratelimit.Verdict) -> OAuthError:
    wait = verdict.retry_after
    return OAuthError(
        "too_many_requests",
        f"{reason} Try again in {wait} seconds.",
        status_code=429,
        headers={"Retry-After": str(wait)},
    )
