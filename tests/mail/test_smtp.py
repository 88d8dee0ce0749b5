"""Mail through a real SMTP server (aiosmtpd on loopback): in clear to a relay, with STARTTLS
and a password, never a password in clear; a server that is down, then up, still gets every
message; a server process delivers what a commit wrote to its outbox by itself."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import read_session, utcnow, write_session
from regdesk.mail.service import mail_channel, queue_mail
from regdesk.mail.smtp import SmtpServer, SmtpUrlError
from regdesk.outbox.models import OutboxMessage
from regdesk.outbox.runner import POLL
from regdesk.outbox.service import Channel, claim, deliver, record_failure
from tests.client import TestClient
from tests.helpers import database_text, free_port
from tests.mail.support import PASSWORD, USER, certificate, secret_key, smtp_server

SENDER = "Convention <reg@con.example.org>"


def queue(engine: Engine, *addresses: str) -> None:
    with write_session(engine) as session:
        for address in addresses:
            queue_mail(
                session,
                to=address,
                subject=f"Hello {address}",
                text=f"Plain words for {address}.",
                html=f"<p>Words for <b>{address}</b>.</p>",
            )


def channel_to(engine: Engine, url: str) -> Channel:
    """The mail channel of a server process on the test's database."""
    return mail_channel(url, SENDER, secret_key(engine))


def statuses(engine: Engine) -> list[tuple[str, int, str | None]]:
    with read_session(engine) as session:
        rows = session.execute(
            select(OutboxMessage.status, OutboxMessage.attempts, OutboxMessage.last_error).order_by(
                OutboxMessage.id
            )
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


def time_passes(engine: Engine) -> None:
    """The retries' wait is over (the tests do not sleep through it)."""
    with write_session(engine) as session:
        session.execute(update(OutboxMessage).values(due_at=utcnow()))


def test_a_relay_in_clear_gets_both_parts_from_the_configured_sender(engine: Engine) -> None:
    with smtp_server() as (inbox, port):
        queue(engine, "fox@example.org")
        done = deliver(engine, channel_to(engine, f"smtp://127.0.0.1:{port}"))
        [message] = inbox.wait_for(1)
    assert done.sent == 1
    assert (message["From"], message["To"]) == (SENDER, "fox@example.org")
    assert message["Subject"] == "Hello fox@example.org"
    assert message["Message-ID"]
    assert message["Date"]
    parts = {part.get_content_type(): part.get_payload(decode=True) for part in message.walk()}
    assert b"Plain words for fox@example.org." in parts["text/plain"]
    assert b"<b>fox@example.org</b>" in parts["text/html"]
    assert inbox.messages[0][1] == ["fox@example.org"]
    assert statuses(engine) == [("sent", 1, None)]
    # Sent, the message's parts (and any link in them) are gone; to whom and about what stay.
    assert payloads(engine) == [{"to": "fox@example.org", "subject": "Hello fox@example.org"}]


def test_a_message_given_up_keeps_no_part_either(engine: Engine) -> None:
    queue(engine, "fox@example.org")
    channel = channel_to(engine, f"smtp://127.0.0.1:{free_port()}")  # nobody listens
    [claimed] = claim(engine, "mail", limit=1, now=utcnow() + dt.timedelta(days=4))
    assert record_failure(engine, claimed, channel, "refused", now=utcnow() + dt.timedelta(days=4))
    assert payloads(engine) == [{"to": "fox@example.org", "subject": "Hello fox@example.org"}]


def payloads(engine: Engine) -> list[dict[str, str]]:
    with read_session(engine) as session:
        return list(session.scalars(select(OutboxMessage.payload).order_by(OutboxMessage.id)))


def test_starttls_and_a_password(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the test's own authority
    with smtp_server(tls=(cert, key), password=True) as (inbox, port):
        queue(engine, "otter@example.org")
        url = f"smtp://{USER}:{PASSWORD}@127.0.0.1:{port}"
        assert deliver(engine, channel_to(engine, url)).sent == 1
        [message] = inbox.wait_for(1)
    assert message["To"] == "otter@example.org"


def test_a_certificate_nobody_vouches_for_is_refused(engine: Engine, tmp_path: Path) -> None:
    cert, key = certificate(tmp_path)  # SSL_CERT_FILE not set: the system's authorities
    with smtp_server(tls=(cert, key)) as (inbox, port):
        queue(engine, "otter@example.org")
        done = deliver(engine, channel_to(engine, f"smtp://127.0.0.1:{port}"))
    assert (done.sent, done.retrying, inbox.messages) == (0, 1, [])
    [(status, _, error)] = statuses(engine)
    assert status == "pending"
    assert error is not None
    assert "certificate" in error.lower()


def test_a_password_is_never_sent_in_clear_nor_kept(engine: Engine) -> None:
    """A server that offers no STARTTLS gets no password: the message waits, and the password
    is in no error, no row, no representation of the server."""
    with smtp_server() as (inbox, port):
        queue(engine, "wolf@example.org")
        url = f"smtp://{USER}:{PASSWORD}@127.0.0.1:{port}"
        done = deliver(engine, channel_to(engine, url))
    assert (done.sent, inbox.messages) == (0, [])
    [(_, _, error)] = statuses(engine)
    assert error is not None
    assert "STARTTLS" in error
    assert PASSWORD not in database_text(engine)
    assert PASSWORD not in repr(SmtpServer.from_url(url))


def test_a_server_that_is_down_then_up_gets_every_message(engine: Engine) -> None:
    port = free_port()  # nothing listens there yet
    channel = channel_to(engine, f"smtp://127.0.0.1:{port}")
    addresses = [f"person{n}@example.org" for n in range(5)]
    queue(engine, *addresses)
    done = deliver(engine, channel)
    assert (done.sent, done.retrying) == (0, 5)
    assert {status for status, _, _ in statuses(engine)} == {"pending"}
    with smtp_server(port) as (inbox, _):
        time_passes(engine)
        assert deliver(engine, channel).sent == 5
        received = inbox.wait_for(5)
        time_passes(engine)
        assert deliver(engine, channel).sent == 0  # each sent once
    assert sorted(message["To"] for message in received) == addresses
    assert statuses(engine) == [("sent", 2, None)] * 5


def test_a_server_process_sends_what_a_commit_wrote_without_being_asked(
    engine: Engine, database_url: str
) -> None:
    with smtp_server() as (inbox, port):
        settings = load_settings(
            database_url=database_url,
            public_url="https://testserver",
            smtp_url=f"smtp://127.0.0.1:{port}",
            mail_from=SENDER,
        )
        with TestClient(create_app(settings), base_url="https://testserver"):
            queue(engine, "hare@example.org")
            [message] = inbox.wait_for(1, seconds=POLL / 2)  # the commit woke it, no poll
    assert message["To"] == "hare@example.org"
    assert statuses(engine) == [("sent", 1, None)]


@pytest.mark.parametrize(
    "url",
    ["http://mail.example.org", "smtp://", "smtp://host:port", "smtps:///nohost"],
)
def test_an_smtp_url_regdesk_cannot_use_is_refused_at_start(url: str) -> None:
    with pytest.raises(SmtpUrlError):
        SmtpServer.from_url(url)
    with pytest.raises(ValueError, match="REGDESK_SMTP_URL"):
        load_settings(smtp_url=url)


def test_the_default_ports() -> None:
    assert SmtpServer.from_url("smtp://mail.example.org").port == 587
    assert SmtpServer.from_url("smtps://mail.example.org").port == 465
    assert SmtpServer.from_url("smtps://u:p%40ss@mail.example.org").password == "p@ss"
    assert SmtpServer.from_url("smtps://u:p@mail.example.org:2465").address == (
        "smtps://mail.example.org:2465"
    )
    assert dt.timedelta(days=3) == mail_channel("smtp://h", SENDER, "any secret key").give_up_after
