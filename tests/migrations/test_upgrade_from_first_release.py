"""A database made by the first release, with records in it, upgraded by `regdesk db upgrade`
to this release: every row is still there, and reads through the API as it was written."""

from __future__ import annotations

import json
import warnings
from typing import Any

from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import Engine, MetaData, insert, select, text
from sqlalchemy.exc import SAWarning
from sqlalchemy.orm import Session

from regdesk.app import create_app
from regdesk.cli import main
from regdesk.config import load_settings
from regdesk.db import make_engine, sync_sequences
from regdesk.migrations.revisions import current_revision, head_revision
from regdesk.migrations.runner import alembic_config, upgrade
from tests.client import TestClient
from tests.conftest import PUBLIC_URL, Cli, bearer
from tests.migrations.first_release import (
    CLIENT_SECRET,
    REFRESH_TOKEN,
    SERVICE_TOKEN,
    USER_TOKEN,
    first_release_rows,
)

FIRST_RELEASE = ScriptDirectory.from_config(alembic_config()).get_base()


def fill_first_release(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Write the records through the first schema's own tables (reflected from the database,
    not today's models), then read every row of every table back as it stands."""
    schema = _reflected(engine)
    rows = first_release_rows()
    with engine.begin() as connection:
        for table in schema.sorted_tables:
            if rows.get(table.name):
                connection.execute(insert(table), rows[table.name])
        # The ids were given here; the first release's inserts moved PostgreSQL's sequences.
        numbered = [t.name for t in schema.sorted_tables if "id" in t.c and rows.get(t.name)]
        sync_sequences(Session(bind=connection), *numbered)
    assert set(rows) <= set(schema.tables), "a table the first schema does not have"
    return _every_row(engine, schema)


def _reflected(engine: Engine) -> MetaData:
    schema = MetaData()
    with warnings.catch_warnings():
        # SQLite cannot reflect expression indexes; SQLAlchemy warns and skips them.
        warnings.simplefilter("ignore", SAWarning)
        schema.reflect(engine)
    return schema


def _every_row(engine: Engine, schema: MetaData) -> dict[str, list[tuple[Any, ...]]]:
    """Each table of `schema`, its columns as `schema` has them, read from the database now."""
    now = _reflected(engine)
    found: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as connection:
        for table in schema.sorted_tables:
            if table.name == "alembic_version":
                continue
            columns = [now.tables[table.name].c[c.name] for c in table.columns]
            found[table.name] = sorted(
                (tuple(row) for row in connection.execute(select(*columns))), key=repr
            )
    return found


def test_a_first_release_database_upgrades_with_every_record_kept(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine, FIRST_RELEASE)
        assert current_revision(engine) == FIRST_RELEASE
        first_schema = _reflected(engine)
        before = fill_first_release(engine)
        assert all(before[table] for table in before), "every first-release table holds rows"

        upgraded = Cli(database_url).ok("db", "upgrade")
        assert f"schema at revision {head_revision()}" in upgraded.stdout
        assert _every_row(engine, first_schema) == before
    finally:
        engine.dispose()

    app = create_app(load_settings(database_url=database_url, public_url=PUBLIC_URL))
    with TestClient(app, base_url=PUBLIC_URL) as client:
        _reads_as_written(client)
        _credentials_still_work(client)
    events = json.loads(Cli(database_url).ok("audit", "--json").stdout)["events"]
    kept = [(e["id"], e["occurred_at"], e["action"], e["ip_address"], e["details"]) for e in events]
    assert kept[-2:] == [
        (2, "2026-07-04T18:31:00.000Z", "application.created", "192.0.2.7", {"name": "Tool"}),
        (
            1,
            "2026-07-04T18:30:00.000Z",
            "user.created",
            None,
            {"roles": ["Staff"], "permissions": ["volunteer:read"]},
        ),
    ]


def _reads_as_written(client: TestClient) -> None:
    service = bearer(SERVICE_TOKEN)
    fox = client.get("/api/v0/users/1", headers=service)
    assert fox.status_code == 200, fox.text
    assert fox.json() == {
        "id": "1",
        "email": "fox@example.org",
        "preferredName": "Foxy",
        "firstName": "Fae",
        "lastName": "Fox",
        "username": "fox",
        "verified": True,
        "phone": "+15555550123",
        "address": {
            "addressLine1": "1 Main St",
            "addressLine2": "Apt 2",
            "addressCity": "Reno",
            "addressState": "NV",
            "addressZipcode": "89501",
            "addressCountry": "US",
        },
    }
    owl = client.get("/api/v0/users/2", headers=service).json()
    assert owl["phone"] is None
    assert set(owl["address"].values()) == {None}

    volunteer = client.get("/api/v0/users/1/volunteer", headers=service)
    assert volunteer.status_code == 200, volunteer.text
    record = volunteer.json()
    assert record["createdAt"] == "2026-07-04T18:30:00.000Z"
    assert record["contactMethods"] == [
        {"name": "Discord", "isPrimary": True, "value": "fox#1"},
        {"name": "Telegram", "isPrimary": False, "value": "@fae"},
    ]
    states = {d["name"]: sorted(d["states"]) for d in record["departments"]}
    assert states == {"Security": ["experience", "interest"], "Ops": ["avoid"]}
    assert {o["name"]: o["value"] for o in record["options"]} == {
        "Shirt size": "L",
        "Days": ["Fri", "Sat"],
        "Notes": "Nights, please",
        "Hours": 12,
    }
    assert record["user"]["username"] == "fox"
    assert record["user"]["isStaff"] is True

    departments = client.get("/api/v0/volunteers/departments", headers=service)
    assert departments.status_code == 200, departments.text
    leads = {d["name"]: [u["username"] for u in d["leads"]] for d in departments.json()}
    assert leads == {"Security": ["cat"], "Ops": ["fox"]}

    roles = client.get("/api/v0/users/1/roles", headers=service)
    assert roles.status_code == 200, roles.text
    assert [(r["name"], r["scope"]) for r in roles.json()["data"]] == [("Staff", "convention")]

    me = client.get("/api/users/current", headers=bearer(USER_TOKEN))
    assert me.status_code == 200, me.text
    assert me.json()["username"] == "fox"


def _credentials_still_work(client: TestClient) -> None:
    """The first release's client secret and refresh token are still good at the token
    endpoint: their hashes came through the upgrade as they were."""
    service = client.post(
        "/api/oauth/token",
        data={"grant_type": "client_credentials", "scope": "user:read"},
        auth=("1", CLIENT_SECRET),
    )
    assert service.status_code == 200, service.text
    refreshed = client.post(
        "/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": REFRESH_TOKEN},
        auth=("1", CLIENT_SECRET),
    )
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json()["scope"] == "pii:basic pii:email"


def test_an_upgrade_that_fails_changes_nothing(database_url: str) -> None:
    """The whole upgrade is one transaction on both databases: when a revision fails, the
    revisions before it are undone too, and the database stays as the first release left it."""
    engine = make_engine(database_url)
    try:
        upgrade(engine, FIRST_RELEASE)
        before = fill_first_release(engine)
        with engine.begin() as connection:
            # A table a later revision (0011, the outbox) makes: that revision fails.
            connection.execute(text("CREATE TABLE outbox_messages (id INTEGER PRIMARY KEY)"))
        tables = set(_reflected(engine).tables)
        failed = CliRunner().invoke(
            main, ["db", "upgrade"], env={"REGDESK_DATABASE_URL": database_url}
        )
        assert failed.exit_code != 0
        assert "outbox_messages" in str(failed.exception)
        assert current_revision(engine) == FIRST_RELEASE
        assert set(_reflected(engine).tables) == tables
        assert _every_row(engine, _reflected(engine)) == before | {"outbox_messages": []}
    finally:
        engine.dispose()
