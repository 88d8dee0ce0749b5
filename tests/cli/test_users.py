"""`regdesk users create` (operator.md)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from argon2 import extract_parameters
from argon2.profiles import RFC_9106_LOW_MEMORY
from sqlalchemy import Engine, insert, select

from regdesk.db import read_session
from regdesk.oauth.models import UserPermission
from regdesk.roles.models import Role, UserRole
from regdesk.security import verify_password
from regdesk.users.models import User
from tests.conftest import Cli
from tests.helpers import database_text

BASE = [
    "users",
    "create",
    "--json",
    "--username",
    "fox",
    "--email",
    "Fox@Example.ORG",
    "--first-name",
    "Fae",
    "--last-name",
    "Fox",
]


@pytest.mark.real_password_hashing
def test_create_with_password_roles_and_permissions(cli: Cli, engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            insert(Role).values(name="Staff", staff=True, created_at=dt.datetime.now(dt.UTC))
        )
    result = cli.ok(
        *BASE,
        "--password",
        "-",
        "--role",
        "Staff",
        "--permission",
        "admin",
        input="correct horse battery staple\n",
    )
    document = json.loads(result.stdout)
    assert document == {
        "id": document["id"],
        "username": "fox",
        "email": "Fox@example.org",
        "firstName": "Fae",
        "lastName": "Fox",
        "roles": ["Staff"],
        "permissions": ["admin"],
        "hasPassword": True,
    }
    with read_session(engine) as session:
        user = session.scalars(select(User)).one()
        assert str(user.id) == document["id"]
        assert user.password_hash is not None
        assert user.password_hash.startswith("$argon2id$")
        # the service's own cost (RFC 9106's low-memory profile), not the tests' cheap one
        assert extract_parameters(user.password_hash) == RFC_9106_LOW_MEMORY
        assert verify_password(user.password_hash, "correct horse battery staple")
        assert session.scalars(select(UserPermission.name)).all() == ["admin"]
        assert session.scalars(select(UserRole.scope)).all() == ["convention"]
    assert "correct horse battery staple" not in database_text(engine)


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("tiny-pass", "must be at least 10 characters long"),
        ("QWERTYUIOP", "is one of the most common passwords"),
        ("Fox@example.org", "must not be the username or e-mail address of the account"),
    ],
    ids=["short", "common", "own-address"],
)
def test_a_password_the_rule_refuses_creates_no_one(
    cli: Cli, engine: Engine, typed: str, message: str
) -> None:
    """accounts/password_rule.py, from stdin or the option alike."""
    for how in (["--password", "-"], ["--password", typed]):
        result = cli(*BASE, *how, input=f"{typed}\n")
        assert result.exit_code == 1
        assert result.stderr.startswith(f"Error: password: {message}")
        assert result.stdout == ""
    with read_session(engine) as session:
        assert session.scalars(select(User)).all() == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--role", "Nope"], "no role named 'Nope'"),
        (["--permission", "root"], "unknown permission 'root'"),
    ],
)
def test_unknown_roles_and_permissions_are_refused(
    cli: Cli, engine: Engine, extra: list[str], message: str
) -> None:
    result = cli(*BASE, "--no-password", *extra)
    assert result.exit_code == 1
    assert message in result.stderr
    with read_session(engine) as session:
        assert session.scalars(select(User)).all() == []


def test_taken_username_or_email_is_refused_whatever_the_case(cli: Cli) -> None:
    cli.ok(*BASE, "--no-password")
    again = ["users", "create", "--no-password", "--first-name", "A", "--last-name", "B"]
    taken_email = cli(*again, "--username", "other", "--email", "FOX@example.org")
    assert taken_email.exit_code == 1
    assert "belongs to another user" in taken_email.stderr
    taken_name = cli(*again, "--username", "FOX", "--email", "x@example.org")
    assert taken_name.exit_code == 1
    assert "is taken" in taken_name.stderr


def test_bad_email_is_refused(cli: Cli) -> None:
    result = cli(
        "users",
        "create",
        "--no-password",
        "--username",
        "x",
        "--email",
        "nope",
        "--first-name",
        "A",
        "--last-name",
        "B",
    )
    assert result.exit_code == 1
    assert "email: 'nope' is not a valid e-mail address" in result.stderr
