"""A message waiting in the outbox is sealed (mail/service.py): its row shows to whom and about
what, never its body, whose links are secrets; only the sending channel opens it, under the
instance's secret key. A row altered in the database, or sealed under another key, is a
failure recorded on that message, and the others still go."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from sqlalchemy import Engine, select, text, update

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import read_session, utcnow, write_session
from regdesk.mail.service import UnreadableMail, mail_channel, open_mail, queue_mail
from regdesk.outbox.models import OutboxMessage
from regdesk.outbox.service import claim, deliver, enqueue, record_failure
from tests.client import TestClient
from tests.conftest import Cli
from tests.helpers import database_text, free_port
from tests.mail.support import opened_outbox, secret_key, smtp_server

SENDER = "Convention <reg@con.example.org>"
LINK = "https://reg.example.org/password/reset/body-secret-Wq8Zr2"
WORDS = "Follow this link within the hour"
OTHER_KEY = "the secret key of another instance, long enough"


def queue(engine: Engine, *addresses: str) -> list[int]:
    with write_session(engine) as session:
        return [
            queue_mail(
                session,
                to=address,
                subject=f"Hello {address}",
                text=f"{WORDS}: {LINK}",
                html=f'<p>{WORDS}: <a href="{LINK}">set a new password</a></p>',
            )
            for address in addresses
        ]


def raw_payloads(engine: Engine) -> list[str]:
    """The payload column as the database holds it, read by plain SQL."""
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT payload FROM outbox_messages ORDER BY id"))
        return [value if isinstance(value, str) else json.dumps(value) for (value,) in rows]


def alter(engine: Engine, message_id: int, change: dict[str, Any]) -> None:
    """What someone who can write to the database but holds no key would do to a row."""
    with read_session(engine) as session:
        payload = dict(session.get_one(OutboxMessage, message_id).payload)
    with write_session(engine) as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == message_id)
            .values(payload={**payload, **change})
        )


def flipped(sealed: str) -> str:
    """The sealed text with one character of its ciphertext changed."""
    middle = len(sealed) // 2
    return sealed[:middle] + ("A" if sealed[middle] != "A" else "B") + sealed[middle + 1 :]


def statuses(engine: Engine) -> list[tuple[str, str | None]]:
    with read_session(engine) as session:
        rows = session.execute(
            select(OutboxMessage.status, OutboxMessage.last_error).order_by(OutboxMessage.id)
        )
        return [(status, error) for status, error in rows]


# --- at rest ---------------------------------------------------------------------------------


def test_the_row_holds_no_body_and_no_link(engine: Engine) -> None:
    queue(engine, "fox@example.org")
    [raw] = raw_payloads(engine)
    assert LINK not in raw
    assert "body-secret" not in raw
    assert WORDS not in raw
    assert "set a new password" not in raw
    stored = json.loads(raw)
    assert set(stored) == {"to", "subject", "sealed"}
    assert (stored["to"], stored["subject"]) == ("fox@example.org", "Hello fox@example.org")
    assert "body-secret" not in database_text(engine)  # nowhere, the raw SQLite file included


def test_the_sealed_message_opens_whole_under_the_instance_key_only(engine: Engine) -> None:
    queue(engine, "fox@example.org")
    [message] = opened_outbox(engine)
    assert message == {
        "to": "fox@example.org",
        "subject": "Hello fox@example.org",
        "text": f"{WORDS}: {LINK}",
        "html": f'<p>{WORDS}: <a href="{LINK}">set a new password</a></p>',
    }
    with read_session(engine) as session:
        [payload] = session.scalars(select(OutboxMessage.payload))
    with pytest.raises(UnreadableMail, match="another secret key"):
        open_mail(payload, OTHER_KEY)


def test_two_messages_of_the_same_words_are_sealed_differently(engine: Engine) -> None:
    """Fernet's random IV: equal bodies do not show as equal rows."""
    queue(engine, "fox@example.org", "fox@example.org")
    first, second = (json.loads(raw)["sealed"] for raw in raw_payloads(engine))
    assert first != second


def test_the_channel_sends_the_whole_message(engine: Engine) -> None:
    with smtp_server() as (inbox, port):
        queue(engine, "fox@example.org")
        channel = mail_channel(f"smtp://127.0.0.1:{port}", SENDER, secret_key(engine))
        assert deliver(engine, channel).sent == 1
        [message] = inbox.wait_for(1)
    assert (message["To"], message["Subject"]) == ("fox@example.org", "Hello fox@example.org")
    found = {part.get_content_type(): part.get_payload(decode=True) for part in message.walk()}
    assert f"{WORDS}: {LINK}".encode() in found["text/plain"]
    assert f'<a href="{LINK}">'.encode() in found["text/html"]
    assert [json.loads(raw) for raw in raw_payloads(engine)] == [
        {"to": "fox@example.org", "subject": "Hello fox@example.org"}  # sent: the seal goes
    ]


def test_a_message_queued_before_mail_was_sealed_is_still_sent(engine: Engine) -> None:
    """An upgrade finds mail an older regdesk queued with its parts as they are: it goes, once,
    whole, and only its heading stays."""
    plain = {"to": "owl@example.org", "subject": "Before", "text": LINK, "html": f"<p>{LINK}</p>"}
    with write_session(engine) as session:
        enqueue(session, "mail", plain)
    with smtp_server() as (inbox, port):
        channel = mail_channel(f"smtp://127.0.0.1:{port}", SENDER, secret_key(engine))
        assert deliver(engine, channel).sent == 1
        [message] = inbox.wait_for(1)
    assert (message["To"], message["Subject"]) == ("owl@example.org", "Before")
    found = {part.get_content_type(): part.get_payload(decode=True) for part in message.walk()}
    assert LINK.encode() in found["text/plain"]
    assert [json.loads(raw) for raw in raw_payloads(engine)] == [
        {"to": "owl@example.org", "subject": "Before"}
    ]


# --- altered in the database -------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda sealed: {"sealed": flipped(sealed)}, "altered in the database"),
        (lambda sealed: {"sealed": sealed[: len(sealed) // 2]}, "altered in the database"),
        (lambda sealed: {"sealed": "not a sealed message"}, "altered in the database"),
        (lambda sealed: {"sealed": None}, "altered in the database"),
        (lambda sealed: {"to": "mallory@evil.example"}, "recipient or subject was altered"),
        (lambda sealed: {"subject": "Something else"}, "recipient or subject was altered"),
    ],
    ids=["flipped", "cut", "replaced", "removed", "other-recipient", "other-subject"],
)
def test_an_altered_row_is_a_recorded_failure_and_the_others_still_go(
    engine: Engine, change: Any, words: str
) -> None:
    altered, _ = queue(engine, "fox@example.org", "otter@example.org")
    with read_session(engine) as session:
        sealed = session.get_one(OutboxMessage, altered).payload["sealed"]
    alter(engine, altered, change(sealed))
    with smtp_server() as (inbox, port):
        channel = mail_channel(f"smtp://127.0.0.1:{port}", SENDER, secret_key(engine))
        done = deliver(engine, channel)
        [message] = inbox.wait_for(1)
    assert (done.sent, done.retrying, done.failed) == (1, 1, 0)
    assert message["To"] == "otter@example.org"
    assert [to for _, to, _ in inbox.messages] == [["otter@example.org"]]  # not to mallory
    (status, error), sent = statuses(engine)
    assert sent == ("sent", None)
    assert status == "pending"  # tried again, as any failure, until the channel gives up
    assert error is not None
    assert words in error
    assert LINK not in error

    # Given up at last: failed, its heading kept, what was sealed gone.
    [claimed] = claim(engine, "mail", limit=1, now=utcnow() + dt.timedelta(days=4))
    final = record_failure(engine, claimed, channel, error, now=utcnow() + dt.timedelta(days=4))
    assert final
    assert statuses(engine)[0][0] == "failed"
    assert "sealed" not in json.loads(raw_payloads(engine)[0])


def test_a_message_sealed_by_another_instance_is_a_recorded_failure(
    cli: Cli, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process given another secret key (REGDESK_SECRET_KEY set on one and not the other)."""
    monkeypatch.delenv("REGDESK_SMTP_URL", raising=False)  # queued, not sent
    cli.ok("--secret-key", OTHER_KEY, "mail", "send-test", "fox@example.org")
    channel = mail_channel(f"smtp://127.0.0.1:{free_port()}", SENDER, secret_key(engine))
    done = deliver(engine, channel)
    assert (done.sent, done.retrying) == (0, 1)
    [(status, error)] = statuses(engine)
    assert status == "pending"
    assert error is not None
    assert "sealed under another secret key" in error


def test_a_server_process_records_an_altered_row_and_keeps_sending(
    engine: Engine, database_url: str
) -> None:
    """The delivery thread of `regdesk serve` meets the altered row, notes it, and goes on."""
    altered, _ = queue(engine, "fox@example.org", "otter@example.org")
    alter(engine, altered, {"sealed": "gAAAA" + "x" * 100})
    with smtp_server() as (inbox, port):
        settings = load_settings(
            database_url=database_url,
            public_url="https://testserver",
            smtp_url=f"smtp://127.0.0.1:{port}",
            mail_from=SENDER,
        )
        with TestClient(create_app(settings), base_url="https://testserver"):
            [first] = inbox.wait_for(1)
            queue(engine, "hare@example.org")  # the thread is still there to send it
            _, second = inbox.wait_for(2)
    assert (first["To"], second["To"]) == ("otter@example.org", "hare@example.org")
    (status, error), *others = statuses(engine)
    assert status == "pending"
    assert error is not None
    assert "altered in the database" in error
    assert others == [("sent", None), ("sent", None)]


def test_regdesk_mail_send_test_seals_under_the_key_it_is_given(
    cli: Cli, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--secret-key` is the instance's key for that command: sealed and opened under it."""
    with smtp_server() as (inbox, port):
        monkeypatch.setenv("REGDESK_SMTP_URL", f"smtp://127.0.0.1:{port}")
        cli.ok("--secret-key", OTHER_KEY, "mail", "send-test", "fox@example.org")
        [message] = inbox.wait_for(1)
    assert message["To"] == "fox@example.org"
    assert statuses(engine) == [("sent", None)]
