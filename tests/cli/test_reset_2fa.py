"""`regdesk users reset-2fa USER` (accounts.md, Command line): every second factor and
recovery code of the user goes, an audit event and a mail say so, and signing in asks for
the password alone again."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, func, select

from regdesk.accounts.factor_models import RecoveryCode, TotpFactor
from regdesk.db import read_session
from tests.accounts.factor_support import add_app
from tests.accounts.password_support import outbox
from tests.client import TestClient
from tests.conftest import Cli
from tests.web.support import audit, log_in, make_user, signed_in

pytestmark = pytest.mark.postgres


def test_reset_removes_every_factor_and_code(client: TestClient, engine: Engine, cli: Cli) -> None:
    fox = make_user(engine, "fox")
    signed_in(client)
    add_app(client)

    done = cli.ok("users", "reset-2fa", "--json", "FOX")
    assert json.loads(done.stdout) == {"id": str(fox), "username": "fox", "factorsRemoved": 1}
    with read_session(engine) as session:
        for model in (TotpFactor, RecoveryCode):
            assert session.scalar(select(func.count()).select_from(model)) == 0
    [event] = audit(engine, "user.factors_reset")
    assert event.actor.startswith("cli:")
    assert (event.target_id, event.details) == (str(fox), {"factors_removed": 1})
    mail = outbox(engine)[-1]
    assert (mail.to, mail.subject) == (
        "fox@example.org",
        "Every second factor of your account was removed",
    )
    fresh = TestClient(client.app, base_url="https://testserver")
    assert log_in(fresh, "fox").headers["location"] == "/account"  # no second step


def test_an_unknown_user_is_refused(cli: Cli) -> None:
    refused = cli("users", "reset-2fa", "nobody")
    assert refused.exit_code == 1
    assert "no user goes by 'nobody'" in refused.stderr
