"""REGDESK_LOG_FORMAT=json (observability/logs.py, web/access_log.py): every line `regdesk
serve` writes is one JSON object; an access line carries the request id its answer carried in
`X-Request-ID`, which the audit events of that request carry too, and the service's own lines
written during a request carry it as well; no token, secret or password reaches a line."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from regdesk.audit.models import AuditEvent
from regdesk.db import read_session
from regdesk.observability.logs import JsonLines, RequestStamped
from regdesk.web.access_log import LinesOffTheLoop, log_config
from tests import http_calls
from tests.conftest import bearer
from tests.helpers import live_server_process
from tests.observability.support import add_user, register

UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"  # nothing listens: the limits warn, in a request


def lines_of(path: Path) -> list[dict[str, Any]]:
    parsed = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(isinstance(line, dict) for line in parsed)
    return parsed


def test_json_lines_carry_the_request_id_of_the_answer_and_of_its_audit_events(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    tool = register(engine, service_scopes="user:read")
    user = add_user(engine)
    auth = (tool.client_id, tool.client_secret)
    out, err = tmp_path / "access.log", tmp_path / "service.log"
    settings = {"REGDESK_LOG_FORMAT": "json", "REGDESK_REDIS_URL": UNREACHABLE_REDIS}
    with (
        out.open("wb") as stdout,
        err.open("wb") as stderr,
        live_server_process(database_url, settings, stdout=stdout, stderr=stderr) as (base, _),
    ):
        issued = http_calls.post(
            f"{base}/api/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=auth,
            headers={"X-Request-ID": "issue-1"},
        )
        token = issued.json()["access_token"]
        read = http_calls.get(
            f"{base}/api/v0/users/{user}?access_token={token}&x=1",
            headers={**bearer(token), "X-Request-ID": "<script>alert(1)</script>"},
        )
        revoked = http_calls.post(
            f"{base}/api/oauth/revoke",
            data={"token": token},
            auth=auth,
            headers={"X-Request-ID": "revoke.1"},
        )
    assert (issued.status_code, read.status_code, revoked.status_code) == (200, 200, 200)
    assert issued.headers["X-Request-ID"] == "issue-1"
    replaced = read.headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", replaced)

    access, service = lines_of(out), lines_of(err)  # every line parses
    for line in access + service:
        assert {"time", "level", "logger", "message", "request_id"} <= line.keys()
        assert dt.datetime.fromisoformat(line["time"]).tzinfo is not None
    by_id = {line["request_id"]: line for line in access}
    assert by_id["revoke.1"]["method"] == "POST"
    assert by_id["revoke.1"]["path"] == "/api/oauth/revoke"
    assert by_id["revoke.1"]["status"] == 200
    assert by_id["revoke.1"]["client"].startswith("127.0.0.1:")
    assert isinstance(by_id["revoke.1"]["duration_ms"], float)
    assert by_id["revoke.1"]["logger"] == "uvicorn.access"
    assert by_id[replaced]["path"] == f"/api/v0/users/{user}?access_token=...&x=1"
    assert by_id["issue-1"]["path"] == "/api/oauth/token"

    # The service's own line, written while answering the token request.
    (warning,) = [line for line in service if line["logger"] == "regdesk.ratelimit"]
    assert warning["level"] == "WARNING"
    assert warning["request_id"] == "issue-1"
    assert any(line["logger"].startswith("uvicorn") for line in service)

    with read_session(engine) as session:
        events = dict(session.execute(select(AuditEvent.action, AuditEvent.request_id)).all())
    assert events["oauth.token_revoked"] == "revoke.1"

    written = out.read_text() + err.read_text()
    for secret in (token, tool.client_secret, "<script>"):
        assert secret not in written


def test_text_is_the_default_and_json_writes_the_services_lines_off_the_loop() -> None:
    text = log_config()
    assert "json" not in text["formatters"]
    assert "root" not in text
    json_config = log_config("json")
    assert json_config["handlers"]["default"]["()"] is LinesOffTheLoop
    assert json_config["handlers"]["default"]["formatter"] == "json"
    assert json_config["handlers"]["default"]["filters"] == ["request_stamped"]
    assert json_config["formatters"]["json"]["()"] is JsonLines
    assert json_config["filters"]["request_stamped"]["()"] is RequestStamped
    assert json_config["root"]["handlers"] == ["default"]
