"""Request body limits (decisions.md, Transport): a body over its route's limit is refused with
413 from its `Content-Length`, or as soon as a streamed body passes the limit, before anything
else reads it.

`BodyLimits` runs just inside the transport rules, before the quick token path and routing. It
wraps `receive`: the app reading past the limit gets `BodyOverLimit` instead of the bytes, and
whatever it then makes of that (FastAPI turns it into a 400, a dependency's cleanup may raise)
is replaced by a 413 in the shape of the route's family, with `Connection: close` so that the
server reads no more of the body. The limit in force lives in the ASGI scope: the one route
that allows more (the administrator's import upload) raises it with `raise_limit` once it
knows who is asking.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from regdesk.errors import OAuthError, RequestTooLarge, error_response
from regdesk.oauth.token_form import MAX_TOKEN_BODY
from regdesk.schemas import MAX_JSON_BODY
from regdesk.web.headers import SecurityHeaders
from regdesk.web.pages import render

# --- the limits, by route family -------------------------------------------------------------

TOKEN_PATHS = frozenset({"/api/oauth/token", "/api/oauth/revoke", "/api/oauth/introspect"})
# The largest form, the volunteer form with every contact row full, thirty departments, ten
# answers of 1,000 characters and fifty choices ticked, is about 25 KB as a browser sends it.
PAGE_FORM = 64 * 1024
# Routes that raise their limit once they know who is asking (`raise_limit`): their declared
# size is judged when their body is first read, not on arrival.
RAISED_BY_ROUTE = frozenset({"/admin/transfer/import"})
LIMIT_KEY = "regdesk.body_limit"


def limit_for(path: str) -> int:
    """The body limit of the route at `path`, until its route raises it."""
    if path in TOKEN_PATHS:
        return MAX_TOKEN_BODY
    if path.startswith("/api/"):
        return MAX_JSON_BODY
    return PAGE_FORM


def raise_limit(request: Request, limit: int) -> bool:
    """Lets this request's body be up to `limit` bytes if it declares a size within it, as a
    browser's form always does; else False, the limit unchanged: answer without reading it."""
    declared = _declared_size(request.scope)
    if declared is None or declared > limit:
        return False
    request.scope[LIMIT_KEY] = limit
    return True


def _declared_size(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length", "")
    if not (value.isascii() and value.isdigit()):
        return None
    # int() refuses 4300 digits and more; 19 digits are over any limit anyway.
    return int(value) if len(value) < 19 else 10**18


def _streamed(scope: Scope) -> bool:
    return any(name == b"transfer-encoding" for name, _ in scope["headers"])


# --- the middleware --------------------------------------------------------------------------


class BodyOverLimit(Exception):
    """Raised from `receive` in place of a body past the limit: the app must stop reading."""


class BodyLimits:
    """ASGI middleware: holds every request's body to its route's limit (see above)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_size(scope)
        if declared is None and not _streamed(scope):
            # HTTP/1.1 3.3.3: neither Content-Length nor Transfer-Encoding, no body (a GET).
            await self.app(scope, receive, send)
            return
        scope[LIMIT_KEY] = limit_for(scope["path"])
        over = declared is not None and declared > scope[LIMIT_KEY]
        if over and scope["path"] not in RAISED_BY_ROUTE:
            await _refuse(scope, receive, send)
            return
        received = 0
        refused = False  # the app was told to stop reading
        started = False  # the app's own answer had begun before that

        async def receiving() -> Message:
            nonlocal received, refused
            if declared is not None and declared > scope[LIMIT_KEY]:
                refused = True
                raise BodyOverLimit
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > scope[LIMIT_KEY]:
                    refused = True
                    raise BodyOverLimit
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the app's answer to a body it could not read: ours goes instead
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receiving, sending)
        except Exception:
            if not refused or started:
                raise
        if refused and not started:
            await _refuse(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send) -> None:
    """The 413 in the shape of the route's family: RFC 6749 5.2 at the OAuth endpoints, the
    API's envelope under /api/, a page elsewhere (with every page's security headers)."""
    path, limit = scope["path"], f"{scope[LIMIT_KEY] // 1024} KiB"
    message = f"The request body is too large: at most {limit}."
    response: Response
    if path in TOKEN_PATHS:
        response = OAuthError("invalid_request", message, status_code=413).response()
    elif path.startswith("/api/"):
        response = error_response(RequestTooLarge(message))
    else:
        response = render(
            Request(scope), "too_large.html", {"visitor": None, "limit": limit}, status_code=413
        )
    response.headers["Connection"] = "close"  # the rest of the body is not worth reading
    # As every answer of the app: the page gets the security headers, JSON passes untouched.
    await SecurityHeaders(response)(scope, receive, send)
