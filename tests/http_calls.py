"""httpx for tests that speak to a real server, without reading the CA bundle at every call.

Each `httpx.Client`, and so each `httpx.get` and `httpx.post` (a client of its own per call),
makes a TLS context and reads certifi's bundle of authorities into it: about 16 ms of CPU,
whatever the address's scheme. The suite polls servers for health and sends requests one call
at a time by the thousand, and that read was a minute of its CPU. These stand for httpx's own
functions, each call still a client and a connection of its own, verifying TLS with one context
per process (the same authorities); a test that passes `verify` gets its own.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def _verifying(options: dict[str, Any]) -> dict[str, Any]:
    return {"verify": tls_context(), **options}


def request(method: str, url: str, **options: Any) -> httpx.Response:
    return httpx.request(method, url, **_verifying(options))


def get(url: str, **options: Any) -> httpx.Response:
    return httpx.get(url, **_verifying(options))


def post(url: str, **options: Any) -> httpx.Response:
    return httpx.post(url, **_verifying(options))


def client(**options: Any) -> httpx.Client:
    return httpx.Client(**_verifying(options))
