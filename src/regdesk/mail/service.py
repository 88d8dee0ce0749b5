"""Mail in the outbox: written with the change that causes it, sent by the outbox's delivery
(regdesk.outbox) through SMTP when one is configured."""

from __future__ import annotations

import datetime as dt
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from sqlalchemy.orm import Session

from regdesk.mail.smtp import SmtpServer
from regdesk.outbox.service import Channel, enqueue

CHANNEL = "mail"
GIVE_UP_AFTER = dt.timedelta(days=3)


def queue_mail(session: Session, *, to: str, subject: str, text: str, html: str) -> int:
    """A message to `to` with a plain-text and an HTML part, sent after the session commits:
    its id in the outbox."""
    return enqueue(session, CHANNEL, {"to": to, "subject": subject, "text": text, "html": html})


def build_message(payload: dict[str, Any], sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = payload["to"]
    message["Subject"] = payload["subject"]
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    message.set_content(payload["text"])
    message.add_alternative(payload["html"], subtype="html")
    return message


def mail_channel(smtp_url: str, sender: str) -> Channel:
    """The outbox's mail channel: each message through the SMTP server of `smtp_url`."""
    server = SmtpServer.from_url(smtp_url)

    def send(payload: dict[str, Any]) -> None:
        server.send(build_message(payload, sender))

    return Channel(CHANNEL, send, GIVE_UP_AFTER, kept=_heading)


def _heading(payload: dict[str, Any]) -> dict[str, Any]:
    """What the outbox keeps of a message once it is sent or given up: to whom and about what.
    Its parts go, and with them the links they carry (a password reset's)."""
    return {"to": payload["to"], "subject": payload["subject"]}
