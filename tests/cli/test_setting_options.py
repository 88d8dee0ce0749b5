"""Every setting is an option of `regdesk serve` (or said to be environment-only), and what is
given there reaches the app the server runs (cli/setting_options.py)."""

from __future__ import annotations

from regdesk.cli import main
from regdesk.cli.serve import serve
from regdesk.cli.setting_options import ENVIRONMENT_ONLY, option_for
from regdesk.config import Settings
from tests import http_calls
from tests.conftest import Cli
from tests.helpers import live_server_process


def test_every_setting_is_an_option_of_serve_or_environment_only() -> None:
    options = {p.name for p in (*main.params, *serve.params)}
    for name in Settings.model_fields:
        if name in ENVIRONMENT_ONLY:
            assert name not in options, f"{name} is a secret: not on the command line"
            assert option_for(name) is None
        else:
            assert name in options, f"REGDESK_{name.upper()} is no option of regdesk serve"
            assert option_for(name) in (
                f"regdesk --{name.replace('_', '-')}",
                f"regdesk serve --{name.replace('_', '-')}",
            )


def test_serve_lists_each_option_once_with_its_variable(cli: Cli) -> None:
    text = cli.ok("serve", "--help").stdout
    assert text.count("--signup ") == 1
    assert "[REGDESK_SIGNUP]" in text
    assert "[REGDESK_KEY_OVERLAP]" in text
    assert text.index("--host") < text.index("--signup")  # its own options first


def test_an_option_given_to_serve_reaches_the_app_it_serves(database_url: str) -> None:
    with live_server_process(database_url, arguments=["--signup", "closed"]) as (base, _):
        closed = http_calls.get(f"{base}/signup")
    assert closed.status_code == 404
    assert "Sign-up is closed" in closed.text  # open is the default (tests/accounts)


def test_a_bad_value_is_refused_naming_its_variable(cli: Cli) -> None:
    result = cli("serve", "--key-overlap", "a week")
    assert result.exit_code == 1
    assert "REGDESK_KEY_OVERLAP" in result.stderr
