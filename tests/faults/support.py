"""What the fault tests share: waiting on a condition, a `regdesk serve` that can be killed and
started again on the same database, a user's grants obtained the real way, and the ledger of
faults injected (build/faults.json)."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.exc import OperationalError

from regdesk.audit.service import Actor
from regdesk.db import read_session, write_session
from regdesk.oauth.applications import create_application
from regdesk.oauth.authorization import approve, check_authorization_request
from regdesk.oauth.models import RefreshToken
from regdesk.oauth.tokens import token_key
from tests import forkserver, http_calls
from tests.conftest import Registered, postgres_base_url
from tests.helpers import free_port

T = TypeVar("T")

# Both databases when PostgreSQL is configured (the pattern of tests/conftest.py); a run
# without it has nothing to run there, rather than a skipped test.
BACKENDS = [
    "sqlite",
    *([pytest.param("postgresql", marks=pytest.mark.postgres)] if postgres_base_url() else []),
]

REDIRECT = "https://tool.example.org/callback"
ISSUER = "https://testserver"
LEDGER = Path(__file__).resolve().parents[2] / "build" / "faults.json"


def wait_until(condition: Callable[[], T], timeout: float, what: str, every: float = 0.01) -> T:
    """The first truthy value of `condition()`, polled until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


# --- the ledger ------------------------------------------------------------------------------


class FaultLedger:
    """Counts the faults one test injects (each kill or restart is one) into build/faults.json,
    merged with every other test's entry: a test run again replaces its own entry, so the
    totals are those of the latest run of each test, on each database."""

    def __init__(self, test: str, database: str) -> None:
        self.test, self.database = test, database
        self.faults: list[dict[str, Any]] = []
        IN_THIS_PROCESS[test] = self
        self._update()

    def inject(self, kind: str, **detail: Any) -> None:
        self.faults.append({"kind": kind, **detail})
        self._update()

    def _update(self) -> None:
        LEDGER.parent.mkdir(parents=True, exist_ok=True)
        with open(LEDGER.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # pytest-xdist workers write it at once
            ledger = read_ledger()
            tests = ledger.get("tests", {})
            tests[self.test] = {
                "database": self.database,
                "faults": self.faults,
                "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
            LEDGER.write_text(json.dumps(summarise(tests), indent=2) + "\n")


IN_THIS_PROCESS: dict[str, FaultLedger] = {}  # for the summary of a pytest-xdist worker


def read_ledger() -> dict[str, Any]:
    try:
        ledger: dict[str, Any] = json.loads(LEDGER.read_text())
    except (OSError, ValueError):
        return {}
    return ledger


def summarise(tests: Mapping[str, Any]) -> dict[str, Any]:
    by_database: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for entry in tests.values():
        for fault in entry["faults"]:
            by_database[entry["database"]] = by_database.get(entry["database"], 0) + 1
            by_kind[fault["kind"]] = by_kind.get(fault["kind"], 0) + 1
    return {
        "faults_injected": sum(by_database.values()),
        "by_database": dict(sorted(by_database.items())),
        "by_kind": dict(sorted(by_kind.items())),
        "tests": dict(sorted(tests.items())),
    }


# --- a server to kill ------------------------------------------------------------------------


class Server:
    """`regdesk serve` from the installed console script, started and killed at will on one
    database; its output goes to a log file, shown when a test fails."""

    def __init__(
        self, database_url: str, log: Path, settings: Mapping[str, str] | None = None
    ) -> None:
        self.database_url = database_url
        self.log = log
        self.settings = dict(settings or {})
        self.process: forkserver.Process | None = None
        self.base = ""

    def start(self) -> str:
        assert self.process is None, "already running"
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
        # Load on loopback (operator.md): no rate limits, no line per request.
        env.update(REGDESK_RATE_LIMITS="off", REGDESK_ACCESS_LOG="off", **self.settings)
        env["REGDESK_DATABASE_URL"] = self.database_url
        port = free_port()
        regdesk = Path(sys.executable).with_name("regdesk")
        with open(self.log, "ab") as log:
            self.process = forkserver.popen(
                [str(regdesk), "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.base = f"http://127.0.0.1:{port}"
        wait_until(self._healthy, 60, f"regdesk serve to answer /healthz\n{self.tail()}", 0.05)
        return self.base

    def _healthy(self) -> bool:
        assert self.process is not None
        assert self.process.poll() is None, f"regdesk serve exited:\n{self.tail()}"
        try:
            return http_calls.get(f"{self.base}/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """kill -9: no shutdown, no rollback, no flush."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None

    def pause(self) -> None:
        """SIGSTOP: frozen where it stands, to look at the database before killing it."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self.process = None

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def freeze_between_commit_and_answer(
    server: Server, unanswered: Callable[[], bool], answered: Callable[[], int]
) -> bool:
    """Freeze the server while something it committed is still unanswered; keep it frozen
    (True) if, once the answers it had already sent are read, that is still so."""
    if not seen(unanswered):
        return False
    server.pause()
    settled: list[int] = []

    def answers_read() -> bool:
        settled.append(answered())
        return len(settled) > 20 and settled[-1] == settled[-21]

    wait_until(answers_read, 10, "the answers sent before the freeze to be read")
    if seen(unanswered):
        return True
    server.resume()
    return False


def seen(look: Callable[[], bool]) -> bool:
    """`look()`, or False when SQLite could not begin the read (SQLITE_PROTOCOL): a server frozen
    in the middle of writing its WAL index can hold the lock a reader needs to make sense of
    it, and SQLite gives up after retrying for a while. Nothing was seen; the caller tries
    again with the server running."""
    try:
        return look()
    except OperationalError as error:
        if getattr(error.orig, "sqlite_errorcode", None) == sqlite3.SQLITE_PROTOCOL:
            return False
        raise


@contextmanager
def running(server: Server) -> Iterator[Server]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- a user's grants, obtained the real way -------------------------------------------------


@dataclass
class Held:
    """One grant as its tool holds it: the tokens it last received."""

    grant_id: int
    access_token: str
    refresh_token: str
    in_flight: bool = False  # a request with refresh_token was sent and got no answer
    history: list[str] = field(default_factory=list)  # every refresh token it has held


def register_tool(engine: Engine, name: str = "Schedule App") -> Registered:
    with write_session(engine) as session:
        application, secret = create_application(
            session,
            Actor("test"),
            name=name,
            obo_scopes="pii:basic pii:email",
            redirect_uris=[REDIRECT],
        )
    return Registered(str(application.id), secret)


def obtain_grant(engine: Engine, base: str, tool: Registered, user_id: int) -> Held:
    """The user consents (the consent page's own function), the tool redeems the code at the
    live server's token endpoint: a real grant with its first access and refresh tokens."""
    params = [
        ("client_id", tool.client_id),
        ("response_type", "code"),
        ("redirect_uri", REDIRECT),
        ("scope", "pii:basic pii:email"),
        ("state", "s"),
    ]
    with write_session(engine) as session:
        request = check_authorization_request(session, params, ISSUER)
        location = approve(session, Actor("test"), request, user_id, ISSUER)
    code = parse_qs(urlsplit(location).query)["code"][0]
    answer = http_calls.post(
        f"{base}/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        auth=(tool.client_id, tool.client_secret),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    with read_session(engine) as session:
        grant_id = session.scalars(
            select(RefreshToken.grant_id).where(
                RefreshToken.token_hash == token_key(tokens["refresh_token"])
            )
        ).one()
    return Held(
        grant_id, tokens["access_token"], tokens["refresh_token"], history=[tokens["refresh_token"]]
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
