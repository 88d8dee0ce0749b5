"""OAuth endpoints: the token endpoint (api.md 4.2)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from regdesk.db import write_session
from regdesk.errors import NO_STORE, OAuthError
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
}

TOKEN_REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/x-www-form-urlencoded": {
            "schema": {
                "type": "object",
                "required": ["grant_type"],
                "properties": {
                    "grant_type": {"type": "string", "enum": ["client_credentials"]},
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
    description="Exchanges client credentials for an access token (api.md 4.2). "
    "Client authentication: `client_secret_post` (form fields) or `client_secret_basic`.",
    responses=TOKEN_RESPONSES,
    openapi_extra={"requestBody": TOKEN_REQUEST_BODY},
)
async def token(request: Request) -> JSONResponse:
    fields = await read_token_fields(request)
    token_request = TokenRequest(str(request.url), request.headers, fields)
    status, body, headers = await run_in_threadpool(_token_response, request, token_request)
    if "error" in body:
        body.setdefault("error_description", DEFAULT_DESCRIPTIONS.get(body["error"], ""))
        body = {"error": body["error"], "error_description": body["error_description"]}
        if body["error"] == "invalid_client":
            status = 401  # decisions.md, Errors
            headers.setdefault("WWW-Authenticate", 'Basic realm="regdesk"')
    return JSONResponse(body, status_code=status, headers={**headers, **NO_STORE})


def _token_response(
    request: Request, token_request: TokenRequest
) -> tuple[int, dict[str, Any], dict[str, str]]:
    settings = request.app.state.settings
    with write_session(request.app.state.engine) as session:
        server = RegdeskAuthorizationServer(session, settings.access_token_ttl)
        result: tuple[int, dict[str, Any], dict[str, str]] = server.create_token_response(
            token_request
        )
        return result
