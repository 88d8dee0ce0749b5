"""Read pages and token grants under load: regdesk against its ceiling, interleaved.

For each database (SQLite; PostgreSQL when REGDESK_TEST_POSTGRES_URL is set): a fresh database
filled by `regdesk demo --users N --volunteers M`, one `regdesk serve` worker on loopback with
rate limits off, and wrk at 16 connections. Each endpoint is measured against the real server
and against the ceiling (bench/ceiling.py: same framework and server, same bytes, no database,
no auth), alternating, and the best of the rounds is kept for each.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
from sqlalchemy import text

from bench.ceiling import ceiling_key
from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.oauth.applications import create_application
from regdesk.oauth.authorization import approve, check_authorization_request

USERS = int(os.environ.get("BENCH_USERS", "100000"))
VOLUNTEERS = int(os.environ.get("BENCH_VOLUNTEERS", "20000"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
# BENCH_ENDPOINTS="token,departments": only the endpoints whose names hold one of these words.
ONLY_ENDPOINTS = [w for w in os.environ.get("BENCH_ENDPOINTS", "").split(",") if w]
CONNECTIONS = 16
REGDESK = Path(sys.executable).with_name("regdesk")
UVICORN = Path(sys.executable).with_name("uvicorn")


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    body: str = ""
    content_type: str = "application/json"
    auth: str = "service"  # which credential: service, user, basic


@dataclass(frozen=True)
class Run:
    requests_per_second: float
    p50_ms: float
    p99_ms: float


# --- a database and a server (bench/soak.py uses these too) ----------------------------------


def databases() -> list[str]:
    """SQLite, and PostgreSQL when REGDESK_TEST_POSTGRES_URL is set; BENCH_ONLY (sqlite or
    postgresql) keeps that one alone."""
    only = os.environ.get("BENCH_ONLY")
    found = ["sqlite"] + (["postgresql"] if os.environ.get("REGDESK_TEST_POSTGRES_URL") else [])
    return [name for name in found if only in (None, "", name)]


@contextmanager
def scratch_database(label: str, prefix: str) -> Iterator[str]:
    """The URL of an empty database on `label` (sqlite; postgresql: a schema of its own on
    REGDESK_TEST_POSTGRES_URL, reached through the URL's search_path), dropped afterwards."""
    if label == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/{prefix}.sqlite3"
        return
    base = os.environ["REGDESK_TEST_POSTGRES_URL"]
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = make_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        separator = "&" if "?" in base else "?"
        yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# How the benchmarks start `regdesk serve`: a new interpreter, each. The tests, which run some
# of them for a few seconds (the soak, the stampede, the webhook servers), start theirs from
# their fork server instead (tests/conftest.py), as they do every other server.
start_server: Callable[..., Any] = subprocess.Popen


def wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    # One client for the whole wait: each new one reads the CA bundle (16 ms of CPU) while
    # the server starting beside it needs the CPU.
    with httpx.Client() as poll:
        while time.monotonic() < deadline:
            assert process.poll() is None, "server stopped"
            try:
                if poll.get(f"{base}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise RuntimeError(f"{base} did not come up")


@contextmanager
def serving(
    env: dict[str, str], port: int, output: IO[bytes] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """One `regdesk serve` worker on loopback, healthy, stopped when the block ends. `output`:
    where its stdout and stderr (the access log) go; by default nowhere."""
    server = start_server(
        [str(REGDESK), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=output or subprocess.DEVNULL,
        stderr=output or subprocess.DEVNULL,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server)
        yield server
    finally:
        server.terminate()
        server.wait(timeout=10)


# --- the benchmark -------------------------------------------------------------------------


def _wrk(url: str, endpoint: Endpoint, headers: dict[str, str], folder: Path) -> Run:
    script = folder / "request.lua"
    lua_headers = "".join(f'wrk.headers["{k}"] = {json.dumps(v)}\n' for k, v in headers.items())
    script.write_text(
        f'wrk.method = "{endpoint.method}"\n'
        f"wrk.body = {json.dumps(endpoint.body)}\n"
        f'wrk.headers["Content-Type"] = "{endpoint.content_type}"\n' + lua_headers
    )
    output = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{CONNECTIONS}",
            f"-d{SECONDS}s",
            "--latency",
            "-s",
            str(script),
            url + endpoint.path,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if non_2xx:
        raise RuntimeError(f"{endpoint.name}: {non_2xx.group(1)} failed responses\n{output}")
    return Run(
        float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),  # type: ignore[union-attr]
        _latency(output, "50%"),
        _latency(output, "99%"),
    )


def _latency(output: str, percentile: str) -> float:
    value, unit = re.search(rf"{percentile}\s+([\d.]+)(us|ms|s)", output).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


BENCH_REDIRECT = "https://bench.example.org/callback"


def _credentials(database_url: str, base: str) -> dict[str, str]:
    """A service token, a user's token, and Basic credentials for the token endpoint, each
    got the way a tool gets them: from the running server's token endpoint, the user's
    through the consent the authorization page gives (user 3 of the demo)."""
    engine = make_engine(database_url)
    with write_session(engine) as session:
        service_app, secret = create_application(
            session,
            Actor("bench"),
            name="Bench",
            service_scopes="user:read volunteer:read registration:read",
            obo_scopes="pii:basic pii:email",
            redirect_uris=[BENCH_REDIRECT],
        )
        params = [
            ("client_id", str(service_app.id)),
            ("response_type", "code"),
            ("redirect_uri", BENCH_REDIRECT),
            ("scope", "pii:basic pii:email"),
        ]
        consented = check_authorization_request(session, params, base)
        location = approve(session, Actor("bench"), consented, 3, base)
    engine.dispose()
    auth = (str(service_app.id), secret)
    service = httpx.post(
        f"{base}/api/oauth/token", data={"grant_type": "client_credentials"}, auth=auth
    )
    code = parse_qs(urlsplit(location).query)["code"][0]
    user = httpx.post(
        f"{base}/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": BENCH_REDIRECT},
        auth=auth,
    )
    service.raise_for_status()
    user.raise_for_status()
    basic = base64.b64encode(f"{service_app.id}:{secret}".encode()).decode()
    return {
        "service": f"Bearer {service.json()['access_token']}",
        "user": f"Bearer {user.json()['access_token']}",
        "basic": f"Basic {basic}",
    }


VOLUNTEER_SEARCH = "/api/v0/volunteers/search"
REGISTRATION_SEARCH = "/api/v0/registration/search"


def _deep_cursor(base: str, authorization: str, path: str, depth: int) -> str:
    cursor: str | None = None
    for _ in range(depth):
        page = httpx.post(
            base + path,
            headers={"Authorization": authorization},
            json={"limit": 100, **({"nextPage": cursor} if cursor else {})},
        ).json()
        cursor = page["nextPage"]
    assert cursor is not None, f"not enough records for page {depth + 1} of {path}"
    return cursor


def _registered_user(base: str, authorization: str) -> int:
    """A user of the demo with a live registration (about 80% of them are)."""
    page = httpx.post(
        base + REGISTRATION_SEARCH, headers={"Authorization": authorization}, json={"limit": 100}
    ).json()
    return int(page["data"][-1]["user"]["id"])


def _endpoints(base: str, credentials: dict[str, str]) -> list[Endpoint]:
    service = credentials["service"]
    deep = _deep_cursor(base, service, VOLUNTEER_SEARCH, 149)
    deep_registrations = _deep_cursor(base, service, REGISTRATION_SEARCH, 149)
    return [
        Endpoint("volunteer search, first page", "POST", VOLUNTEER_SEARCH, '{"limit": 100}'),
        Endpoint(
            "volunteer search, page 150",
            "POST",
            VOLUNTEER_SEARCH,
            json.dumps({"limit": 100, "nextPage": deep}),
        ),
        Endpoint("registration search, first page", "POST", REGISTRATION_SEARCH, '{"limit": 100}'),
        Endpoint(
            "registration search, page 150",
            "POST",
            REGISTRATION_SEARCH,
            json.dumps({"limit": 100, "nextPage": deep_registrations}),
        ),
        Endpoint("user search", "POST", "/api/v0/users/search", '{"limit": 100}'),
        Endpoint("get user", "GET", "/api/v0/users/4242"),
        Endpoint(
            "get registration",
            "GET",
            f"/api/v0/users/{_registered_user(base, service)}/registration",
        ),
        Endpoint("departments", "GET", "/api/v0/volunteers/departments"),
        Endpoint("current user", "GET", "/api/users/current", auth="user"),
        Endpoint(
            "token (client_credentials)",
            "POST",
            "/api/oauth/token",
            "grant_type=client_credentials",
            "application/x-www-form-urlencoded",
            "basic",
        ),
    ]


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bench_database(database_url: str, label: str) -> dict[str, object]:
    # As users run it (the access log on: its default), but without rate limits, which would
    # answer one client's thousands of requests a second with 429 (REGDESK_RATE_LIMITS says so).
    env = {
        **os.environ,
        "REGDESK_DATABASE_URL": database_url,
        "REGDESK_RATE_LIMITS": "off",
    }
    subprocess.run([str(REGDESK), "db", "upgrade"], env=env, check=True, capture_output=True)
    started = time.perf_counter()
    subprocess.run(
        [str(REGDESK), "demo", "--users", str(USERS), "--volunteers", str(VOLUNTEERS)],
        env=env,
        check=True,
        capture_output=True,
    )
    demo_seconds = time.perf_counter() - started
    port, ceiling_port = free_port(), free_port()
    base, ceiling = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{ceiling_port}"
    results: dict[str, object] = {"demo_load_seconds": round(demo_seconds, 1)}
    with (
        tempfile.TemporaryDirectory() as scratch,
        (Path(scratch) / "server.log").open("wb") as log,  # its access log, as a file
        serving(env, port, log) as server,
    ):
        credentials = _credentials(database_url, base)
        folder = Path(scratch)
        endpoints = [
            endpoint
            for endpoint in _endpoints(base, credentials)
            if not ONLY_ENDPOINTS or any(word in endpoint.name for word in ONLY_ENDPOINTS)
        ]
        recorded = {}
        for endpoint in endpoints:
            headers = {"Authorization": credentials[endpoint.auth]}
            answer = httpx.request(
                endpoint.method,
                base + endpoint.path,
                headers={**headers, "Content-Type": endpoint.content_type},
                content=endpoint.body,
            )
            answer.raise_for_status()
            recorded[ceiling_key(endpoint.method, endpoint.path, endpoint.body)] = [
                answer.status_code,
                answer.headers["content-type"],
                answer.text,
            ]
        (folder / "ceiling.json").write_text(json.dumps(recorded))
        ceiling_server = subprocess.Popen(
            [
                str(UVICORN),
                "bench.ceiling:app",
                "--port",
                str(ceiling_port),
                "--log-level",
                "warning",
                "--no-access-log",
            ],
            env={**env, "BENCH_CEILING_FILE": str(folder / "ceiling.json")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1.5)
            for endpoint in endpoints:
                headers = {"Authorization": credentials[endpoint.auth]}
                real, top = [], []
                for _ in range(ROUNDS):  # interleaved, so noise hits both alike
                    top.append(_wrk(ceiling, endpoint, headers, folder))
                    real.append(_wrk(base, endpoint, headers, folder))
                best, best_top = (
                    max(real, key=lambda r: r.requests_per_second),
                    max(top, key=lambda r: r.requests_per_second),
                )
                ratio = round(best.requests_per_second / best_top.requests_per_second, 3)
                results[endpoint.name] = {
                    "requests_per_second": round(best.requests_per_second),
                    "p50_ms": round(best.p50_ms, 2),
                    "p99_ms": round(best.p99_ms, 2),
                    "ceiling_requests_per_second": round(best_top.requests_per_second),
                    "ratio_to_ceiling": ratio,
                }
                print(
                    f"  {label:<10} {endpoint.name:<30} {best.requests_per_second:>8.0f} req/s"
                    f"  p50 {best.p50_ms:6.2f} ms  p99 {best.p99_ms:7.2f} ms"
                    f"  ceiling {best_top.requests_per_second:>7.0f}"
                    f"  ratio {ratio:.3f}",
                    flush=True,
                )
        finally:
            ceiling_server.terminate()
            ceiling_server.wait(timeout=10)
        results["server_peak_rss_mb"] = round(_peak_rss_mb(server.pid), 1)
        print(
            f"  {label:<10} server peak memory {results['server_peak_rss_mb']} MB,"
            f" demo load {results['demo_load_seconds']} s",
            flush=True,
        )
    return results


def run() -> dict[str, object]:
    print(
        f"HTTP load, {USERS} users and {VOLUNTEERS} volunteers, {CONNECTIONS} connections,"
        f" {SECONDS} s x {ROUNDS} rounds each:",
        flush=True,
    )
    results: dict[str, object] = {
        "users": USERS,
        "volunteers": VOLUNTEERS,
        "connections": CONNECTIONS,
    }
    for label in databases():
        with scratch_database(label, "bench") as url:
            results[label] = bench_database(url, label)
    return results
