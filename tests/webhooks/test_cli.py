"""`regdesk webhooks add|list|remove` (events.md, Admin area and CLI; operator.md: `--json`
prints one document, errors go to stderr)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine
from tests.conftest import Cli
from tests.webhooks.support import application

pytestmark = pytest.mark.postgres


def test_add_list_and_remove(engine: Engine, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGDESK_WEBHOOKS_ALLOW_PRIVATE", "on")
    client_id = application(engine)
    other = application(engine, "Badges")
    added = json.loads(
        cli.ok(
            "webhooks", "add", str(client_id), "--url", "http://127.0.0.1:8123/in",
            "--event", "user-updated", "--event", "ping", "--json",
        ).stdout
    )  # fmt: skip
    assert added["client_id"] == str(client_id)
    assert (added["url"], added["events"], added["enabled"]) == (
        "http://127.0.0.1:8123/in",
        ["user-updated", "ping"],
        True,
    )
    cli.ok("webhooks", "add", str(other), "--url", "http://127.0.0.1:8124/in")
    listed = json.loads(cli.ok("webhooks", "list", str(client_id), "--json").stdout)
    assert [e["id"] for e in listed["endpoints"]] == [added["id"]]
    assert len(json.loads(cli.ok("webhooks", "list", "--json").stdout)["endpoints"]) == 2
    cli.ok("webhooks", "remove", str(added["id"]))
    listed = json.loads(cli.ok("webhooks", "list", str(client_id), "--json").stdout)
    assert listed["endpoints"] == []
    gone = cli("webhooks", "remove", str(added["id"]))
    assert gone.exit_code != 0


def test_a_private_target_is_refused_without_the_setting(engine: Engine, cli: Cli) -> None:
    client_id = application(engine)
    refused = cli("webhooks", "add", str(client_id), "--url", "https://localhost/in")
    assert refused.exit_code == 1
    assert "private address" in refused.stderr
    refused = cli("webhooks", "add", str(client_id), "--url", "http://127.0.0.1/in")
    assert "https" in refused.stderr
    unknown = cli("webhooks", "add", str(client_id), "--url", "https://x", "--event", "nope")
    assert unknown.exit_code == 2
    assert json.loads(cli.ok("webhooks", "list", "--json").stdout) == {"endpoints": []}


def test_an_unknown_application(engine: Engine, cli: Cli) -> None:
    refused = cli("webhooks", "add", "999", "--url", "https://example.org/in")
    assert refused.exit_code == 1
    assert "999" in refused.stderr
