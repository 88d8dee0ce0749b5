"""Mail in the outbox: written with the change that causes it, sent by the outbox's delivery
(regdesk.outbox) through SMTP when one is configured.

A message waiting in the outbox keeps its recipient and subject readable (the admin area and
`regdesk mail list` show them) and the whole message sealed: encrypted under a key of its own
derived from the instance's secret key (security.derived_fernet), since its body may hold a
live link (a password reset, an address to confirm) that anyone reading the database could
follow. Only the sending channel opens it; once sent or given up, the sealed copy goes and
the heading stays.
"""

from __future__ import annotations

import datetime as dt
import json
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy.orm import Session

from regdesk.keys.store import instance_secret
from regdesk.mail.smtp import SmtpServer
from regdesk.outbox.service import Channel, enqueue
from regdesk.security import derived_fernet

CHANNEL = "mail"
GIVE_UP_AFTER = dt.timedelta(days=3)
_PARTS = ("to", "subject", "text", "html")


class UnreadableMail(ValueError):
    """A sealed message that does not open under the instance's key: altered in the
    database, or sealed under another secret key. Its delivery fails (the admin area shows
    why) and is tried again until the channel gives up, like any other failure."""


def _key(secret_key: str) -> Fernet:
    return derived_fernet(secret_key, "regdesk mail body")


def queue_mail(session: Session, *, to: str, subject: str, text: str, html: str) -> int:
    """A message to `to` with a plain-text and an HTML part, sent after the session commits:
    its id in the outbox."""
    message = {"to": to, "subject": subject, "text": text, "html": html}
    # The app's key for this database (keys.install), else REGDESK_SECRET_KEY, else the kept one.
    sealed = _key(instance_secret(session)).encrypt(json.dumps(message).encode()).decode()
    return enqueue(session, CHANNEL, {"to": to, "subject": subject, "sealed": sealed})


def open_mail(payload: dict[str, Any], secret_key: str) -> dict[str, str]:
    """The message as queue_mail was given it (to, subject, text, html); UnreadableMail when
    its sealed copy does not open, or does not match the heading the outbox shows. A message
    queued before mail was sealed (an older regdesk) holds its parts as they are: sent so."""
    if "sealed" not in payload and all(isinstance(payload.get(p), str) for p in _PARTS):
        return {part: payload[part] for part in _PARTS}
    try:
        message = json.loads(_key(secret_key).decrypt(str(payload["sealed"]).encode()))
    except (KeyError, InvalidToken, ValueError):
        raise UnreadableMail(
            "the message cannot be read: it was altered in the database, or sealed under "
            "another secret key"
        ) from None
    if not isinstance(message, dict) or any(not isinstance(message.get(p), str) for p in _PARTS):
        raise UnreadableMail("the message cannot be read: it is not one regdesk sealed")
    if (message["to"], message["subject"]) != (payload.get("to"), payload.get("subject")):
        raise UnreadableMail("the message's recipient or subject was altered in the database")
    return {part: message[part] for part in _PARTS}


def build_message(payload: dict[str, str], sender: str) -> EmailMessage:
    """The message as sent, from the message as opened (open_mail)."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = payload["to"]
    message["Subject"] = payload["subject"]
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    message.set_content(payload["text"])
    message.add_alternative(payload["html"], subtype="html")
    return message


def mail_channel(smtp_url: str, sender: str, secret_key: str) -> Channel:
    """The outbox's mail channel: each message opened with the instance's secret key, then
    sent through the SMTP server of `smtp_url`."""
    server = SmtpServer.from_url(smtp_url)

    def send(payload: dict[str, Any]) -> None:
        server.send(build_message(open_mail(payload, secret_key), sender))

    return Channel(CHANNEL, send, GIVE_UP_AFTER, kept=_heading)


def _heading(payload: dict[str, Any]) -> dict[str, Any]:
    """What the outbox keeps of a message once it is sent or given up: to whom and about what.
    The sealed message goes, and with it the links it carries (a password reset's)."""
    return {"to": payload.get("to"), "subject": payload.get("subject")}
