"""`regdesk mail`: the mail outbox (accounts.md, E-mail; operator.md, Command line). Without
REGDESK_SMTP_URL every message stays in the outbox, and `mail list` is where to read it."""

from __future__ import annotations

from typing import Any

import click

from regdesk import keys
from regdesk.audit.service import Actor, record_event
from regdesk.cli import Context, emit, json_option, main, pass_context
from regdesk.db.instance import instance_secret_key
from regdesk.formats import format_timestamp
from regdesk.mail.outbox_view import STATUSES, Mail, find_mail, list_mail
from regdesk.mail.service import mail_channel, queue_mail
from regdesk.outbox.models import OutboxStatus
from regdesk.outbox.service import deliver
from regdesk.users.fields import normalize_email
from regdesk.web.mail_templates import render_mail

TEST_SUBJECT = "regdesk test message"


def mail_document(mail: Mail) -> dict[str, Any]:
    return {
        "id": mail.id,
        "status": mail.status,
        "to": mail.to,
        "subject": mail.subject,
        "attempts": mail.attempts,
        "createdAt": format_timestamp(mail.created_at),
        "sentAt": format_timestamp(mail.sent_at) if mail.sent_at else None,
        "lastError": mail.last_error,
    }


def mail_text(mail: Mail) -> str:
    sent = format_timestamp(mail.sent_at) if mail.sent_at else "-"
    return "  ".join(
        (
            f"{mail.id:>6}",
            f"{mail.status:<7}",
            mail.to,
            repr(mail.subject),
            f"attempts {mail.attempts}",
            f"created {format_timestamp(mail.created_at)}",
            f"sent {sent}",
            f"error {mail.last_error}" if mail.last_error else "",
        )
    ).rstrip()


def email_address(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return normalize_email(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@main.group()
def mail() -> None:
    """The mail outbox: what regdesk sent, is sending, or gave up on."""


@mail.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only the messages in this state.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000))
@json_option
@pass_context
def mail_list(context: Context, status: str | None, limit: int, as_json: bool) -> None:
    """The messages, newest first, without their bodies."""
    with context.reading() as session:
        page = list_mail(session, status=status, limit=limit)
    emit(
        as_json,
        {"data": [mail_document(message) for message in page.messages]},
        "\n".join(mail_text(message) for message in page.messages) or "no messages",
    )


@mail.command("send-test")
@click.argument("address", callback=email_address)
@json_option
@pass_context
def mail_send_test(context: Context, address: str, as_json: bool) -> None:
    """Queue a test message to ADDRESS and, when a mail server is configured, send it now."""
    settings = context.settings
    text, html = render_mail("test_message", {"site": settings.issuer})
    # The mail is sealed and opened under the instance's secret key: this command's, which
    # --secret-key may give (the key store would otherwise take the environment's).
    secret_key = instance_secret_key(context.migrated_engine, settings.secret_key)
    keys.install(context.migrated_engine, secret_key)
    with context.writing() as session:
        message_id = queue_mail(session, to=address, subject=TEST_SUBJECT, text=text, html=html)
        record_event(
            session,
            Actor.command_line(),
            "mail.test_queued",
            target_type="mail",
            target_id=message_id,
            details={"to": address},
        )
    if settings.smtp_url is not None:
        channel = mail_channel(settings.smtp_url, settings.mail_from, secret_key)
        deliver(context.migrated_engine, channel)
    with context.reading() as session:
        message = find_mail(session, message_id)
    assert message is not None  # nothing deletes from the outbox
    document = {"id": message.id, "status": message.status, "lastError": message.last_error}
    if settings.smtp_url is None:
        emit(
            as_json,
            document,
            f"test message {message.id} to {address} is kept in the outbox: REGDESK_SMTP_URL "
            "is not set, so no mail is sent (`regdesk mail list` shows it)",
        )
        return
    if message.status == OutboxStatus.SENT:
        emit(as_json, document, f"test message {message.id} sent to {address}")
        return
    if as_json:
        emit(as_json, document, "")
    raise click.ClickException(not_sent(message))


def not_sent(message: Mail) -> str:
    """Why the test message is still in the outbox, and what becomes of it."""
    about = f"test message {message.id} to {message.to}"
    if message.status == OutboxStatus.FAILED:
        return f"{about} was not sent: {message.last_error}. regdesk gave up on it."
    if message.last_error is None:  # another regdesk process claimed it first
        return f"{about} is not sent yet: another regdesk process is sending it."
    return (
        f"{about} was not sent: {message.last_error}. It stays in the outbox and is tried "
        "again later (`regdesk mail list` shows how it goes)."
    )
