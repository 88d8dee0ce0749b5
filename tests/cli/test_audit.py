"""`regdesk audit` (issue 7): the trail of security events, as real operations leave it,
filtered by action, actor, target, user and dates, newest first, a page at a time."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from tests.client import TestClient
from tests.conftest import Apps, Cli
from tests.oauth.user_flow import make_flow
from tests.web.support import log_in, make_user


@dataclass(frozen=True)
class Trail:
    """What happened, in this order: owl failed to log in then logged in; an organizer
    registered an application and suspended it; fox's tool presented a spent refresh token."""

    owl: int
    fox: int
    client_id: str
    grant_app: str


@pytest.fixture
def trail(cli: Cli, engine: Engine, client: TestClient, apps: Apps) -> Trail:
    owl = make_user(engine, "owl")
    assert log_in(client, "owl", "not the password").status_code == 200
    assert log_in(client, "owl").status_code == 303
    created = json.loads(cli.ok("apps", "create", "--json", "--name", "Clock").stdout)
    cli.ok("apps", "suspend", created["client_id"])
    flow = make_flow(client, apps, engine)
    first = flow.tokens()
    assert flow.refresh(first["refresh_token"]).status_code == 200
    assert flow.refresh(first["refresh_token"]).json()["error"] == "invalid_grant"
    return Trail(owl, flow.user_id, created["client_id"], flow.app.client_id)


def audit(cli: Cli, *args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(cli.ok("audit", "--json", *args).stdout)
    return document


def actions(cli: Cli, *args: str) -> list[str]:
    return [event["action"] for event in audit(cli, *args)["events"]]


def test_a_failed_login_is_found_by_its_action(cli: Cli, trail: Trail) -> None:
    (event,) = audit(cli, "--action", "user.login_failed")["events"]
    assert event["actor"] == "anonymous"
    assert event["ip_address"] == "testclient"
    assert (event["target_type"], event["target_id"]) == ("user", str(trail.owl))
    assert event["details"] == {"reason": "wrong_password"}
    assert event["occurred_at"].endswith("Z")


def test_the_events_of_a_user_are_those_by_them_and_about_them(cli: Cli, trail: Trail) -> None:
    assert actions(cli, "--user", str(trail.owl)) == [
        "user.login",
        "user.login_failed",
        "user.created",
    ]
    both = actions(cli, "--user", str(trail.owl), "--action", "user.login_failed",
                   "--action", "user.login")  # fmt: skip
    assert both == ["user.login", "user.login_failed"]
    (reuse,) = audit(cli, "--user", str(trail.fox), "--action", "oauth.refresh_token_reused")[
        "events"
    ]
    assert reuse["actor"] == f"app:{trail.grant_app}"
    assert reuse["actor_user_id"] == trail.fox
    assert reuse["target_type"] == "grant"


def test_an_application_s_events_are_found_by_target_and_by_actor(cli: Cli, trail: Trail) -> None:
    assert actions(cli, "--target", f"application:{trail.client_id}") == [
        "app.suspended",
        "app.created",
    ]
    organizer = Actor.command_line().label
    by_organizer = audit(cli, "--actor", organizer)["events"]
    assert [e["action"] for e in by_organizer] == ["app.suspended", "app.created"]
    assert {e["target_id"] for e in by_organizer} == {trail.client_id}


def test_dates_bound_the_trail_in_utc(cli: Cli, trail: Trail) -> None:
    today = dt.datetime.now(dt.UTC).date()
    everything = actions(cli)
    assert "oauth.refresh_token_reused" in everything
    assert actions(cli, "--since", today.isoformat(), "--until", today.isoformat()) == everything
    tomorrow = (today + dt.timedelta(days=1)).isoformat()
    yesterday = (today - dt.timedelta(days=1)).isoformat()
    assert actions(cli, "--since", tomorrow) == []
    assert actions(cli, "--until", yesterday) == []
    an_hour_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).isoformat()
    assert actions(cli, "--since", an_hour_ago) == everything
    assert actions(cli, "--until", an_hour_ago.replace("+00:00", "")) == []


def test_pages_of_events_follow_one_another(cli: Cli, trail: Trail) -> None:
    everything = audit(cli, "--limit", "1000")
    assert everything["older"] is None
    ids = [event["id"] for event in everything["events"]]
    assert ids == sorted(ids, reverse=True)
    seen: list[int] = []
    before: list[str] = []
    while True:
        page = audit(cli, "--limit", "3", *before)
        assert len(page["events"]) <= 3
        seen.extend(event["id"] for event in page["events"])
        if page["older"] is None:
            break
        before = ["--before", str(page["older"])]
    assert seen == ids


def test_text_output_has_a_line_per_event(cli: Cli, trail: Trail) -> None:
    lines = cli.ok("audit", "--target", f"application:{trail.client_id}").stdout.splitlines()
    assert len(lines) == 2
    assert "app.suspended" in lines[0]
    assert f"application:{trail.client_id}" in lines[0]
    assert '{"imported_credentials": false, "name": "Clock"}' in lines[1]
    assert cli.ok("audit", "--action", "no.such_action").stdout.strip() == "no events"
    more = cli.ok("audit", "--limit", "1").stdout.splitlines()
    assert more[-1].startswith("(older events: --before ")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--target", "application"], "is not TYPE:ID"),
        (["--target", ":3"], "is not TYPE:ID"),
        (["--since", "yesterday"], "is not an ISO date"),
        (["--until", "2026-02-30"], "is not an ISO date"),
        (["--since", "2026-01-02", "--until", "2026-01-01"], "--since must come before --until"),
        (["--limit", "0"], "--limit"),
        (["--user", "fox"], "--user"),
        (["--before", "-1"], "--before"),
    ],
)
def test_bad_options_are_refused_with_a_message(
    cli: Cli, arguments: list[str], message: str
) -> None:
    result = cli("audit", "--json", *arguments)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""
