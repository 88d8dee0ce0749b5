"""`regdesk mail` (accounts.md, E-mail; operator.md, Command line): the outbox listed newest
first and never with a message's bodies; a test message queued and audited, and sent at once
when a mail server is configured. (The sends to a real SMTP server are tests/mail's.)"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from regdesk.audit.service import Actor
from regdesk.config import DEFAULT_PUBLIC_URL
from regdesk.db import read_session, write_session
from regdesk.formats import format_timestamp
from regdesk.mail.service import queue_mail
from regdesk.outbox.models import OutboxMessage
from tests.conftest import Cli
from tests.helpers import free_port
from tests.mail.support import opened_outbox

# In the bodies only: a link that will be a secret (a sign-in link, a password reset).
SECRET_TEXT = "https://reg.example.org/verify/text-secret-Jq4"
SECRET_HTML = "https://reg.example.org/verify/html-secret-Vm7"
SMTP_PASSWORD = "smtp-pass-Xw2"


@pytest.fixture(autouse=True)
def _no_mail_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the shell running the tests has set: a test that wants a server sets one."""
    monkeypatch.delenv("REGDESK_SMTP_URL", raising=False)


def queue(engine: Engine, *addresses: str) -> list[int]:
    """A message to each address, in this order (oldest first); their ids."""
    with write_session(engine) as session:
        for address in addresses:
            queue_mail(
                session,
                to=address,
                subject=f"Hello {address}",
                text=f"Follow {SECRET_TEXT}",
                html=f'<a href="{SECRET_HTML}">Follow</a>',
            )
    with read_session(engine) as session:
        return list(session.scalars(select(OutboxMessage.id).order_by(OutboxMessage.id)))


def listed(cli: Cli, *args: str) -> list[dict[str, Any]]:
    document = json.loads(cli.ok("mail", "list", "--json", *args).stdout)
    assert list(document) == ["data"]
    data: list[dict[str, Any]] = document["data"]
    return data


def outbox(engine: Engine) -> list[OutboxMessage]:
    with read_session(engine) as session:
        return list(session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))


def test_the_list_is_newest_first_in_the_documented_shape(cli: Cli, engine: Engine) -> None:
    first, second, third = queue(engine, "ann@example.org", "bob@example.org", "cy@example.org")
    sent_at = dt.datetime(2026, 7, 4, 18, 30, 1, 250000, tzinfo=dt.UTC)
    with write_session(engine) as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == second)
            .values(status="sent", attempts=2, sent_at=sent_at, last_error=None)
        )
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == first)
            .values(status="failed", attempts=9, last_error="550 no such mailbox")
        )
    created = {message.id: message.created_at for message in outbox(engine)}
    assert listed(cli) == [
        {
            "id": third,
            "status": "pending",
            "to": "cy@example.org",
            "subject": "Hello cy@example.org",
            "attempts": 0,
            "createdAt": format_timestamp(created[third]),
            "sentAt": None,
            "lastError": None,
        },
        {
            "id": second,
            "status": "sent",
            "to": "bob@example.org",
            "subject": "Hello bob@example.org",
            "attempts": 2,
            "createdAt": format_timestamp(created[second]),
            "sentAt": "2026-07-04T18:30:01.250Z",
            "lastError": None,
        },
        {
            "id": first,
            "status": "failed",
            "to": "ann@example.org",
            "subject": "Hello ann@example.org",
            "attempts": 9,
            "createdAt": format_timestamp(created[first]),
            "sentAt": None,
            "lastError": "550 no such mailbox",
        },
    ]
    lines = cli.ok("mail", "list").stdout.splitlines()
    assert [line.split()[:3] for line in lines] == [
        [str(third), "pending", "cy@example.org"],
        [str(second), "sent", "bob@example.org"],
        [str(first), "failed", "ann@example.org"],
    ]
    assert "550 no such mailbox" in lines[2]


def test_the_list_never_shows_a_message_s_bodies(cli: Cli, engine: Engine) -> None:
    queue(engine, "ann@example.org")
    for args in (["mail", "list"], ["mail", "list", "--json"]):
        shown = cli.ok(*args).stdout
        assert "ann@example.org" in shown
        assert "secret" not in shown, args


def test_the_list_filters_by_status_and_stops_at_the_limit(cli: Cli, engine: Engine) -> None:
    first, second, third = queue(engine, "ann@example.org", "bob@example.org", "cy@example.org")
    with write_session(engine) as session:
        session.execute(
            update(OutboxMessage).where(OutboxMessage.id == second).values(status="failed")
        )
    assert [m["id"] for m in listed(cli, "--status", "failed")] == [second]
    assert [m["id"] for m in listed(cli, "--status", "pending")] == [third, first]
    assert listed(cli, "--status", "sent") == []
    assert [m["id"] for m in listed(cli, "--limit", "2")] == [third, second]
    assert cli.ok("mail", "list", "--status", "sent").stdout.strip() == "no messages"
    refused = cli("mail", "list", "--status", "lost")
    assert refused.exit_code == 2
    assert "'lost' is not one of 'pending', 'sent', 'failed'" in refused.stderr


def test_send_test_without_a_mail_server_keeps_the_message_and_audits_it(
    cli: Cli, engine: Engine
) -> None:
    result = cli.ok("mail", "send-test", "--json", "Fox@Example.ORG")
    document = json.loads(result.stdout)
    [message] = outbox(engine)
    assert document == {"id": message.id, "status": "pending", "lastError": None}
    assert (message.status, message.attempts, message.last_error) == ("pending", 0, None)
    [opened] = opened_outbox(engine)
    assert opened["to"] == message.payload["to"] == "Fox@example.org"  # the e-mail rule's form
    assert opened["subject"] == message.payload["subject"] == "regdesk test message"
    for part in ("text", "html"):  # the house's two parts, naming the instance that sent it
        assert "regdesk mail send-test" in opened[part]
        assert DEFAULT_PUBLIC_URL in opened[part]
    audit = json.loads(cli.ok("audit", "--json", "--action", "mail.test_queued").stdout)
    [event] = audit["events"]
    assert event["actor"] == Actor.command_line().label
    assert (event["target_type"], event["target_id"]) == ("mail", str(message.id))
    assert event["details"] == {"to": "Fox@example.org"}

    text = cli.ok("mail", "send-test", "owl@example.org").stdout
    assert "kept in the outbox: REGDESK_SMTP_URL is not set" in text
    assert [m["status"] for m in listed(cli)] == ["pending", "pending"]


def test_send_test_to_a_mail_server_that_is_away_fails_and_keeps_the_message(
    cli: Cli, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = free_port()  # nothing listens there: the connection is refused
    monkeypatch.setenv("REGDESK_SMTP_URL", f"smtp://mailer:{SMTP_PASSWORD}@127.0.0.1:{closed}")
    result = cli("mail", "send-test", "--json", "owl@example.org")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    [message] = outbox(engine)
    assert (message.status, message.attempts) == ("pending", 1)
    assert message.last_error
    assert document == {"id": message.id, "status": "pending", "lastError": message.last_error}
    assert f"was not sent: {message.last_error}" in result.stderr
    assert "tried again later" in result.stderr
    assert SMTP_PASSWORD not in result.stdout + result.stderr + message.last_error

    again = cli("mail", "send-test", "hen@example.org")
    assert again.exit_code == 1
    assert again.stdout == ""
    assert "test message" in again.stderr
    assert "hen@example.org was not sent" in again.stderr


@pytest.mark.parametrize(
    "address", ["fox", "fox@", "fox@localhost", "fox@example.org\nBcc: all@example.org", ""]
)
def test_a_bad_address_is_refused_and_nothing_is_queued(
    cli: Cli, engine: Engine, address: str
) -> None:
    result = cli("mail", "send-test", "--json", address)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Invalid value for 'ADDRESS'" in result.stderr
    assert "is not a valid e-mail address" in result.stderr
    assert outbox(engine) == []
    audit = json.loads(cli.ok("audit", "--json", "--action", "mail.test_queued").stdout)
    assert audit["events"] == []
