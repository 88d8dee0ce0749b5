"""A plaintext `password` in an import meets the one password rule (accounts/password_rule.py):
at least 10 characters, not among the common passwords, not the user's own username or
e-mail. A refused one is named by its record and field, in the words of every other field
error, and nothing is written; a `passwordHash` (an export's) is taken as it is."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from regdesk.accounts.password_rule import PASSWORD_MIN
from regdesk.security import hash_password, verify_password
from regdesk.transfer.importer import ImportRejected, read_document
from regdesk.users.models import User
from tests.conftest import Cli
from tests.transfer.support import import_, table_rows

GOOD = "a lantern by the river"
SHORT = f"must be at least {PASSWORD_MIN} characters long"
COMMON = "is one of the most common passwords, the first an attacker tries: choose another"
OWN = "must not be the username or e-mail address of the account"


def user(username: str = "otter", **fields: Any) -> dict[str, Any]:
    return {
        "username": username,
        "email": f"{username}@example.org",
        "firstName": "Olli",
        "lastName": "Otter",
        **fields,
    }


def refused(engine: Engine, document: dict[str, Any]) -> list[tuple[str, str]]:
    """The errors of an import that must fail, after checking that it wrote nothing."""
    before = table_rows(engine)
    with pytest.raises(ImportRejected) as caught:
        import_(engine, document)
    assert table_rows(engine) == before
    return caught.value.errors


def stored_hash(engine: Engine, username: str) -> str | None:
    with engine.connect() as connection:
        return connection.scalar(select(User.password_hash).where(User.username == username))


@pytest.mark.parametrize(
    ("password", "message"),
    [
        ("short", SHORT),
        ("nine char", SHORT),
        ("QWERTYUIOP", COMMON),  # common, in another case
        ("Password1234", COMMON),
        ("Otter.Of.The.River", None),  # long and rare: taken
        ("OTTER-RIVER-42", None),
    ],
)
def test_a_plaintext_password_meets_the_one_rule(
    engine: Engine, password: str, message: str | None
) -> None:
    document = {"users": [user("fox"), user(password=password)]}
    if message is None:
        import_(engine, document)
        assert verify_password(stored_hash(engine, "otter"), password)
    else:
        assert refused(engine, document) == [("users[1].password", message)]


@pytest.mark.parametrize(
    "password", ["otter_of_the_river", "OTTER_OF_THE_RIVER", "Otter.River@Example.org"]
)
def test_a_password_that_is_the_users_own_username_or_email_is_refused(
    engine: Engine, password: str
) -> None:
    document = {
        "users": [
            user(
                "otter_of_the_river",
                email="otter.river@example.org",
                password=password,
            )
        ]
    }
    assert refused(engine, document) == [("users[0].password", OWN)]


def test_another_users_name_is_a_password_like_any_other(engine: Engine) -> None:
    """The context is the record's own account, not every name in the document."""
    document = {"users": [user("otter_of_the_river"), user("fox", password="otter_of_the_river")]}
    import_(engine, document)
    assert verify_password(stored_hash(engine, "fox"), "otter_of_the_river")


def test_a_matched_user_is_checked_against_their_stored_email(engine: Engine) -> None:
    import_(engine, {"users": [user("fox", email="fae.fox.at.home@example.org")]})
    document = {"users": [{"username": "fox", "password": "Fae.Fox.At.Home@example.org"}]}
    assert refused(engine, document) == [("users[0].password", OWN)]
    import_(engine, {"users": [{"username": "fox", "password": GOOD}]})
    assert verify_password(stored_hash(engine, "fox"), GOOD)


def test_every_weak_password_is_reported_with_the_other_errors(engine: Engine) -> None:
    document = {
        "users": [
            user("ann", password="short"),
            user("bob", phone="12"),
            user("cy", password="password123"),
        ]
    }
    errors = refused(engine, document)
    assert [position for position, _ in errors] == [
        "users[0].password",
        "users[1].phone",
        "users[2].password",
    ]
    lines = str(ImportRejected(errors)).splitlines()
    assert lines[0] == f"users[0].password: {SHORT}"
    assert lines[2] == f"users[2].password: {COMMON}"


def test_a_password_hash_is_taken_as_it_is(engine: Engine) -> None:
    """An export's hash cannot be checked, and a person may have chosen it before the rule."""
    weak_hash = hash_password("short")
    import_(engine, {"users": [user(passwordHash=weak_hash)]})
    assert stored_hash(engine, "otter") == weak_hash


def test_a_csv_password_is_refused_by_its_record_and_line(engine: Engine, tmp_path: Path) -> None:
    rows = [user("ann", password=GOOD), user("bob", password="Bob@Example.org")]
    path = tmp_path / "users.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([list(rows[0]), *(list(row.values()) for row in rows)])
    assert refused(engine, read_document(path)) == [("users[1] (CSV line 3).password", OWN)]


def test_regdesk_import_names_the_password_and_writes_nothing(
    cli: Cli, engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"users": [user(password="iloveyou123")]}), encoding="utf-8")
    before = table_rows(engine)
    result = cli("import", str(path))
    assert result.exit_code == 1
    assert "nothing was imported" in result.stderr
    assert f"users[0].password: {COMMON}" in result.stderr
    assert "iloveyou123" not in result.stderr  # a refused password is never repeated
    assert table_rows(engine) == before
