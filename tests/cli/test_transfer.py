"""`regdesk import` and `regdesk export` as an organizer types them."""

from __future__ import annotations

import csv
import json
import stat
from pathlib import Path

from sqlalchemy import Engine, text

from tests.conftest import Cli
from tests.helpers import row_counts
from tests.transfer.support import rich_document


def write_json(path: Path, document: object) -> str:
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def test_import_prints_ids_as_operator_md_shows(cli: Cli, tmp_path: Path) -> None:
    document = rich_document()
    result = cli.ok("import", write_json(tmp_path / "doc.json", document), "--json")
    printed = json.loads(result.stdout)
    assert set(printed) == {
        "roles",
        "users",
        "departments",
        "volunteers",
        "products",
        "registrations",
    }
    assert set(printed["users"]) == {u["username"] for u in document["users"]}
    assert all(isinstance(i, str) and i.isdigit() for i in printed["users"].values())
    assert all(isinstance(i, str) and i.isdigit() for i in printed["departments"].values())
    assert all(isinstance(i, int) for i in printed["roles"].values())
    assert printed["volunteers"] == len(document["volunteers"])


def test_a_bad_document_exits_non_zero_names_the_field_and_writes_nothing(
    cli: Cli, engine: Engine, tmp_path: Path
) -> None:
    document = rich_document()
    document["users"][2]["phone"] = "12"
    before = row_counts(engine)
    result = cli("import", write_json(tmp_path / "doc.json", document), "--json")
    assert result.exit_code == 1
    assert "nothing was imported" in result.stderr
    assert "users[2].phone" in result.stderr
    assert row_counts(engine) == before


def test_a_rejected_import_with_json_prints_one_document_of_its_errors(
    cli: Cli, tmp_path: Path
) -> None:
    """operator.md: with --json, exactly one JSON document on stdout, a failure included."""
    document = rich_document()
    document["users"][2]["phone"] = "12"
    document["users"][3]["email"] = "not an address"
    result = cli("import", write_json(tmp_path / "doc.json", document), "--json")
    assert result.exit_code == 1
    printed = json.loads(result.stdout)
    assert printed["imported"] is False
    positions = [error["position"] for error in printed["errors"]]
    assert "users[2].phone" in positions
    assert "users[3].email" in positions
    assert all(set(error) == {"position", "message"} for error in printed["errors"])
    assert all(error["message"] for error in printed["errors"])


def test_unreadable_json_with_json_prints_its_position_as_a_document(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"users": [}', encoding="utf-8")
    result = cli("import", str(path), "--json")
    assert result.exit_code == 1
    (error,) = json.loads(result.stdout)["errors"]
    assert error["position"].startswith("line 1 column")
    assert "not valid JSON" in error["message"]


def test_a_rejected_import_without_json_prints_nothing_on_stdout(cli: Cli, tmp_path: Path) -> None:
    document = rich_document()
    document["users"][2]["phone"] = "12"
    result = cli("import", write_json(tmp_path / "doc.json", document))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "users[2].phone" in result.stderr


def test_malformed_json_is_reported_with_its_position(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"users": [}', encoding="utf-8")
    result = cli("import", str(path))
    assert result.exit_code == 1
    assert "line 1 column" in result.stderr


def test_export_then_import_into_an_empty_database_gives_the_same_document(
    cli: Cli, tmp_path: Path, database_url: str
) -> None:
    cli.ok("import", write_json(tmp_path / "doc.json", rich_document()))
    exported = tmp_path / "export.json"
    cli.ok("export", str(exported))
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600  # it holds personal data
    first = json.loads(exported.read_text(encoding="utf-8"))
    assert json.loads(cli.ok("export").stdout) == first  # to stdout, the same

    other = Cli(f"sqlite:///{tmp_path / 'other.sqlite3'}")
    other.ok("import", str(exported))
    assert json.loads(other.ok("export").stdout) == first
    # And the same file again changes nothing there.
    other.ok("import", str(exported))
    assert json.loads(other.ok("export").stdout) == first


def test_csv_of_users_imports_like_json(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "username",
                "email",
                "firstName",
                "lastName",
                "phone",
                "verified",
                "addressLine1",
                "addressCity",
                "addressState",
                "addressZipcode",
                "addressCountry",
                "permissions",
            ]
        )
        writer.writerow(
            [
                "kit",
                "kit@example.org",
                "Kit",
                "Fox",
                "(775) 555-0100",
                "yes",
                "1 Main St",
                "Reno",
                "NV",
                "89501",
                "US",
                "volunteer:read;user:read",
            ]
        )
        writer.writerow(
            ["søren", "soren@example.org", "Søren", "Kierkegaard", "", "no", "", "", "", "", "", ""]
        )
    printed = json.loads(cli.ok("import", str(path), "--json").stdout)
    assert set(printed["users"]) == {"kit", "søren"}
    users = {u["username"]: u for u in json.loads(cli.ok("export").stdout)["users"]}
    assert users["kit"]["phone"] == "+17755550100"
    assert users["kit"]["verified"] is True
    assert users["kit"]["permissions"] == ["user:read", "volunteer:read"]
    assert users["søren"]["address"] is None


def test_the_currency_option_is_the_currency_of_imported_orders(
    cli: Cli, engine: Engine, tmp_path: Path
) -> None:
    """`--currency` (REGDESK_CURRENCY): new orders are in it; a code not in ISO 4217 is
    refused before anything is read."""
    document = {
        "users": [
            {"username": "fox", "email": "fox@example.org", "firstName": "Fae", "lastName": "Fox"}
        ],
        "products": [{"name": "attendee", "price": 6500}],
        "registrations": [{"user": "fox", "product": "attendee"}],
    }
    path = write_json(tmp_path / "doc.json", document)
    refused = cli("--currency", "XYZ", "import", path)
    assert refused.exit_code != 0
    assert "REGDESK_CURRENCY 'XYZ' is not an ISO 4217 currency code" in refused.output
    cli.ok("--currency", "jpy", "import", path)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT currency FROM orders")).scalars().all() == ["JPY"]
