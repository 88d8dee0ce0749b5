"""/metrics (observability/): its values move as requests do, on `regdesk serve --workers 2`
whose workers add up (a directory of series per server start), and it is never public."""

from __future__ import annotations

import datetime as dt
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, insert

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import make_engine, utcnow, write_session
from regdesk.outbox.models import OutboxMessage
from tests import http_calls
from tests.client import TestClient
from tests.conftest import BACKENDS, PUBLIC_URL, bearer, scratch_database_url
from tests.helpers import free_port, live_server_process
from tests.observability.support import (
    REDIRECT,
    TOKEN,
    Samples,
    add_user,
    authorization_code,
    label_values,
    redis_url,
    register,
    scrape,
    value,
)

REQUESTS = "regdesk_http_requests_total"
GRANTS = "regdesk_token_grants_total"


@dataclass(frozen=True)
class Served:
    base: str
    listener: str  # REGDESK_METRICS_ADDRESS's /metrics
    temporary: Path  # the server's TMPDIR: its series' directory is made there

    @property
    def main(self) -> str:
        return f"{self.base}/metrics"

    def series_folders(self) -> list[Path]:
        return list(self.temporary.glob("regdesk-metrics-*"))


@contextmanager
def two_workers(database_url: str, tmp_path: Path) -> Iterator[Served]:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    metrics_port = free_port()
    settings = {
        "REGDESK_METRICS_TOKEN": TOKEN,
        "REGDESK_METRICS_ADDRESS": f"127.0.0.1:{metrics_port}",
        "REGDESK_REDIS_URL": redis_url(),
        "REGDESK_TOKEN_FAILURE_RATE_LIMIT": "3/minute",
        "REGDESK_ACCESS_LOG": "off",
        "TMPDIR": str(temporary),
    }
    with live_server_process(database_url, settings, arguments=["--workers", "2"]) as (base, _):
        yield Served(base, f"http://127.0.0.1:{metrics_port}/metrics", temporary)


@dataclass(frozen=True)
class Deployment:
    engine: Engine
    served: Served


@pytest.fixture(scope="module", params=BACKENDS)
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """A database and a server on it with two workers, shared by the tests that read what no
    other test here moves: token grants and refusals (from an application and a user of their
    own), and the outbox's messages (nothing else here writes one)."""
    directory = tmp_path_factory.mktemp("metrics")
    with scratch_database_url(request.param, directory, migrated=True) as url:
        engine = make_engine(url)
        try:
            with two_workers(url, directory) as served:
                yield Deployment(engine, served)
        finally:
            engine.dispose()


def each_worker(folder: Path, scratch: Path) -> dict[str, Samples]:
    """The counters of each worker alone, by process id (its own file in the directory)."""
    found: dict[str, Samples] = {}
    for file in folder.glob("counter_*.db"):
        alone = scratch / file.stem
        alone.mkdir(exist_ok=True)
        shutil.copyfile(file, alone / file.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))  # type: ignore[no-untyped-call]
        found[file.stem.removeprefix("counter_")] = {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(generate_latest(registry).decode())
            for sample in family.samples
        }
    return found


def test_a_request_is_counted_once_by_route_template_and_status_across_two_workers(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    user = add_user(engine)
    tool = register(engine, service_scopes="user:read")
    with two_workers(database_url, tmp_path) as served:
        issued = http_calls.post(
            f"{served.base}/api/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(tool.client_id, tool.client_secret),
        )
        headers = bearer(issued.json()["access_token"])
        found_path, missing_path = f"/api/v0/users/{user}", f"/api/v0/users/{user + 1000}"
        ok = {"route": "/api/v0/users/{id}", "method": "GET", "status": "200"}

        def status(path: str) -> int:
            with http_calls.client(base_url=served.base) as connection:  # a connection of its own
                return connection.get(path, headers=headers).status_code

        (folder,) = served.series_folders()
        sent = {200: 0, 404: 0}
        deadline = time.monotonic() + 90  # a loaded machine starts the second worker late
        with ThreadPoolExecutor(8) as pool:
            while time.monotonic() < deadline:  # until each worker has answered some of them
                answered = list(pool.map(status, [found_path] * 16 + [missing_path] * 4))
                assert answered.count(200) == 16, answered
                assert answered.count(404) == 4, answered
                sent[200], sent[404] = sent[200] + 16, sent[404] + 4
                workers = each_worker(folder, tmp_path)
                if len(workers) == 2 and all(value(s, REQUESTS, ok) for s in workers.values()):
                    break
        # A worker counts a request once its answer has gone out: the last answers can arrive
        # here a moment before their counts reach the workers' files.
        settled = time.monotonic() + 10
        while True:
            counted_by = [value(samples, REQUESTS, ok) for samples in workers.values()]
            if sum(counted_by) >= sent[200] or time.monotonic() > settled:
                break
            time.sleep(0.05)
            workers = each_worker(folder, tmp_path)
        assert len(counted_by) == 2, "both workers counted some"
        assert all(counted_by), counted_by
        assert sum(counted_by) == sent[200]

        for url, token in ((served.main, TOKEN), (served.listener, None)):
            samples = scrape(url, token)
            assert value(samples, REQUESTS, ok) == sent[200]
            assert value(samples, REQUESTS, {**ok, "status": "404"}) == sent[404]
            assert value(
                samples, "regdesk_http_request_duration_seconds_count", {"route": ok["route"]}
            ) == sum(sent.values())
            # Never the raw path: a label value per id would grow without bound.
            assert not {r for r in label_values(samples, REQUESTS, "route") if str(user) in r}
        for unknown in ("/no/such/place", f"/no/such/place/{user}", "/x" * 20):
            assert http_calls.get(served.base + unknown).status_code == 404
        samples = scrape(served.listener)
        assert value(samples, REQUESTS, {"route": "unmatched", "method": "GET", "status": "404"})
        assert label_values(samples, REQUESTS, "route") <= {
            "/api/oauth/token",
            "/api/v0/users/{id}",
            "/healthz",
            "/metrics",
            "unmatched",
        }
    assert not served.series_folders(), "the server's series go with it"


def test_a_server_of_one_worker_counts_its_requests_in_its_series_directory(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    """One worker is the `regdesk serve` process itself, which named the directory after the
    command line, and maybe Prometheus's client, were imported (the tests' fork server imports
    the app ahead): its series still go to files there, which the scrape reads."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    settings = {
        "REGDESK_METRICS_TOKEN": TOKEN,
        "REGDESK_ACCESS_LOG": "off",
        "TMPDIR": str(temporary),
    }
    with live_server_process(database_url, settings) as (base, _):
        assert http_calls.get(f"{base}/api/users/current").status_code == 401
        (folder,) = temporary.glob("regdesk-metrics-*")
        assert list(folder.glob("*.db")), "the worker's series are in files of the directory"
        refused = {"route": "/api/users/current", "method": "GET", "status": "401"}
        assert value(scrape(f"{base}/metrics", TOKEN), REQUESTS, refused) == 1


def test_token_grants_are_counted_by_type_and_outcome_on_both_paths(
    deployment: Deployment,
) -> None:
    engine, served = deployment.engine, deployment.served
    tool = register(engine, service_scopes="user:read", obo_scopes="pii:basic")
    user = add_user(engine)

    def token(auth: tuple[str, str] = (tool.client_id, tool.client_secret), **form: str) -> int:
        answer = http_calls.post(f"{served.base}/api/oauth/token", data=form, auth=auth)
        return answer.status_code

    quick = {"grant_type": "client_credentials"}
    for _ in range(3):  # the quick path's own request (oauth/quick_grant.py)
        assert token(**quick) == 200
    for _ in range(2):  # a field the quick path does not take: the framework's grant answers
        assert token(**quick, resource="https://tool.example.org") == 200
    assert token(**quick, scope="user:write") == 400  # not approved: invalid_scope
    code = authorization_code(engine, tool, user, served.base)
    first = http_calls.post(
        f"{served.base}/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        auth=(tool.client_id, tool.client_secret),
    ).json()["refresh_token"]
    assert token(grant_type="refresh_token", refresh_token=first) == 200
    assert token(grant_type="refresh_token", refresh_token=first) == 400  # reused
    wrong = (tool.client_id, "not the secret")
    for _ in range(3):  # REGDESK_TOKEN_FAILURE_RATE_LIMIT=3/minute
        assert token(wrong, **quick) == 401
    assert token(wrong, **quick) == 429

    samples = scrape(served.main, TOKEN)

    def grants(grant_type: str, outcome: str) -> float:
        return value(samples, GRANTS, {"grant_type": grant_type, "outcome": outcome})

    assert grants("client_credentials", "issued") == 5
    assert grants("client_credentials", "invalid_scope") == 1
    assert grants("client_credentials", "invalid_client") == 3
    assert grants("client_credentials", "too_many_requests") == 1
    assert grants("authorization_code", "issued") == 1
    assert grants("refresh_token", "issued") == 1
    assert grants("refresh_token", "invalid_grant") == 1
    assert value(samples, "regdesk_refresh_token_reuse_detections_total") == 1
    assert value(samples, "regdesk_rate_limit_refusals_total", {"limit": "token_failure"}) == 1
    assert label_values(samples, "regdesk_rate_limit_refusals_total", "limit") == {"token_failure"}


def test_the_outbox_backlog_is_the_messages_waiting_and_the_oldest_age(
    deployment: Deployment,
) -> None:
    engine, served = deployment.engine, deployment.served
    now = utcnow()
    later = now + dt.timedelta(hours=1)  # waiting for a retry: no runner takes them meanwhile

    def message(channel: str, status: str, age: dt.timedelta) -> dict[str, object]:
        created = now - age
        return {"channel": channel, "payload": {}, "status": status, "created_at": created}

    rows = [
        *(message("mail", "pending", dt.timedelta(minutes=m)) for m in (10, 5, 1)),
        message("mail", "sent", dt.timedelta(hours=2)),
        *(message("webhook", "pending", dt.timedelta(minutes=m)) for m in (2, 1)),
        message("webhook", "failed", dt.timedelta(days=1)),
    ]
    with write_session(engine) as session:
        session.execute(insert(OutboxMessage), [{**row, "due_at": later} for row in rows])

    samples = scrape(served.listener)
    waiting, oldest = "regdesk_outbox_waiting_messages", "regdesk_outbox_oldest_waiting_seconds"
    assert value(samples, waiting, {"channel": "mail"}) == 3
    assert value(samples, waiting, {"channel": "webhook"}) == 2
    assert 600 <= value(samples, oldest, {"channel": "mail"}) < 900
    assert 120 <= value(samples, oldest, {"channel": "webhook"}) < 420


def test_metrics_on_the_main_port_needs_the_configured_token(
    engine: Engine, database_url: str
) -> None:
    closed = create_app(load_settings(database_url=database_url, public_url=PUBLIC_URL))
    with TestClient(closed, base_url=PUBLIC_URL) as client:
        assert client.get("/metrics", headers=bearer(TOKEN)).status_code == 404

    opened = create_app(
        load_settings(database_url=database_url, public_url=PUBLIC_URL, metrics_token=TOKEN)
    )
    with TestClient(opened, base_url=PUBLIC_URL) as client:
        for refused in ({}, bearer(TOKEN[:-1]), bearer(TOKEN + "x"), {"Authorization": TOKEN}):
            answer = client.get("/metrics", headers=refused)
            assert answer.status_code == 401
            assert "regdesk_" not in answer.text
            assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        answer = client.get("/metrics", headers=bearer(TOKEN))
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/plain")
        assert "regdesk_outbox_waiting_messages" in answer.text
        assert answer.headers["cache-control"] == "no-store"


def test_a_metrics_token_shorter_than_32_characters_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 characters"):
        load_settings(metrics_token="short")
