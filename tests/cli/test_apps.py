"""`regdesk apps ...`: registering and managing OAuth applications (operator.md)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, select

from regdesk.audit.models import AuditEvent
from regdesk.db import read_session
from regdesk.oauth.models import Application
from regdesk.security import verify_client_secret
from tests.conftest import Cli
from tests.helpers import database_text


def create(cli: Cli, *args: str) -> dict[str, object]:
    result = cli.ok("apps", "create", "--json", *args)
    document: dict[str, object] = json.loads(result.stdout)
    return document


def stored(engine: Engine, client_id: object) -> Application:
    with read_session(engine) as session:
        application = session.get(Application, int(str(client_id)))
        assert application is not None
        return application


def test_create_prints_a_secret_that_is_stored_only_as_a_hash(cli: Cli, engine: Engine) -> None:
    document = create(
        cli,
        "--name",
        "Volunteer Time Clock",
        "--description",
        "Clocks volunteers in and out",
        "--service-scopes",
        "user:read volunteer:read registration:read",
    )
    secret = str(document["client_secret"])
    assert len(secret) >= 43  # 256 bits, URL-safe base64
    assert document["client_id"] == "1"
    assert document["service_scopes"] == "user:read volunteer:read registration:read"
    application = stored(engine, document["client_id"])
    assert secret not in application.secret_hash
    assert verify_client_secret(application.secret_hash, secret)
    assert not verify_client_secret(application.secret_hash, secret + "x")
    assert secret not in database_text(engine)


def test_create_keeps_credentials_tools_already_hold(cli: Cli, engine: Engine) -> None:
    document = create(
        cli, "--name", "Bot", "--client-id", "42", "--client-secret", "an-old-secret-of-the-bot"
    )
    assert document == {**document, "client_id": "42", "client_secret": "an-old-secret-of-the-bot"}
    assert verify_client_secret(stored(engine, 42).secret_hash, "an-old-secret-of-the-bot")
    # The next application without an id comes after it (PostgreSQL's sequence moved on).
    assert create(cli, "--name", "Next")["client_id"] == "43"


def test_secret_can_be_read_from_stdin(cli: Cli, engine: Engine) -> None:
    result = cli.ok(
        "apps",
        "create",
        "--json",
        "--name",
        "Bot",
        "--client-secret",
        "-",
        input="secret-from-standard-input\n",
    )
    client_id = json.loads(result.stdout)["client_id"]
    assert verify_client_secret(stored(engine, client_id).secret_hash, "secret-from-standard-input")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--redirect-uri", "http://tools.example.org/cb"],
            "plain http is allowed only on loopback",
        ),
        (["--redirect-uri", "https://tools.example.org/cb#x"], "fragment"),
        (["--redirect-uri", "/relative"], "not an absolute https URI"),
        (["--service-scopes", "pii:basic"], "cannot be held by a service integration"),
        (["--obo-scopes", "pii:nonsense"], "unknown scope 'pii:nonsense'"),
        (["--client-secret", "short"], "at least 16 characters"),
        (["--client-id", "7", "--client-secret", "x" * 20], "already registered"),
    ],
    ids=["http", "fragment", "relative", "obo-only", "unknown", "weak", "taken"],
)
def test_bad_registrations_are_refused_and_write_nothing(
    cli: Cli, engine: Engine, args: list[str], message: str
) -> None:
    create(cli, "--name", "First", "--client-id", "7")
    result = cli("apps", "create", "--json", "--name", "Second", *args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert result.stdout == ""
    with read_session(engine) as session:
        assert session.scalars(select(Application.name)).all() == ["First"]


def test_loopback_and_private_use_redirect_uris_are_accepted(cli: Cli) -> None:
    uris = [
        "http://127.0.0.1:5000/cb",
        "http://[::1]/cb",
        "http://localhost/cb",
        "https://bot.example.org/cb",
        "org.example.app:/callback",
    ]
    args = [arg for uri in uris for arg in ("--redirect-uri", uri)]
    assert create(cli, "--name", "Bot", *args)["redirect_uris"] == uris


def test_list_show_update_suspend_and_rotate(cli: Cli, engine: Engine) -> None:
    first = create(cli, "--name", "Clock", "--service-scopes", "user:read")
    create(
        cli,
        "--name",
        "Bot",
        "--obo-scopes",
        "pii:basic pii:email",
        "--redirect-uri",
        "https://bot.example.org/cb",
    )
    listed = json.loads(cli.ok("apps", "list", "--json").stdout)["applications"]
    assert [a["name"] for a in listed] == ["Clock", "Bot"]
    assert all("client_secret" not in a for a in listed)

    version = stored(engine, 1).scopes_version
    updated = json.loads(
        cli.ok(
            "apps", "update", "1", "--json", "--service-scopes", "user:read volunteer:read"
        ).stdout
    )
    assert updated["service_scopes"] == "user:read volunteer:read"
    assert stored(engine, 1).scopes_version == version + 1
    cli.ok("apps", "update", "1", "--description", "Clocks people in")
    assert stored(engine, 1).scopes_version == version + 1  # not a change of scopes

    assert json.loads(cli.ok("apps", "suspend", "1", "--json").stdout)["suspended"] is True
    assert json.loads(cli.ok("apps", "show", "1", "--json").stdout)["suspended"] is True
    assert json.loads(cli.ok("apps", "unsuspend", "1", "--json").stdout)["suspended"] is False

    rotated = json.loads(cli.ok("apps", "rotate-secret", "1", "--json").stdout)
    assert rotated["client_secret"] != first["client_secret"]
    application = stored(engine, 1)
    assert verify_client_secret(application.secret_hash, str(rotated["client_secret"]))
    assert not verify_client_secret(application.secret_hash, str(first["client_secret"]))

    with read_session(engine) as session:
        events = session.scalars(select(AuditEvent).order_by(AuditEvent.id)).all()
    assert [e.action for e in events] == [
        "app.created",
        "app.created",
        "app.updated",
        "app.updated",
        "app.suspended",
        "app.unsuspended",
        "app.secret_rotated",
    ]
    assert all(e.actor.startswith("cli:") for e in events)
    assert str(rotated["client_secret"]) not in database_text(engine)


def test_unknown_application_is_an_error_on_stderr(cli: Cli) -> None:
    for command in (["show", "99"], ["suspend", "99"], ["rotate-secret", "99"]):
        result = cli("apps", *command)
        assert result.exit_code == 1
        assert "no application with client id 99" in result.stderr


def test_human_output_shows_the_secret_once(cli: Cli) -> None:
    created = cli.ok("apps", "create", "--name", "Clock").stdout
    assert "client_secret:" in created
    assert "shown this once" in created
    assert "client_secret" not in cli.ok("apps", "show", "1").stdout
