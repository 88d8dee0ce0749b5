"""Private targets (events.md): refused at registration and again at each delivery, after DNS,
unless REGDESK_WEBHOOKS_ALLOW_PRIVATE=on."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest
from sqlalchemy import Engine
from tests.web.support import make_user
from tests.webhooks.support import ISSUER, Receiver, application, deliveries, endpoint

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.errors import Invalid
from regdesk.outbox.service import deliver
from regdesk.webhooks.delivery import Sender
from regdesk.webhooks.endpoints import add_endpoint
from regdesk.webhooks.targets import TargetRefused, is_public, resolve


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("10.1.2.3", False),
        ("192.168.1.1", False),
        ("172.16.0.1", False),
        ("169.254.169.254", False),  # the cloud metadata address
        ("fe80::1", False),
        ("224.0.0.1", False),
        ("0.0.0.0", False),  # noqa: S104 (an address checked, not bound)
        ("240.0.0.1", False),
        ("100.64.0.1", False),
        ("::ffff:127.0.0.1", False),
        ("fc00::1", False),
    ],
)
def test_which_addresses_are_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


def resolving(monkeypatch: pytest.MonkeyPatch, name: str, address: str) -> None:
    """`name` resolves to `address` (as a DNS record of the organizer's could)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == name:
            return real(address, port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_name_resolving_to_loopback_is_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolving(monkeypatch, "hooks.example.org", "127.0.0.1")
    with pytest.raises(TargetRefused, match=r"resolves to 127\.0\.0\.1"):
        resolve("https://hooks.example.org/in", allow_private=False)
    assert resolve("https://hooks.example.org/in", allow_private=True).address == (
        ipaddress.ip_address("127.0.0.1")
    )


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1/in", "ftp://example.org/", "https://u:p@example.org/", "/relative"],
)
def test_urls_that_are_not_https_targets_are_refused(url: str) -> None:
    with pytest.raises(TargetRefused):
        resolve(url, allow_private=False)


def test_plain_http_only_to_loopback_even_when_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    resolving(monkeypatch, "intranet.example.org", "10.0.0.5")
    with pytest.raises(TargetRefused, match="https"):
        resolve("http://intranet.example.org/", allow_private=True)
    assert resolve("https://intranet.example.org/", allow_private=True).port == 443


def test_adding_an_endpoint_resolving_to_loopback_is_refused(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolving(monkeypatch, "hooks.example.org", "127.0.0.1")
    client_id = application(engine)
    with pytest.raises(Invalid) as refused, write_session(engine) as session:
        add_endpoint(
            session, Actor("test"), client_id, "https://hooks.example.org/", allow_private=False
        )
    assert "private address" in refused.value.errors["url"]


def test_a_delivery_is_refused_after_dns_when_private_targets_are_not_allowed(
    engine: Engine, receiver: Receiver
) -> None:
    """Added while allowed; the operator turned it off since: nothing is sent."""
    endpoint(engine, receiver.url)
    make_user(engine, "fox", password=None)
    strict = Sender(engine, issuer=ISSUER, allow_private=False)
    try:
        assert deliver(engine, strict.channel()).retrying == 1
    finally:
        strict.close()
    assert receiver.received == []
    [logged] = deliveries(engine)
    assert logged.status_code is None
    assert logged.error is not None
    assert logged.error.startswith("refused:")
