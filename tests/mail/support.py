"""A real SMTP server on a loopback port (aiosmtpd), with or without STARTTLS and a password,
keeping what it receives for the tests to read; the mail waiting in the outbox opened as the
channel opens it, under the instance's secret key (the one a test database generates, as the
app's)."""

from __future__ import annotations

import datetime as dt
import email
import ipaddress
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import Engine, select

from regdesk.db import read_session
from regdesk.db.instance import instance_secret_key
from regdesk.mail.service import open_mail
from regdesk.outbox.models import OutboxMessage
from tests.helpers import free_port

USER, PASSWORD = "regdesk", "smtp-pass-Kq9w"


@dataclass
class Inbox:
    """What the server accepted: each message as parsed, with its envelope."""

    messages: list[tuple[str, list[str], Message]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        parsed = email.message_from_bytes(envelope.content)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), parsed))
        return "250 OK"

    def wait_for(self, count: int, seconds: float = 15.0) -> list[Message]:
        deadline = time.monotonic() + seconds
        while len(self.messages) < count:
            assert time.monotonic() < deadline, f"{len(self.messages)} of {count} arrived"
            time.sleep(0.05)
        return [message for _, _, message in self.messages]


def certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own authority): (cert, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _authenticate(
    server: Any, session: Any, envelope: Any, mechanism: str, data: Any
) -> AuthResult:
    good = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=good)


@contextmanager
def smtp_server(
    port: int | None = None, *, tls: tuple[Path, Path] | None = None, password: bool = False
) -> Iterator[tuple[Inbox, int]]:
    """The server on `port` (a free one by default): with `tls` (cert, key) it offers
    STARTTLS and requires it; with `password`, it requires USER and PASSWORD."""
    inbox = Inbox()
    context = None
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*tls)
    port = port or free_port()
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=port,
        tls_context=context,
        require_starttls=tls is not None,
        authenticator=_authenticate if password else None,
        auth_required=password,
        auth_require_tls=tls is not None,
    )
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


# --- the outbox, as its channel reads it -----------------------------------------------------


def secret_key(engine: Engine) -> str:
    """The instance's secret key of the test's database: the app's, with no REGDESK_SECRET_KEY."""
    return instance_secret_key(engine, None)


def opened_outbox(engine: Engine) -> list[dict[str, str]]:
    """Each pending message as it was queued (to, subject, text, html), oldest first."""
    key = secret_key(engine)
    with read_session(engine) as session:
        payloads = session.scalars(
            select(OutboxMessage.payload)
            .where(OutboxMessage.payload["sealed"].as_string().is_not(None))
            .order_by(OutboxMessage.id)
        )
        return [open_mail(payload, key) for payload in payloads]
