"""Configuration as operator.md names it: environment variables, overridden by options."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from regdesk.app import _outbox_runner
from regdesk.config import DEFAULT_DATABASE_URL, load_settings
from regdesk.db import make_engine
from regdesk.outbox.runner import POLL
from regdesk.webhooks.delivery import Sender


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "SECRET_KEY", "ACCESS_TOKEN_TTL", "RATE_LIMITS"):
        monkeypatch.delenv(f"REGDESK_{name}", raising=False)
    settings = load_settings()
    assert settings.database_url == DEFAULT_DATABASE_URL == "sqlite:///./regdesk.sqlite3"
    assert settings.secret_key is None
    assert settings.access_token_ttl == 3600
    assert settings.rate_limits == "on"


def test_environment_then_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGDESK_ACCESS_TOKEN_TTL", "600")
    monkeypatch.setenv("REGDESK_RATE_LIMITS", "off")
    assert load_settings().access_token_ttl == 600
    assert load_settings(access_token_ttl=900, rate_limits=None).access_token_ttl == 900
    assert load_settings().rate_limits == "off"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REGDESK_RATE_LIMITS", "sometimes"),
        ("REGDESK_ACCESS_TOKEN_TTL", "0"),
        ("REGDESK_SECRET_KEY", "short"),
        ("REGDESK_DEFAULT_PHONE_REGION", "USA"),
        ("REGDESK_OUTBOX_POLL_SECONDS", "0"),
    ],
)
def test_bad_values_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        load_settings()


def test_a_servers_outbox_is_looked_at_as_often_as_the_poll_setting_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REGDESK_OUTBOX_POLL_SECONDS reaches the delivery a server starts (app.py); unset, the
    runner's own 5 s."""
    monkeypatch.delenv("REGDESK_OUTBOX_POLL_SECONDS", raising=False)
    engine = make_engine("sqlite://")
    sender = Sender(engine, issuer="https://testserver", allow_private=False)
    try:
        for given, expected in ((None, POLL), ("0.25", 0.25)):
            if given is not None:
                monkeypatch.setenv("REGDESK_OUTBOX_POLL_SECONDS", given)
            settings = load_settings(database_url="sqlite://")
            assert _outbox_runner(settings, engine, sender, "k" * 32).poll == expected
    finally:
        sender.close()
        engine.dispose()
