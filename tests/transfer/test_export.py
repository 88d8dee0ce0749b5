"""Export: the import document of everything, which imports back into the same database."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from regdesk.transfer.exporter import export_document
from tests.transfer.support import backend_of, empty_database, import_, rich_document


def lived_in(engine: Engine) -> None:
    """A database with a history: explicit and gapped ids, later edits, a past event."""
    import_(engine, {"event": {"name": "Fur Con 2025"}, "users": rich_document()["users"][3:]})
    document = rich_document()
    document["roles"][1]["id"] = 12
    document["users"][0]["id"] = 40
    document["departments"][2]["id"] = 7
    import_(engine, document)
    import_(
        engine,
        {
            "users": [
                {"username": "otter", "roles": [{"name": "Staff", "scope": "global"}]},
                {"username": "badger", "email": "b@example.org", "firstName": "B", "lastName": "B"},
            ],
            "volunteers": [
                {"user": "otter", "options": [{"name": "Hours", "type": "number", "value": 3}]}
            ],
        },
    )


def test_export_then_import_into_an_empty_database_gives_the_same_export(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    lived_in(engine)
    exported = export_document(engine)
    assert [u["id"] for u in exported["users"]] == [1, 40, 41, 42, 43]

    # Rows given an id are inserted first; the others come after them.
    assert [(r["id"], r["name"]) for r in exported["roles"]] == [
        (12, "Dealer"),
        (13, "Staff"),
        (14, "Board"),
    ]
    assert [d["id"] for d in exported["departments"]] == [7, 8, 9]

    with empty_database(backend_of(database_url), tmp_path) as second:
        result = import_(second, exported)
        assert export_document(second) == exported
    assert result.as_json()["users"] == {u["username"]: str(u["id"]) for u in exported["users"]}
    assert result.volunteers == len(exported["volunteers"]) == 4


def test_an_empty_database_exports_empty_sections(engine: Engine) -> None:
    exported = export_document(engine)
    assert exported == {
        "roles": [],
        "users": [],
        "departments": [],
        "volunteers": [],
        "products": [],
        "registrationFlags": [],
        "registrationOptions": [],
        "registrations": [],
    }
    import_(engine, exported)
    assert export_document(engine) == exported


def test_only_the_current_event_and_its_volunteers_are_exported(engine: Engine) -> None:
    lived_in(engine)
    exported = export_document(engine)
    assert exported["event"]["name"] == "Fur Con 2026"
    assert "otter" in [v["user"] for v in exported["volunteers"]]
    import_(engine, {"event": {"name": "Fur Con 2025", "current": True}})
    exported = export_document(engine)
    assert exported["event"] == {
        "name": "Fur Con 2025",
        "startsOn": None,
        "endsOn": None,
        "current": True,
        "options": [],
    }
    assert exported["volunteers"] == []
