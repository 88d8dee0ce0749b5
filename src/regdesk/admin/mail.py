"""The mail outbox in the admin area (accounts.md, E-mail), for administrators: every message
newest first, filtered by status, a page at a time (keyset: `before` is the last id shown),
with whether a mail server is configured and how many messages wait or failed.

The query is `regdesk.mail.outbox_view.list_mail`, which `regdesk mail list` uses too; like
it, the page never shows a message's bodies.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from regdesk.admin.access import AdminDep
from regdesk.admin.pages import admin_page
from regdesk.config import Settings
from regdesk.formats import format_timestamp
from regdesk.mail.outbox_view import STATUSES, Mail, count_mail, list_mail, server_address
from regdesk.schemas import record_id
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/mail")

SECTION = "mail"
PAGE_SIZE = 50


@dataclass(frozen=True)
class Row:
    """One message as the table shows it."""

    mail: Mail
    created: str
    sent: str | None


def _row(mail: Mail) -> Row:
    sent = format_timestamp(mail.sent_at) if mail.sent_at else None
    return Row(mail, format_timestamp(mail.created_at), sent)


@router.get("")
def mail_page(
    request: Request, staffer: AdminDep, db: PageDb, status: str = "", before: str = ""
) -> HTMLResponse:
    settings: Settings = request.app.state.settings
    chosen = status if status in STATUSES else ""
    page = list_mail(db, status=chosen or None, before_id=record_id(before), limit=PAGE_SIZE)
    filters = {"status": chosen} if chosen else {}
    here = f"/admin/mail?{urlencode(filters)}" if filters else "/admin/mail"
    return admin_page(
        request,
        "admin/mail.html",
        staffer,
        SECTION,
        server=server_address(settings.smtp_url) if settings.smtp_url else None,
        counts=count_mail(db),
        status=chosen,
        statuses=STATUSES,
        rows=[_row(mail) for mail in page.messages],
        older=f"/admin/mail?{urlencode({**filters, 'before': page.older})}" if page.older else None,
        newest=here if before else None,
    )
