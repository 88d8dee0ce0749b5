"""The one password rule (accounts/password_rule.py; accounts.md: at least 10 characters and
not among common passwords), and every way a person chooses a password asks it: the reset by
mailed link, the change on /account, an administrator's typed reset, `regdesk users create`.
A refused password is said by its field (or, on the command line, on stderr with exit status
1), and nothing changes."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine, select

from regdesk.accounts.password_rule import PASSWORD_MIN, password_problem
from regdesk.db import read_session
from regdesk.fields import PASSWORD_MAX
from regdesk.users.models import User
from tests.accounts.password_support import (
    NEW_PASSWORD,
    ask_for_link,
    change_on_account,
    link_in,
    outbox,
    set_by_link,
)
from tests.client import TestClient
from tests.conftest import Cli
from tests.web.support import PASSWORD, form, make_user, signed_in

USERNAME, EMAIL = "silverfox77", "silverfox77@example.org"
SHORT = "must be at least 10 characters long"
COMMON = "is one of the most common passwords, the first an attacker tries: choose another"
OWN = "must not be the username or e-mail address of the account"


def problem(password: str) -> str | None:
    return password_problem(password, username=USERNAME, email=EMAIL)


def test_the_rule() -> None:
    assert problem("x" * (PASSWORD_MIN - 1)) == SHORT
    assert problem("x" * PASSWORD_MIN) is None
    assert problem("x" * PASSWORD_MAX) is None
    assert problem("x" * (PASSWORD_MAX + 1)) == "must be at most 1024 characters long"
    for common in ("password123", "PASSWORD123", "QwertyUiop", "1234567890"):
        assert problem(common) == COMMON, common
    for own in (USERNAME, "SilverFox77", EMAIL, "SILVERFOX77@example.ORG"):
        assert problem(own) == OWN, own
    assert problem(NEW_PASSWORD) is None
    assert problem("password123 but longer") is None  # only the whole of it counts
    assert password_problem(USERNAME, username=None, email=None) is None


# --- every way of choosing one ---------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    accepted: bool
    shown: str  # the page, or the command's stderr


@dataclass(frozen=True)
class Way:
    """How a password is chosen for the user USERNAME: what comes before (`prepare`: the user
    made, signed in, a link mailed), then the choice."""

    prepare: Callable[[TestClient, Engine], None]
    choose: Callable[[TestClient, Engine, Cli, str], Outcome]


def _with_a_link(client: TestClient, engine: Engine) -> None:
    make_user(engine, USERNAME, email=EMAIL)
    assert ask_for_link(client, USERNAME).status_code == 303


def _by_link(client: TestClient, engine: Engine, cli: Cli, password: str) -> Outcome:
    answer = set_by_link(client, link_in(outbox(engine)[-1]), password)
    return Outcome(answer.status_code == 303, answer.text)


def _signed_in(client: TestClient, engine: Engine) -> None:
    make_user(engine, USERNAME, email=EMAIL)
    signed_in(client, USERNAME)


def _on_account(client: TestClient, engine: Engine, cli: Cli, password: str) -> Outcome:
    answer = change_on_account(client, PASSWORD, password)
    return Outcome(answer.status_code == 303, answer.text)


def _an_administrator(client: TestClient, engine: Engine) -> None:
    make_user(engine, USERNAME, email=EMAIL)
    make_user(engine, "ada", permissions=["admin"])
    signed_in(client, "ada")


def _by_an_administrator(client: TestClient, engine: Engine, cli: Cli, password: str) -> Outcome:
    with read_session(engine) as session:
        user_id = session.scalars(select(User.id).where(User.username == USERNAME)).one()
    action = f"/admin/users/{user_id}/password"
    fields = form(client.get(action).text, action).fields
    answer = client.post(action, data={**fields, "method": "set", "password": password})
    return Outcome(answer.status_code == 200, answer.text)


def _nothing(client: TestClient, engine: Engine) -> None:
    pass


def _at_the_command_line(client: TestClient, engine: Engine, cli: Cli, password: str) -> Outcome:
    created = cli(
        *("users", "create", "--username", USERNAME, "--email", EMAIL),
        *("--first-name", "Sil", "--last-name", "Fox", "--password", "-"),
        input=f"{password}\n",
    )
    return Outcome(created.exit_code == 0, created.stderr)


WAYS = {
    "reset by mailed link": Way(_with_a_link, _by_link),
    "change on /account": Way(_signed_in, _on_account),
    "administrator's reset": Way(_an_administrator, _by_an_administrator),
    "regdesk users create": Way(_nothing, _at_the_command_line),
}
REFUSED = {
    "short": ("tiny-pass", SHORT),
    "common, in another case": ("PASSWORD123", COMMON),
    "the username, in another case": ("SilverFox77", OWN),
    "the e-mail address": (EMAIL, OWN),
}


def _password_hash(engine: Engine) -> str | None:
    """USERNAME's password hash; None too when there is no such user."""
    with read_session(engine) as session:
        return session.scalars(select(User.password_hash).where(User.username == USERNAME)).first()


def _users(engine: Engine) -> int:
    with read_session(engine) as session:
        return len(session.scalars(select(User.id)).all())


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
@pytest.mark.parametrize("way", list(WAYS.values()), ids=list(WAYS))
def test_every_way_of_choosing_a_password_asks_the_rule(
    client: TestClient, engine: Engine, cli: Cli, way: Way, case: str
) -> None:
    password, message = REFUSED[case]
    way.prepare(client, engine)
    before = (_password_hash(engine), _users(engine))
    outcome = way.choose(client, engine, cli, password)
    assert not outcome.accepted
    assert message in html.unescape(outcome.shown)
    assert (_password_hash(engine), _users(engine)) == before  # nothing changed


@pytest.mark.parametrize("way", list(WAYS.values()), ids=list(WAYS))
def test_every_way_accepts_a_good_password(
    client: TestClient, engine: Engine, cli: Cli, way: Way
) -> None:
    way.prepare(client, engine)
    before = _password_hash(engine)
    outcome = way.choose(client, engine, cli, NEW_PASSWORD)
    assert outcome.accepted, outcome.shown[-500:]
    assert _password_hash(engine) not in (None, before)
