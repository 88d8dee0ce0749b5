"""Transport rules (api.md 5.1; decisions.md, Transport).

- `regdesk serve --tls-cert --tls-key` speaks TLS 1.2 and 1.3 only (`tls_context`).
- Plain HTTP is answered only on a loopback address, or from a trusted reverse proxy whose
  `X-Forwarded-Proto` says the client's request was HTTPS (uvicorn's ProxyHeadersMiddleware
  reads those headers from the configured proxies only). Anything else gets a 403 that says
  why. `/healthz` is exempt: load balancers probe it directly and it tells nothing.
- Every response to an HTTPS request carries `Strict-Transport-Security`.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import ssl
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HSTS = (b"strict-transport-security", b"max-age=31536000")
EXEMPT_PATHS = frozenset({"/healthz"})
REFUSAL = json.dumps(
    {
        "errors": {
            "transport": {
                "message": "HTTPS is required. This service answers plain HTTP only on a "
                "loopback address or behind a trusted proxy that received HTTPS."
            }
        }
    }
).encode()


def tls_context(config: object, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """uvicorn's SSL context, with TLS 1.2 as the oldest version spoken (api.md 5.1)."""
    context = default()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


@functools.lru_cache(maxsize=4096)  # asked on every request; parsing the address costs more
def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def proxy_list(setting: str) -> list[str]:
    return [entry.strip() for entry in setting.split(",") if entry.strip()]


class TransportPolicy:
    """Refuses plain HTTP from anywhere but loopback; adds HSTS to HTTPS answers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("scheme") == "https":
            await self.app(scope, receive, self._with_hsts(send))
            return
        client = scope.get("client")
        if is_loopback(client[0] if client else None) or scope["path"] in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(REFUSAL)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": REFUSAL})

    @staticmethod
    def _with_hsts(send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), HSTS]
            await send(message)

        return sending
