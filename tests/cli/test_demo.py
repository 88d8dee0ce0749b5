"""`regdesk demo` as an organizer types it (the data it makes: tests/demo/test_demo.py)."""

from __future__ import annotations

import json

from tests.conftest import Cli


def test_demo_fills_once_and_if_empty_skips_after(cli: Cli) -> None:
    made = json.loads(cli.ok("demo", "--users", "50", "--volunteers", "10", "--json").stdout)
    assert made["users"] == 50
    assert {login["username"] for login in made["logins"]} == {"admin", "lead", "attendee"}
    again = cli("demo", "--users", "50", "--volunteers", "10")
    assert again.exit_code == 1
    assert "empty database" in again.stderr
    skipped = json.loads(cli.ok("demo", "--if-empty", "--json").stdout)
    assert skipped["skipped"] is True
