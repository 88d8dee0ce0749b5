"""Where a webhook may go (events.md, Private targets): an `https` URL whose host resolves to
public addresses only; `http`, and private addresses, only when the operator allows private
targets (REGDESK_WEBHOOKS_ALLOW_PRIVATE=on), and then `http` on loopback only.

Checked when an endpoint is added and again at each delivery, after DNS: the delivery then
connects to the very address it checked (`Target.address`), so a name that resolves again to
another address between the check and the connection (DNS rebinding) changes nothing.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from regdesk.transport import is_loopback

MAX_URL = 2000  # the column's length

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(ValueError):
    """The URL is not one regdesk sends to (the message says why, for a page or the CLI)."""


@dataclass(frozen=True)
class Target:
    url: str  # as registered
    host: str  # its host name, for the Host header and TLS (SNI, certificate)
    address: Address  # the checked address to connect to
    port: int

    def pinned_url(self) -> str:
        """The URL with its host replaced by the checked address."""
        parts = urlsplit(self.url)
        host = f"[{self.address}]" if self.address.version == 6 else str(self.address)
        return urlunsplit(parts._replace(netloc=f"{host}:{self.port}"))


def is_public(address: Address) -> bool:
    """Python's `ipaddress` properties: loopback, private, link-local (the cloud metadata
    address, 169.254.169.254), multicast, reserved and unspecified are not public; nor is an
    IPv4 address mapped into IPv6 that is not."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return is_public(address.ipv4_mapped)
    return address.is_global and not (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def check_url(url: str) -> str:
    """The URL's form alone (no DNS): absolute http(s), a host, no credentials, no fragment."""
    url = url.strip()
    if not url:
        raise TargetRefused("enter the endpoint's URL")
    if len(url) > MAX_URL:
        raise TargetRefused(f"the URL may be at most {MAX_URL} characters long")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        raise TargetRefused("this is not a URL") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise TargetRefused("the URL must be absolute: https://tools.example.org/hooks")
    if parts.username or parts.password:
        raise TargetRefused("the URL may not hold a user name or password")
    if parts.fragment:
        raise TargetRefused("the URL may not have a #fragment")
    return url


def resolve(url: str, *, allow_private: bool) -> Target:
    """The URL checked (`check_url`), its host resolved, and every address it resolves to
    checked: the first one is where to connect."""
    url = check_url(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme == "http" and not (allow_private and is_loopback(host)):
        raise TargetRefused(
            "the URL must use https (http only to a loopback address, when private targets "
            "are allowed)"
        )
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise TargetRefused(f"{host} does not resolve to an address") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    if not addresses:
        raise TargetRefused(f"{host} does not resolve to an address")
    if not allow_private:
        private = [address for address in addresses if not is_public(address)]
        if private:
            raise TargetRefused(
                f"{host} resolves to {private[0]}, a private address (loopback, private, "
                "link-local or reserved): refused unless REGDESK_WEBHOOKS_ALLOW_PRIVATE=on"
            )
    if parts.scheme == "http" and not all(address.is_loopback for address in addresses):
        raise TargetRefused(f"plain http only to loopback, and {host} is not")
    return Target(url, host, addresses[0], port)
