"""The security headers of every answer (decisions.md, Transport), in one middleware.

A page may never be framed (the consent screen least of all: clickjacking), never tells
another site where the visitor was, and runs nothing but what it loads from this origin. Our
own pages use no script and no inline style at all, but for the two that use a security key,
which load webauthn.js from this origin (SCRIPT_POLICY). The API documentation pages that FastAPI
serves need an inline script to start, so they get the framing rules but not `default-src`.
No answer of the API is kept by a cache (`Cache-Control: no-store`): they carry people's data
and tokens (ASVS V8.2.1; RFC 6749 5.1 for the token endpoint's).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_POLICY = (
    "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# The pages that use a security key (WebAuthn needs the browser's API) load one script of ours,
# and nothing inline: they bring this policy, every other page keeps `script-src 'none'`.
SCRIPT_POLICY = PAGE_POLICY.replace("script-src 'none'", "script-src 'self'")
DOCS_POLICY = "frame-ancestors 'none'; object-src 'none'; base-uri 'self'"
# Where FastAPIOffline serves the API documentation (its defaults, which create_app keeps).
API_DOCS_PATHS = ("/docs", "/docs/oauth2-redirect", "/redoc")
HTML_HEADERS = {
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
_NOT_IN_A_SOURCE = frozenset(" \t\r\n;,'\"")  # would end or split a CSP source expression


def policy_with_form_target(address: str) -> str:
    """PAGE_POLICY, letting forms also lead to `address`'s origin.

    Browsers apply `form-action` to the redirects that follow a form: the consent form's answer
    is a redirect to the application, which `'self'` alone would block.
    """
    parts = urlsplit(address)
    if parts.scheme in ("http", "https") and parts.netloc:
        source = f"{parts.scheme}://{parts.netloc}"
    else:
        source = f"{parts.scheme}:"
    if not parts.scheme or _NOT_IN_A_SOURCE & set(source):
        return PAGE_POLICY
    return PAGE_POLICY.replace("form-action 'self'", f"form-action 'self' {source}")


class SecurityHeaders:
    """ASGI middleware: adds the headers above to every `text/html` response, `no-store` to
    every answer under /api/, and `nosniff` to every other answer (downloads)."""

    def __init__(self, app: ASGIApp, docs_paths: Iterable[str] = API_DOCS_PATHS) -> None:
        self.app = app
        self.docs_paths = frozenset(docs_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # A page may bring its own policy (the consent screen does); else the one for all.
        policy = DOCS_POLICY if scope["path"] in self.docs_paths else PAGE_POLICY
        api = scope["path"].startswith("/api/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if api:
                    headers.setdefault("Cache-Control", "no-store")
                elif headers.get("content-type", "").startswith("text/html"):
                    for name, value in HTML_HEADERS.items():
                        headers.setdefault(name, value)
                    headers.setdefault("Content-Security-Policy", policy)
                else:  # a download (a CSV, an export) is taken for what it says it is
                    headers.setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        await self.app(scope, receive, send_with_headers)
