"""The API's errors and the one place that renders them (decisions.md, Errors).

API routes raise an `ApiError`; the handlers here turn it, and every framework error, into the
hosted service's envelope `{"errors": {<category>: {...}}}` with the RFC 6750 headers. OAuth
endpoints raise `OAuthError`, rendered in the RFC 6749 5.2 shape instead.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel, ConfigDict, create_model
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("regdesk.errors")

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class Invalid(ValueError):
    """A change refused because of what was given: each bad field named, with what is wrong.

    The one validation error of every service (users, roles, departments, applications, the
    volunteer form...), rendered in one place for each way in: the admin pages next to each
    field, the command line one line per field (`username: 'fox' is taken`), the API as the
    `validation` envelope (`ValidationFailed`). The keys are the fields' names where they are
    typed: the API's (`phone`, `addressCountry`), which the forms use too.
    """

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(self.lines()))

    def lines(self) -> list[str]:
        return [f"{name}: {message}" for name, message in self.errors.items()]


class ApiError(Exception):
    status_code = 500
    category = "server"

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"errors": {self.category: {"message": self.message, **self.extra}}}

    def headers(self) -> dict[str, str]:
        return {}


class ValidationFailed(ApiError):
    """400: the request is malformed; `fields` says which and why."""

    status_code = 400
    category = "validation"

    def __init__(self, message: str, fields: Mapping[str, str]) -> None:
        super().__init__(message, fields=dict(fields))


class InvalidToken(ApiError):
    """401: no live bearer token. Real clients look for these exact messages."""

    status_code = 401
    category = "authentication"

    def __init__(self, message: str = "Invalid token.") -> None:
        super().__init__(message)

    def headers(self) -> dict[str, str]:
        description = "expired" if self.message == "Token expired." else "invalid"
        return {
            "WWW-Authenticate": (
                f'Bearer error="invalid_token", error_description="The token is {description}"'
            )
        }


class TokenExpired(InvalidToken):
    def __init__(self) -> None:
        super().__init__("Token expired.")


class InsufficientScope(ApiError):
    """403: a live token without the scope the route needs."""

    status_code = 403
    category = "access"

    def __init__(self, scopes: Sequence[str]) -> None:
        self.scopes = list(scopes)
        super().__init__(
            f"This action needs the scope {' '.join(self.scopes)}.", permissions=self.scopes
        )

    def headers(self) -> dict[str, str]:
        return {
            "WWW-Authenticate": (
                f'Bearer error="insufficient_scope", scope="{" ".join(self.scopes)}"'
            )
        }


class NotFound(ApiError):
    status_code = 404
    category = "resource"


class Conflict(ApiError):
    """409: the request contradicts what is already so (a ticket checked in before): the
    envelope's `conflict` says what, with the earlier state's members."""

    status_code = 409
    category = "conflict"


class RequestTooLarge(ApiError):
    """413: the request's body is over its route's limit (bodies.py)."""

    status_code = 413
    category = "request"


class RateLimited(ApiError):
    """429: the client has made too many requests; `retryAfter` seconds until the next one
    is counted (also in `Retry-After`). See ratelimit.py."""

    status_code = 429
    category = "rateLimit"

    def __init__(self, retry_after: int) -> None:
        self.retry_after = max(1, retry_after)
        super().__init__(
            f"Too many requests. Try again in {self.retry_after} seconds.",
            retryAfter=self.retry_after,
        )

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class OAuthError(Exception):
    """An RFC 6749 5.2 error of the token, revocation or introspection endpoint."""

    def __init__(
        self,
        error: str,
        description: str,
        status_code: int = 400,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status_code = status_code
        self.extra_headers = dict(headers or {})

    def response(self) -> JSONResponse:
        return JSONResponse(
            {"error": self.error, "error_description": self.description},
            status_code=self.status_code,
            headers={**NO_STORE, **self.extra_headers},
        )


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status_code, headers=error.headers())


LOCATIONS = ("body", "query", "path", "header")


def field_errors(problems: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """pydantic's errors as `{field: message}`: ("body", "filter", "roleId") -> "filter.roleId".

    Only pydantic's message is used, never the input, which may hold what it should not echo.
    """
    fields: dict[str, str] = {}
    for problem in problems:
        location = list(problem["loc"])
        if location and location[0] in LOCATIONS:
            location = location[1:]
        name = ".".join(str(part) for part in location) or "body"
        if problem.get("type") == "json_invalid":
            name, message = "body", "The body is not valid JSON."
        elif problem.get("type") == "extra_forbidden":
            message = "Unknown member."
        else:
            message = str(problem["msg"])
        fields.setdefault(name, message)
    return fields


def _validation_response(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(ValidationFailed("The request is not valid.", field_errors(exc.errors())))


def _invalid_response(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Invalid)
    return error_response(ValidationFailed("The request is not valid.", exc.errors))


def _api_error_response(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc)


def _oauth_error_response(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, OAuthError)
    return exc.response()


def _http_error_response(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        return error_response(NotFound("Not found."))
    if exc.status_code == 405:
        error = ApiError("This method is not allowed here.")
        error.status_code, error.category = 405, "request"
        headers = dict(exc.headers or {})
        if allowed := _allowed_methods(request):
            headers["Allow"] = allowed
        return JSONResponse(error.body(), status_code=405, headers=headers)
    error = ApiError(str(exc.detail))
    error.status_code, error.category = exc.status_code, "request"
    return JSONResponse(error.body(), status_code=exc.status_code, headers=dict(exc.headers or {}))


def _allowed_methods(request: Request) -> str:
    """`Allow` of a 405 (RFC 9110 15.5.6): every method of the resource at this path. Starlette
    names the first matching route's alone, though PUT and DELETE share a path, and a literal
    path (`/users/search`) is a resource of its own beside a template (`/users/{id}`)."""
    path = request.url.path
    routes = [
        route
        for route in iter_route_contexts(request.app.routes)  # included routers, flattened
        if route.methods and route.path_regex.match(path)
    ]
    fewest = min((len(route.param_convertors) for route in routes), default=0)
    methods = {
        method
        for route in routes
        if len(route.param_convertors) == fewest
        for method in route.methods or ()
    }
    return ", ".join(sorted(methods))


def _server_error_response(_: Request, exc: Exception) -> JSONResponse:
    # The hash ties the client's report to the full trace in our log, which it never sees.
    trace = secrets.token_hex(8)
    log.error("unhandled error %s", trace, exc_info=exc)
    return JSONResponse({"errors": {"server": {"hash": trace}}}, status_code=500)


def database_unavailable() -> tuple[type[Exception], ...]:
    """The errors that say the database cannot be reached (restarting, down, or SQLite's lock
    held too long): through the pool or the event loop's PostgreSQL connections (SQLAlchemy's:
    db/driver.py raises asyncpg's as those), on the loop's SQLite connection (the driver's),
    or on the driver's own bulk path (psycopg's COPY, db/bulk.py). psycopg's is one of them
    once psycopg is loaded, which a PostgreSQL engine does when it is made (create_app makes
    its engine before its handlers): a process on SQLite never loads psycopg's 7 MB, and never
    meets its errors."""
    found: list[type[Exception]] = [sqlalchemy.exc.OperationalError, sqlite3.OperationalError]
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        found.append(psycopg.OperationalError)
    return tuple(found)


def _database_unavailable_response(_: Request, exc: Exception) -> JSONResponse:
    # 503, handled here: an error left to the 500 handler makes the server drop the connection
    # after answering, and a keep-alive client's next request on it is reset unanswered.
    trace = secrets.token_hex(8)
    log.error("database unavailable %s", trace, exc_info=exc)
    return JSONResponse(
        {"errors": {"server": {"hash": trace}}}, status_code=503, headers={"Retry-After": "1"}
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_response)
    app.add_exception_handler(ApiError, _api_error_response)
    app.add_exception_handler(Invalid, _invalid_response)
    app.add_exception_handler(OAuthError, _oauth_error_response)
    app.add_exception_handler(StarletteHTTPException, _http_error_response)
    for unavailable in database_unavailable():
        app.add_exception_handler(unavailable, _database_unavailable_response)
    app.add_exception_handler(Exception, _server_error_response)


# --- the envelopes, as the OpenAPI document describes them ---------------------------------


class _Message(BaseModel):
    message: str


class _ValidationDetail(_Message):
    fields: dict[str, str]


class _AccessDetail(_Message):
    permissions: list[str]


class _RateLimitDetail(_Message):
    retryAfter: int  # noqa: N815 -- the hosted service's name


class _ServerDetail(BaseModel):
    hash: str


class OAuthErrorBody(BaseModel):
    """RFC 6749 5.2: how the token, revocation and introspection endpoints refuse."""

    model_config = ConfigDict(extra="forbid")

    error: str
    error_description: str


def _envelope(name: str, category: str, detail: type[BaseModel]) -> type[BaseModel]:
    inner = create_model(f"{name}Errors", **{category: (detail, ...)})  # type: ignore[call-overload]
    model: type[BaseModel] = create_model(name, errors=(inner, ...))
    return model


ENVELOPES: dict[int, tuple[str, type[BaseModel]]] = {
    400: (
        "Invalid input: `fields` names each bad field.",
        _envelope("InvalidInputError", "validation", _ValidationDetail),
    ),
    401: (
        "No live token: `Invalid token.` or `Token expired.`",
        _envelope("AuthenticationError", "authentication", _Message),
    ),
    403: (
        "The token lacks the scope named in `permissions`.",
        _envelope("AccessError", "access", _AccessDetail),
    ),
    404: ("No such record.", _envelope("NotFoundError", "resource", _Message)),
    429: (
        "Too many requests from this client: wait `retryAfter` seconds (also `Retry-After`).",
        _envelope("RateLimitError", "rateLimit", _RateLimitDetail),
    ),
    500: (
        "Server error; `hash` identifies it in the server's log.",
        _envelope("ServerError", "server", _ServerDetail),
    ),
    503: (
        "The database cannot be reached for now (restarting, or busy): try again after "
        "`Retry-After` seconds; `hash` identifies it in the server's log.",
        _envelope("UnavailableError", "server", _ServerDetail),
    ),
}


def api_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route: its error statuses, each with its envelope.

    A route behind the bearer guard (401) may also answer 429: the guard counts its requests.
    """
    rate_limited = (429,) if 401 in codes else ()
    return {
        code: {"description": ENVELOPES[code][0], "model": ENVELOPES[code][1]}
        for code in (*codes, *rate_limited, 500, 503)
    }
