"""The mail outbox page (accounts.md, E-mail): every message newest first, filtered by status,
a page at a time, failed ones marked in words; whether a mail server is configured, never with
its password; for administrators only, and never a message's bodies."""

from __future__ import annotations

import re
from html import unescape

from sqlalchemy import Engine, delete, update

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import write_session
from regdesk.mail.service import queue_mail
from regdesk.outbox.models import OutboxMessage
from tests.admin.support import BASE_URL, People, person
from tests.client import TestClient
from tests.conftest import PUBLIC_URL
from tests.helpers import free_port

SECRET = "https://reg.example.org/verify/body-secret-Pq3"  # in the bodies only
NO_SERVER = "No mail server is configured (REGDESK_SMTP_URL): messages stay here."


def seed(engine: Engine, *addresses: str, failed: tuple[str, ...] = ()) -> None:
    """An outbox of exactly these messages, oldest first; those to `failed` given up on."""
    with write_session(engine) as session:
        session.execute(delete(OutboxMessage))  # whatever signing people up may have written
        for address in addresses:
            queue_mail(
                session,
                to=address,
                subject=f"Hello {address}",
                text=f"Follow {SECRET}",
                html=f'<a href="{SECRET}">Follow</a>',
            )
    with write_session(engine) as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.payload["to"].as_string().in_(failed))
            .values(status="failed", attempts=7, last_error="550 no such mailbox")
        )


def rows(page: str) -> list[list[str]]:
    """The table's rows as the text of their cells: status, to, subject, attempts, created,
    sent, last error."""
    body = re.search(r"<tbody>(.*?)</tbody>", page, re.S)
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", body.group(1) if body else "", re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        found.append([unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells])
    return found


def server_line(page: str) -> str:
    """The line at the top, as text: where mail goes, how many wait and failed."""
    line = re.search(r'<p id="mail-server">(.*?)</p>', page, re.S)
    assert line is not None
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", line.group(1)))).strip()


def test_an_administrator_reads_the_outbox_newest_first(people: People, engine: Engine) -> None:
    seed(
        engine, "ann@example.org", "bob@example.org", "cy@example.org", failed=("bob@example.org",)
    )
    page = people.admin.get("/admin/mail")
    assert page.status_code == 200
    shown = rows(page.text)
    assert [row[1] for row in shown] == ["cy@example.org", "bob@example.org", "ann@example.org"]
    pending, failed = shown[0], shown[1]
    assert pending[0] == "pending"
    assert (pending[2], pending[3], pending[5], pending[6]) == (
        "Hello cy@example.org",
        "0",
        "not sent",
        "",
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", pending[4])
    assert failed[0] == "Failed: given up"  # in words, not by its colour alone
    assert (failed[3], failed[6]) == ("7", "550 no such mailbox")
    assert server_line(page.text) == f"{NO_SERVER} 2 pending, 1 failed."
    assert "body-secret" not in page.text
    assert '<a href="/admin/mail" aria-current="page">Mail</a>' in page.text


def test_the_status_filter_keeps_the_messages_in_that_state(people: People, engine: Engine) -> None:
    seed(
        engine, "ann@example.org", "bob@example.org", "cy@example.org", failed=("bob@example.org",)
    )
    page = people.admin.get("/admin/mail", params={"status": "failed"})
    assert [row[1] for row in rows(page.text)] == ["bob@example.org"]
    assert '<option value="failed" selected>failed</option>' in page.text
    pending = people.admin.get("/admin/mail", params={"status": "pending"})
    assert [row[1] for row in rows(pending.text)] == ["cy@example.org", "ann@example.org"]
    sent = people.admin.get("/admin/mail", params={"status": "sent"})
    assert rows(sent.text) == []
    assert "No sent message." in sent.text
    unknown = people.admin.get("/admin/mail", params={"status": "lost"})
    assert len(rows(unknown.text)) == 3  # a status no message can have filters nothing


def test_pages_follow_one_another_without_gaps_or_repeats(people: People, engine: Engine) -> None:
    addresses = [f"p{n}@example.org" for n in range(120)]
    seed(engine, *addresses, failed=tuple(addresses[:5]))
    seen: list[str] = []
    path = "/admin/mail?status=pending"
    pages = 0
    while path:
        page = people.admin.get(path)
        assert page.status_code == 200
        seen.extend(row[1] for row in rows(page.text))
        pages += 1
        assert pages <= 3, "the older link came back to a page already seen"
        older = re.search(
            r'<a href="(/admin/mail\?[^"]+)" rel="next">Older messages</a>', page.text
        )
        path = unescape(older.group(1)) if older else ""
        if pages > 1:
            assert '<a href="/admin/mail?status=pending">Newest messages</a>' in page.text
        if path:
            assert "status=pending" in path
    assert pages == 3
    assert seen == list(reversed(addresses[5:]))


def test_leads_and_attendees_are_refused_as_on_every_admin_only_page(people: People) -> None:
    for person_ in (people.security_lead, people.hotel_lead, people.attendee):
        for path in ("/admin/mail", "/admin/audit"):
            refused = person_.get(path)
            assert refused.status_code == 403, (person_.username, path)
            assert "Not permitted" in refused.text
    assert 'href="/admin/mail"' not in people.security_lead.get("/admin").text
    assert 'href="/admin/mail"' in people.admin.get("/admin").text


def test_the_mail_server_is_named_without_its_password(engine: Engine, database_url: str) -> None:
    password = "smtp-pass-Rt5"
    port = free_port()  # nothing listens: the page only names it
    settings = load_settings(
        database_url=database_url,
        public_url=PUBLIC_URL,
        smtp_url=f"smtp://mailer:{password}@127.0.0.1:{port}",
    )
    app = create_app(settings)
    with TestClient(app, base_url=BASE_URL):
        admin = person(app, engine, "ada", permissions=["admin"])
        page = admin.get("/admin/mail")
    assert page.status_code == 200
    assert server_line(page.text).startswith(f"Mail is sent through 127.0.0.1:{port}. ")
    assert password not in page.text
    assert "mailer" not in page.text
