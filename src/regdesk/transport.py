"""Transport rules (api.md 5.1; decisions.md, Transport).

- `regdesk serve --tls-cert --tls-key` speaks TLS 1.2 and 1.3 only (`tls_context`).
- Plain HTTP is answered only on a loopback address, or from a trusted reverse proxy whose
  `X-Forwarded-Proto` says the client's request was HTTPS (uvicorn's ProxyHeadersMiddleware
  reads those headers from the configured proxies only). Anything else gets a 403 that says
  why. `/healthz` and `/readyz` are exempt: load balancers probe them directly and they tell
  nothing.
- Every response to an HTTPS request carries `Strict-Transport-Security`.
- Once REGDESK_PUBLIC_URL is set, a request naming another host in `Host` is refused (400), as
  Django's ALLOWED_HOSTS does: the issuer and every address we hand out come from that setting,
  never from a request (RFC 8414 3.3, RFC 9207), and a rebound DNS name gets nothing.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import ssl
from collections.abc import Callable, Collection

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HSTS = (b"strict-transport-security", b"max-age=31536000")
EXEMPT_PATHS = frozenset({"/healthz", "/readyz"})  # probes, which tell nothing


def _refusal(message: str) -> bytes:
    return json.dumps({"errors": {"transport": {"message": message}}}).encode()


REFUSAL = _refusal(
    "HTTPS is required. This service answers plain HTTP only on a loopback address or behind "
    "a trusted proxy that received HTTPS."
)
UNKNOWN_HOST = _refusal("This service does not answer for the host this request names.")


def tls_context(config: object, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """uvicorn's SSL context, with TLS 1.2 as the oldest version spoken (api.md 5.1)."""
    context = default()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


@functools.lru_cache(maxsize=4096)  # asked on every request; parsing the address costs more
def is_loopback(host: str | None) -> bool:
    """`localhost`, or a loopback address (127.0.0.0/8, ::1; IPv6 bare or in brackets, as a
    client address, a URL's host or a Host header has it). The one loopback test of regdesk."""
    if not host:
        return False
    host = host.lower().removeprefix("[").removesuffix("]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def proxy_list(setting: str) -> list[str]:
    return [entry.strip() for entry in setting.split(",") if entry.strip()]


class TransportPolicy:
    """Refuses plain HTTP from anywhere but loopback, and hosts other than `allowed_hosts`
    (None: any); adds HSTS to HTTPS answers."""

    def __init__(self, app: ASGIApp, allowed_hosts: Collection[str] | None = None) -> None:
        self.app = app
        self.allowed_hosts = None if allowed_hosts is None else frozenset(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exempt = scope["path"] in EXEMPT_PATHS
        if not exempt and not self._host_allowed(scope):
            await _refuse(send, 400, UNKNOWN_HOST)
            return
        if scope.get("scheme") == "https":
            await self.app(scope, receive, self._with_hsts(send))
            return
        client = scope.get("client")
        if exempt or is_loopback(client[0] if client else None):
            await self.app(scope, receive, send)
            return
        await _refuse(send, 403, REFUSAL)

    def _host_allowed(self, scope: Scope) -> bool:
        if self.allowed_hosts is None:
            return True
        host = next((v for k, v in scope["headers"] if k == b"host"), b"")
        return host.decode("latin-1").lower() in self.allowed_hosts

    @staticmethod
    def _with_hsts(send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), HSTS]
            await send(message)

        return sending


async def _refuse(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
