"""What the resource-route tests share: data to load, the records it must come back as, and
small readers of responses (pages, error envelopes, SQL statements)."""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import httpx
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

from regdesk import demo
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.demo import DemoResult, load_demo
from regdesk.transfer.importer import ImportResult
from tests.client import TestClient
from tests.conftest import Apps, Registered, bearer
from tests.transfer.support import import_, rich_document

EVERY_SCOPE = "user:read volunteer:read user:roles:update"
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def headers(apps: Apps, scopes: str = EVERY_SCOPE) -> dict[str, str]:
    return bearer(apps.service_token(scopes))


def service_app(apps: Apps, scopes: str = EVERY_SCOPE) -> tuple[Registered, dict[str, str]]:
    """A new application and the headers of its client_credentials token (for audit actors)."""
    registered = apps.register(service_scopes=scopes)
    response = apps.client.post(
        "/api/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(registered.client_id, registered.client_secret),
    )
    assert response.status_code == 200, response.text
    return registered, bearer(response.json()["access_token"])


# --- data ----------------------------------------------------------------------------------


def import_rich(engine: Engine) -> ImportResult:
    """The transfer tests' rich document, less the one password it would spend time hashing."""
    document = rich_document()
    del document["users"][0]["password"]
    return import_(engine, document)


def load_small_demo(engine: Engine, users: int, volunteers: int) -> DemoResult:
    """`regdesk demo` data, without the deliberately slow hashing of the demo logins' passwords."""
    with mock.patch.object(demo, "hash_password", return_value="not a hash"):
        return load_demo(engine, users=users, volunteers=volunteers, actor=Actor("test:api"))


# The users of the rich document exactly as api.md 2.2 renders them, by username (ids are the
# import's: the users are created in document order on an empty database).
RICH_USERS: dict[str, dict[str, Any]] = {
    "fox": {
        "id": "1",
        "email": "fox@example.org",
        "preferredName": None,
        "firstName": "Fae",
        "lastName": "Fox",
        "username": "fox",
        "verified": True,
        "phone": "+17755550123",
        "address": {
            "addressLine1": "1 Main St",
            "addressLine2": None,
            "addressCity": "Reno",
            "addressState": "NV",
            "addressZipcode": "89501",
            "addressCountry": "US",
        },
    },
    "Zoë": {
        "id": "2",
        "email": "zoe@example.org",  # written zoe@Example.ORG: the domain is normalised
        "preferredName": "Zo",
        "firstName": "Zoë",
        "lastName": "Łukasiewicz",
        "username": "Zoë",
        "verified": False,
        "phone": "+49301234567",  # written 030 1234567, read in the address's country
        "address": {
            "addressLine1": "Hauptstraße 5",
            "addressLine2": "Hinterhaus, 3. OG",
            "addressCity": "Berlin",
            "addressState": "BE",
            "addressZipcode": "10115",
            "addressCountry": "DE",
        },
    },
    "miyazaki": {
        "id": "3",
        "email": "Hayao.Miyazaki@example.org",  # the local part keeps its case
        "preferredName": None,
        "firstName": "駿",
        "lastName": "宮崎",
        "username": "miyazaki",
        "verified": False,
        "phone": "+81312345678",
        # api.md 2.2: without address data, `address` is there with every child null.
        "address": dict.fromkeys(
            (
                "addressLine1",
                "addressLine2",
                "addressCity",
                "addressState",
                "addressZipcode",
                "addressCountry",
            )
        ),
    },
    "otter": {
        "id": "4",
        "email": "otter@example.org",
        "preferredName": None,
        "firstName": "Oli",
        "lastName": "Otter",
        "username": "otter",
        "verified": False,
        "phone": None,  # the document gives none
        "address": dict.fromkeys(
            (
                "addressLine1",
                "addressLine2",
                "addressCity",
                "addressState",
                "addressZipcode",
                "addressCountry",
            )
        ),
    },
}

NESTED_USER_KEYS = ("id", "firstName", "lastName", "username", "preferredName", "phone", "email")


def nested(username: str) -> dict[str, Any]:
    """api.md 2.3: the user inside volunteer and department records."""
    return {key: RICH_USERS[username][key] for key in NESTED_USER_KEYS}


# --- responses -----------------------------------------------------------------------------


def validation_fields(response: httpx.Response) -> dict[str, str]:
    """The `fields` of a 400 validation envelope, after checking the envelope's shape."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert list(body) == ["errors"], body
    assert list(body["errors"]) == ["validation"], body
    detail = body["errors"]["validation"]
    assert set(detail) == {"message", "fields"}, body
    assert isinstance(detail["message"], str), body
    assert detail["message"], body
    fields: dict[str, str] = detail["fields"]
    assert all(isinstance(m, str) and m for m in fields.values()), body
    return fields


def assert_not_found(response: httpx.Response, message: str) -> None:
    assert response.status_code == 404, response.text
    assert response.json() == {"errors": {"resource": {"message": message}}}


def walk(
    client: TestClient, path: str, headers: dict[str, str], body: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every page of a search, checking the page rules of decisions.md on the way."""
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        request = dict(body, nextPage=cursor) if cursor is not None else body
        response = client.post(path, json=request, headers=headers)
        assert response.status_code == 200, response.text
        page = response.json()
        assert set(page) == {"data", "nextPage", "hasMore"}, page.keys()
        assert page["hasMore"] is isinstance(page["nextPage"], str)
        assert page["nextPage"] is None or page["nextPage"]
        pages.append(page)
        cursor = page["nextPage"]
        if cursor is None:
            return pages
        assert len(pages) < 1000, "the cursor never ends"


def audit_events(engine: Engine, action: str) -> list[AuditEvent]:
    with Session(engine) as session:
        return list(
            session.scalars(
                select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
            )
        )


def iso_now() -> dt.datetime:
    """Now, truncated to the millisecond as timestamps are rendered."""
    now = dt.datetime.now(dt.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def parse_timestamp(value: str) -> dt.datetime:
    assert TIMESTAMP.fullmatch(value), value
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)


@contextmanager
def statements(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    """The SQL statements, with their parameters, sent through `engine` inside the block: by
    SQLAlchemy, and by the hot paths' own reads (db.Query, logged on `regdesk.sql`)."""
    sent: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append((statement, parameters))

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            sent.append(record.args)  # type: ignore[arg-type]

    handler, sql_log = Recorder(logging.DEBUG), logging.getLogger("regdesk.sql")
    level = sql_log.level
    event.listen(engine, "before_cursor_execute", record)
    sql_log.addHandler(handler)
    sql_log.setLevel(logging.DEBUG)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)
        sql_log.removeHandler(handler)
        sql_log.setLevel(level)


def app_engine(client: TestClient) -> Engine:
    """The engine the app under test queries through."""
    engine: Engine = client.app.state.engine  # type: ignore[attr-defined]
    return engine
