"""Reading the file: a JSON document, or a CSV of users that imports like its JSON twin."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from regdesk.security import verify_password
from regdesk.transfer.exporter import export_document
from regdesk.transfer.importer import ImportRejected, read_document
from tests.transfer.support import (
    FOX_PASSWORD,
    backend_of,
    empty_database,
    import_,
    rich_document,
    zoe_password_hash,
)

HEADER = [
    "username", "email", "firstName", "lastName", "preferredName", "phone", "verified",
    "password", "passwordHash", "bornAt", "newsletter", "identityVerified", "profilePictureUrl",
    "addressLine1", "addressLine2", "addressCity", "addressState", "addressZipcode",
    "addressCountry", "roles", "permissions", "createdAt", "updatedAt",
]  # fmt: skip


def rich_users_csv() -> list[list[str]]:
    """The rich document's users, as a spreadsheet would hold them."""
    return [
        HEADER,
        ["fox", "fox@example.org", "Fae", "Fox", "", "(775) 555-0123", "Yes", FOX_PASSWORD, "",
         "1990-01-01", "0", "TRUE", "", "1 Main St", "", "Reno", "NV", "89501", "us",
         "Staff; Board:global", "volunteer:read;admin", "", ""],
        ["Zoë", "zoe@Example.ORG", "Zoë", "Łukasiewicz", "Zo", "030 1234567", "false", "",
         zoe_password_hash(), "1985-03-04T00:00:00.000Z", "true", "no",
         "https://example.org/zoe.png", "Hauptstraße 5", "Hinterhaus, 3. OG", "Berlin", "BE",
         "10115", "DE", "Dealer:convention", "user:read", "", ""],
        ["miyazaki", "Hayao.Miyazaki@example.org", "駿", "宮崎", "", "+81 3-1234-5678", *[""] * 15,
         "2025-01-02T03:04:05.678Z", "2025-02-03T04:05:06.789+00:00"],
        [],
        ["otter", "otter@example.org", "Oli", "Otter", *[""] * 19],
    ]  # fmt: skip


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


def comparable(exported: dict[str, Any]) -> dict[str, Any]:
    """The export without what differs between two imports: import times and salts."""
    for user in exported["users"]:
        if user["username"] != "miyazaki":
            del user["createdAt"], user["updatedAt"]
        if user["username"] == "fox":
            assert verify_password(user.pop("passwordHash"), FOX_PASSWORD)
    return exported


def test_a_csv_of_users_imports_like_the_json_document(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    rich = rich_document()
    import_(engine, {"roles": rich["roles"], "users": rich["users"]})
    path = write_csv(tmp_path / "users.csv", rich_users_csv())

    with empty_database(backend_of(database_url), tmp_path) as second:
        import_(second, {"roles": rich["roles"]})
        result = import_(second, read_document(path))
        from_csv = comparable(export_document(second))
    assert comparable(export_document(engine)) == from_csv
    assert list(result.as_json()["users"]) == ["fox", "Zoë", "miyazaki", "otter"]


def test_csv_cells_become_document_fields(tmp_path: Path) -> None:
    users = read_document(write_csv(tmp_path / "u.csv", rich_users_csv()))["users"]
    fox, zoe, miyazaki, otter = users
    assert fox["verified"] is True
    assert fox["newsletter"] is False
    assert fox["roles"] == ["Staff", {"name": "Board", "scope": "global"}]
    assert fox["permissions"] == ["volunteer:read", "admin"]
    assert "preferredName" not in fox  # an empty cell is an absent field
    assert fox["address"]["addressLine2"] is None
    assert zoe["identityVerified"] is False
    assert zoe["address"]["addressLine2"] == "Hinterhaus, 3. OG"
    assert miyazaki["address"] is None  # every address cell empty
    assert otter == {
        "username": "otter",
        "email": "otter@example.org",
        "firstName": "Oli",
        "lastName": "Otter",
        "address": None,
    }


def test_csv_errors_name_the_record_and_its_line(engine: Engine, tmp_path: Path) -> None:
    rows = [
        ["username", "email", "firstName", "lastName", "phone", "verified"],
        ["fox", "fox@example.org", "Fae", "Fox", "(775) 555-0123", "maybe"],
        [],
        ["otter", "otter@example.org", "Oli", "Otter", "12", ""],
    ]
    document = read_document(write_csv(tmp_path / "u.csv", rows))
    with pytest.raises(ImportRejected) as caught:
        import_(engine, document)
    assert [position for position, _ in caught.value.errors] == [
        "users[0] (CSV line 2).verified",
        "users[1] (CSV line 4).phone",
    ]
    assert export_document(engine)["users"] == []


@pytest.mark.parametrize(
    ("content", "position", "message"),
    [
        (b"", "CSV line 1", "the file is empty"),
        (b"username,emial\nfox,f@example.org\n", "CSV line 1", "unknown column 'emial'"),
        (b"username,username\nfox,fox\n", "CSV line 1", "column 'username' appears twice"),
        (b"username\nfox,extra\n", "users[0] (CSV line 2)", "has 2 cells but the header 1"),
        (b"username\n\xff\xfe\n", "u.csv", "is not UTF-8 text"),
    ],
    ids=["empty", "unknown column", "column twice", "extra cell", "not utf-8"],
)
def test_an_unreadable_csv_is_refused(
    tmp_path: Path, content: bytes, position: str, message: str
) -> None:
    path = tmp_path / "u.csv"
    path.write_bytes(content)
    with pytest.raises(ImportRejected) as caught:
        read_document(path)
    [(found_position, found_message)] = caught.value.errors
    assert found_position.endswith(position)
    assert message in found_message


@pytest.mark.parametrize(
    ("content", "position", "message"),
    [
        ('{"users": [}', "line 1 column 12", "not valid JSON"),
        ('{"users": [{"hours": NaN}]}', "document", "NaN is not a JSON number"),
        ('["users"]', "document", "must be a JSON object"),
    ],
    ids=["malformed", "NaN", "not an object"],
)
def test_a_bad_json_file_is_refused(
    tmp_path: Path, content: str, position: str, message: str
) -> None:
    path = tmp_path / "document.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ImportRejected) as caught:
        read_document(path)
    [(found_position, found_message)] = caught.value.errors
    assert found_position == position
    assert message in found_message


def test_a_json_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "document.json"
    path.write_text('{"roles": [{"name": "Staff"}]}', encoding="utf-8-sig")
    assert read_document(path) == {"roles": [{"name": "Staff"}]}
