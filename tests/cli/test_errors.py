"""A service's `Invalid` on the command line: one line per field on stderr, exit status 1."""

from __future__ import annotations

from tests.conftest import Cli

NEW_USER = ["users", "create", "--no-password", "--last-name", "Fox"]


def test_every_bad_field_is_a_line_of_its_own(cli: Cli) -> None:
    cli.ok(*NEW_USER, "--username", "fox", "--email", "fox@example.org", "--first-name", "Fae")
    result = cli(*NEW_USER, "--username", "fox", "--email", "nope", "--first-name", " ", "--json")
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 3
    assert "Error: username: 'fox' is taken" in lines
    assert "Error: firstName: may not be empty" in lines
    assert any(
        line.startswith("Error: email: 'nope' is not a valid e-mail address") for line in lines
    )


def test_an_application_s_bad_fields_are_named_alike(cli: Cli) -> None:
    result = cli("apps", "create", "--name", " ", "--obo-scopes", "pii:nonsense")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert sorted(result.stderr.splitlines()) == [
        "Error: name: may not be empty",
        "Error: obo_scopes: unknown scope 'pii:nonsense'",
    ]
