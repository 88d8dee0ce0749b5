"""Where the pages may send a visitor next: never to a place an attacker chose (open redirect).

Browsers forgive a lot in a URL (a backslash read as a slash, tabs and newlines dropped), so
anything with a backslash, whitespace or a control character is refused outright rather than
parsed and hoped about.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

MAX_NEXT = 16 * 1024  # an authorize address with a long state fits
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _plain(value: str) -> bool:
    return "\\" not in value and all(0x20 < ord(c) < 0x7F for c in value)


def local_path(next_: str | None) -> str | None:
    """`next_` when it is a path on this site (`/account`, `/oauth/authorize?...`), else None.

    `//evil.example` and `/\\evil.example` start with a slash but lead to another host.
    """
    if not next_ or len(next_) > MAX_NEXT or not _plain(next_):
        return None
    if not next_.startswith("/") or next_.startswith("//"):
        return None
    return next_


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an absolute http(s) address, or None for anything else."""
    if len(url) > MAX_NEXT or not _plain(url):
        return None
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def same_origin_as_any(next_: str | None, registered: Iterable[str]) -> str | None:
    """`next_` when its origin is the origin of one of `registered` (operator.md, /oauth/logout)."""
    wanted = origin(next_) if next_ else None
    if wanted is None:
        return None
    return next_ if any(origin(uri) == wanted for uri in registered) else None
