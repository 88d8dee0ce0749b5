"""Import and export from the browser (issue 8): the documents of `regdesk import` and
`regdesk export`, all or nothing, with each refused record named, and a size limit."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import Engine, select

from regdesk.admin.transfer import MAX_UPLOAD
from regdesk.db import read_session
from regdesk.registrations.models import Order
from regdesk.transfer.exporter import export_document
from tests.admin.support import People, Person
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.transfer.support import table_rows
from tests.web.support import audit

DOCUMENT: dict[str, Any] = {
    "roles": [{"name": "Staff", "staff": True}],
    "users": [
        {
            "username": "fox",
            "email": "fox@example.org",
            "firstName": "Fae",
            "lastName": "Fox",
            "phone": "+1 775 555 0123",
            "verified": True,
            "address": {
                "addressLine1": "1 Main St",
                "addressLine2": None,
                "addressCity": "Reno",
                "addressState": "NV",
                "addressZipcode": "89501",
                "addressCountry": "US",
            },
            "roles": ["Staff"],
        }
    ],
    "departments": [
        {"name": "Art Show", "email": "art@example.org", "publiclyVisible": True, "leads": ["fox"]}
    ],
}


def upload(person: Person, content: bytes, filename: str = "convention.json") -> httpx.Response:
    files = {"document": (filename, content, "application/octet-stream")}
    return person.client.post(
        "/admin/transfer/import",
        data={"csrf_token": person.csrf_token()},
        files=files,
        follow_redirects=False,
    )


def as_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


def problems(page: str) -> list[str]:
    found = re.findall(r'<li><code class="import-position">(.*?)</code>: (.*?)</li>', page)
    return [unescape(f"{position}: {message}") for position, message in found]


def test_an_imported_document_shows_its_counts_and_its_users_in_the_api(
    people: People, engine: Engine, client: TestClient, apps: Apps
) -> None:
    answer = upload(people.admin, as_bytes(DOCUMENT))
    assert answer.status_code == 303, answer.text
    assert re.fullmatch(r"/admin/transfer\?imported=\d+", answer.headers["location"])
    page = people.admin.get(answer.headers["location"])
    assert "The document was imported." in page.text
    counts = re.findall(
        r'<th scope="row">(\w+)</th>\s*<td class="numeric">(\d+)</td>\s*'
        r'<td class="numeric">(\d+)</td>\s*<td class="numeric">(\d+)</td>',
        page.text,
    )
    assert ("Users", "1", "0", "0") in counts
    assert ("Roles", "1", "0", "0") in counts
    assert ("Departments", "1", "0", "0") in counts
    (event,) = audit(engine, "data.imported")
    assert event.actor == f"user:{people.admin.user_id}"
    token = apps.service_token("user:read")
    found = client.post("/api/v0/users/search", json={"limit": 100}, headers=bearer(token)).json()[
        "data"
    ]
    (fox,) = [user for user in found if user["username"] == "fox"]
    assert fox["phone"] == "+17755550123"
    assert fox["address"]["addressCity"] == "Reno"
    # The same document again changes nothing.
    again = people.admin.get(upload(people.admin, as_bytes(DOCUMENT)).headers["location"])
    assert re.search(
        r'<th scope="row">Users</th>\s*<td class="numeric">0</td>\s*<td class="numeric">0</td>'
        r'\s*<td class="numeric">1</td>',
        again.text,
    )


def test_a_csv_of_users_is_imported_like_the_command_line_imports_it(
    people: People, engine: Engine
) -> None:
    csv = "username,email,firstName,lastName,roles\r\nowl,owl@example.org,Oona,Owl,Staff\r\n"
    refused = upload(people.admin, csv.encode(), "users.csv")
    assert refused.status_code == 400
    assert problems(refused.text) == ["users[0] (CSV line 2).roles[0]: no role is named 'Staff'"]
    answer = upload(people.admin, csv.replace(",Staff", ",").encode(), "users.csv")
    assert answer.status_code == 303
    exported = export_document(engine)
    assert "owl" in [user["username"] for user in exported["users"]]


def test_a_refused_document_names_each_error_and_writes_nothing(
    people: People, engine: Engine
) -> None:
    before = table_rows(engine)
    bad = {
        "users": [
            {**DOCUMENT["users"][0], "roles": []},
            {"username": "owl", "email": "not an address", "firstName": "Oona",
             "lastName": "Owl", "phone": "12"},
        ]
    }  # fmt: skip
    page = upload(people.admin, as_bytes(bad))
    assert page.status_code == 400
    assert "Nothing was imported" in page.text
    found = problems(page.text)
    assert any(p.startswith("users[1].email: ") for p in found), found
    assert any(p.startswith("users[1].phone: ") for p in found), found
    assert 'aria-invalid="true"' in page.text
    assert 'aria-describedby="document-hint document-error"' in page.text
    assert table_rows(engine) == before
    assert audit(engine, "data.imported") == []


def test_a_file_that_is_not_json_is_refused_with_where_it_breaks(
    people: People, engine: Engine
) -> None:
    before = table_rows(engine)
    page = upload(people.admin, b'{"users": [\n  {"username": "fox",}\n]}')
    assert page.status_code == 400
    (problem,) = problems(page.text)
    assert problem.startswith("line 2 column ")
    assert "not valid JSON" in problem
    not_text = upload(people.admin, b"\xff\xfe{}", "convention.json")
    assert problems(not_text.text) == ["convention.json: is not UTF-8 text"]
    assert table_rows(engine) == before


def test_an_upload_without_a_file_asks_for_one(people: People) -> None:
    page = people.admin.client.post(
        "/admin/transfer/import",
        data={"csrf_token": people.admin.csrf_token()},
        files={"document": ("", b"", "application/octet-stream")},
        follow_redirects=False,
    )
    assert page.status_code == 400
    assert "Choose a file to import." in page.text


def test_a_file_over_the_limit_is_refused_before_it_is_read(people: People, engine: Engine) -> None:
    before = table_rows(engine)
    padding = b" " * (MAX_UPLOAD + 1)
    answer = upload(people.admin, b'{"users": []}' + padding)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/admin/transfer?too_large"
    page = people.admin.get(answer.headers["location"])
    assert "The file is larger than 10 MB" in page.text
    assert 'role="alert"' in page.text
    # A body of unknown length (chunked) is refused the same way.
    chunked = people.admin.client.post(
        "/admin/transfer/import",
        content=iter([b"--x\r\n", b"more"]),
        headers={"Content-Type": "multipart/form-data; boundary=x"},
        follow_redirects=False,
    )
    assert chunked.headers["location"] == "/admin/transfer?too_large"
    assert table_rows(engine) == before


def test_the_export_is_the_command_line_s_document_as_a_private_download(
    people: People, engine: Engine
) -> None:
    assert upload(people.admin, as_bytes(DOCUMENT)).status_code == 303
    answer = people.admin.post("/admin/transfer/export")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert re.fullmatch(
        r'attachment; filename="regdesk-export-\d{4}-\d\d-\d\d\.json"',
        answer.headers["content-disposition"],
    )
    assert "no-store" in answer.headers["cache-control"]
    document = answer.json()
    assert document == export_document(engine)
    assert "fox" in [user["username"] for user in document["users"]]
    (event,) = audit(engine, "data.exported")
    assert event.actor == f"user:{people.admin.user_id}"
    assert event.details["users"] == len(document["users"])
    # Importing the export changes nothing.
    again = people.admin.get(upload(people.admin, answer.content).headers["location"])
    assert re.search(
        r'<th scope="row">Users</th>\s*<td class="numeric">0</td>\s*<td class="numeric">0</td>',
        again.text,
    )


def test_only_administrators_may_import_or_export(people: People, engine: Engine) -> None:
    before = table_rows(engine)
    for person in (people.security_lead, people.attendee):
        assert person.get("/admin/transfer").status_code == 403
        assert upload(person, as_bytes(DOCUMENT)).status_code == 403
        assert person.post("/admin/transfer/export").status_code == 403
    assert table_rows(engine) == before


def test_an_imported_sale_is_in_the_instances_currency_and_counted_on_the_page(
    people: People, engine: Engine, app: FastAPI
) -> None:
    """The page imports as `regdesk import` does: new orders in REGDESK_CURRENCY's currency,
    and the registrations' lists among the counts it shows."""
    app.state.settings = app.state.settings.model_copy(update={"currency": "JPY"})
    document = {
        **DOCUMENT,
        "products": [{"name": "attendee", "price": 6500, "capacity": 10}],
        "registrationFlags": [{"shortName": "fursuits"}],
        "registrations": [{"user": "fox", "product": "attendee", "flags": ["fursuits"]}],
    }
    answer = upload(people.admin, as_bytes(document))
    assert answer.status_code == 303, answer.text
    page = people.admin.get(answer.headers["location"]).text
    for name in ("Products", "Registration flags", "Registrations"):
        assert re.search(rf'<th scope="row">{name}</th>\s*<td class="numeric">1</td>', page), name
    with read_session(engine) as session:
        assert session.scalars(select(Order.currency)).all() == ["JPY"]
