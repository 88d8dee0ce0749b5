"""Opening day at the desk (issue 17): 8 desks checking tickets in at once against one server.

For each database (SQLite; PostgreSQL when REGDESK_TEST_POSTGRES_URL is set): a fresh database
filled by `regdesk demo` with BENCH_DESK_USERS users (100,000) of whom BENCH_DESK_REGISTRATIONS
(12,000) registered, about 85% of them paid and none checked in yet; one `regdesk serve` worker
on loopback with rate limits and the access log off.

Eight desk staff (`registration:desk` and `admin:ticket:scan`), each with a token of its own for
the ticket API, got the way a scanning app gets one: the staff member's consent, then the code
exchanged at the token endpoint. Each desk is a thread with its own HTTP connection that sends
`POST /api/v0/tickets/{ticket}/check-in` for its share of the paid registrations' tickets
(signed, as their QR codes hold them), one after another, as fast as the server answers. Every
DOUBLE_EVERY-th ticket is also in the next desk's share at the same place: two desks scan it at
about the same moment (a person who showed their ticket twice), and exactly one of them may
check it in; the other must get 409.

Reported: check-ins per second (successful ones, over the wall-clock time of the whole run),
scans per second (every request), p50 and p99 latency of a scan, the answers by status; then,
read from the database, how many registrations have more than one `registration.checked_in`
audit event (must be 0) and whether every ticket scanned is checked in.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy import func, select

from bench.http import BENCH_REDIRECT, REGDESK, databases, free_port, scratch_database, serving
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.events.service import current_event
from regdesk.keys import signing_key
from regdesk.oauth.applications import create_application
from regdesk.oauth.authorization import approve, check_authorization_request
from regdesk.oauth.permissions import DESK
from regdesk.registrations import ticket_codes
from regdesk.registrations.models import Order, OrderStatus, Registration
from regdesk.users.service import NewUser, create_user

USERS = int(os.environ.get("BENCH_DESK_USERS", "100000"))
REGISTRATIONS = int(os.environ.get("BENCH_DESK_REGISTRATIONS", "12000"))
DESKS = 8
DOUBLE_EVERY = 20  # one ticket in 20 is scanned by two desks at once
SCAN = "admin:ticket:scan"


@dataclass
class DeskRun:
    """What one desk saw: each scan's status and latency (seconds)."""

    statuses: Counter[int] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _staff_tokens(database_url: str, base: str) -> list[str]:
    """DESKS desk staff, and for each a token holding admin:ticket:scan, got through the
    staff member's consent and the token endpoint, as a scanning app gets it."""
    engine = make_engine(database_url)
    actor = Actor("bench")
    with write_session(engine) as session:
        scanner, secret = create_application(
            session,
            actor,
            name="Bench Scanner",
            obo_scopes=SCAN,
            redirect_uris=[BENCH_REDIRECT],
        )
        locations = []
        for i in range(DESKS):
            staff = create_user(
                session,
                actor,
                NewUser(
                    f"bench-desk-{i}",
                    f"bench-desk-{i}@example.org",
                    "Desk",
                    str(i),
                    permissions=[DESK, SCAN],
                ),
            )
            params = [
                ("client_id", str(scanner.id)),
                ("response_type", "code"),
                ("redirect_uri", BENCH_REDIRECT),
                ("scope", SCAN),
            ]
            consented = check_authorization_request(session, params, base)
            locations.append(approve(session, actor, consented, staff.id, base))
    engine.dispose()
    tokens = []
    for location in locations:
        answer = httpx.post(
            f"{base}/api/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": parse_qs(urlsplit(location).query)["code"][0],
                "redirect_uri": BENCH_REDIRECT,
            },
            auth=(str(scanner.id), secret),
        )
        answer.raise_for_status()
        tokens.append(answer.json()["access_token"])
    return tokens


def _tickets(database_url: str) -> list[tuple[int, str]]:
    """Every paid registration of the current event, not checked in, with its ticket signed
    as its QR code holds it."""
    engine = make_engine(database_url)
    with write_session(engine) as session:
        event = current_event(session)
        assert event is not None, "the demo made no event"
        key = signing_key(session, ticket_codes.PURPOSE, ticket_codes.ALGORITHM)
        rows = session.execute(
            select(Registration.id, Registration.ticket_code)
            .join(Order, Order.id == Registration.order_id)
            .where(
                Registration.event_id == event.id,
                Registration.ended_at.is_(None),
                Registration.checked_in_at.is_(None),
                Order.status == OrderStatus.PAID,
            )
            .order_by(Registration.id)
        ).all()
        found = [(i, ticket_codes.signed(code, key)) for i, code in rows]
    engine.dispose()
    return found


def _shares(tickets: list[str]) -> tuple[list[list[str]], int]:
    """Each desk's queue of tickets, round robin; every DOUBLE_EVERY-th ticket is also in the
    next desk's queue at the same place. And how many tickets are scanned twice."""
    queues: list[list[str]] = [[] for _ in range(DESKS)]
    doubles = 0
    for i, ticket in enumerate(tickets):
        desk = i % DESKS
        queues[desk].append(ticket)
        if i % DOUBLE_EVERY == 0:
            queues[(desk + 1) % DESKS].append(ticket)
            doubles += 1
    return queues, doubles


def _desk(base: str, token: str, queue: list[str], start: threading.Barrier, run: DeskRun) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        start.wait()
        for ticket in queue:
            began = time.perf_counter()
            try:
                answer = client.post(f"/api/v0/tickets/{ticket}/check-in")
            except httpx.HTTPError as error:
                run.failures.append(repr(error))
                continue
            run.latencies.append(time.perf_counter() - began)
            run.statuses[answer.status_code] += 1
            if answer.status_code not in (200, 409):
                run.failures.append(f"{answer.status_code} {answer.text[:200]}")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _checked_twice(database_url: str, ids: list[int]) -> tuple[int, int]:
    """How many registrations have more than one check-in event, and how many of `ids` are
    not checked in."""
    engine = make_engine(database_url)
    with write_session(engine) as session:
        per_registration = (
            select(AuditEvent.target_id, func.count().label("n"))
            .where(AuditEvent.action == "registration.checked_in")
            .group_by(AuditEvent.target_id)
            .subquery()
        )
        twice = session.scalar(
            select(func.count()).select_from(per_registration).where(per_registration.c.n > 1)
        )
        checked = set(
            session.scalars(select(Registration.id).where(Registration.checked_in_at.is_not(None)))
        )
    engine.dispose()
    return int(twice or 0), len(set(ids) - checked)


def bench_database(database_url: str, label: str) -> dict[str, object]:
    env = {
        **os.environ,
        "REGDESK_DATABASE_URL": database_url,
        "REGDESK_RATE_LIMITS": "off",
    }
    subprocess.run([str(REGDESK), "db", "upgrade"], env=env, check=True, capture_output=True)
    subprocess.run(
        [
            str(REGDESK),
            "demo",
            "--users",
            str(USERS),
            "--registrations",
            str(REGISTRATIONS),
            "--volunteers",
            "0",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serving(env, port):
        tokens = _staff_tokens(database_url, base)
        paid = _tickets(database_url)
        queues, doubles = _shares([ticket for _, ticket in paid])
        runs = [DeskRun() for _ in range(DESKS)]
        start = threading.Barrier(DESKS + 1)
        threads = [
            threading.Thread(target=_desk, args=(base, tokens[i], queues[i], start, runs[i]))
            for i in range(DESKS)
        ]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    failures: list[str] = []
    for run in runs:
        statuses.update(run.statuses)
        latencies.extend(run.latencies)
        failures.extend(run.failures)
    twice, missed = _checked_twice(database_url, [i for i, _ in paid])
    result: dict[str, object] = {
        "paid_registrations": len(paid),
        "scans": sum(len(queue) for queue in queues),
        "double_scans": doubles,
        "seconds": round(seconds, 2),
        "check_ins_per_second": round(statuses[200] / seconds, 1),
        "scans_per_second": round(sum(statuses.values()) / seconds, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 2),
        "answers": {str(status): n for status, n in sorted(statuses.items())},
        "failures": failures[:5],
        "registrations_checked_in_twice": twice,
        "tickets_scanned_not_checked_in": missed,
    }
    print(
        f"  {label:<10} {len(paid):,} tickets, {DESKS} desks, {doubles} double scans:"
        f" {result['check_ins_per_second']} check-ins/s ({result['scans_per_second']} scans/s),"
        f" p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms; answers {result['answers']};"
        f" checked in twice: {twice}; scanned but not checked in: {missed}",
        flush=True,
    )
    return result


def run() -> dict[str, object]:
    print(
        f"Desk check-ins: {USERS} users, {REGISTRATIONS} registered, {DESKS} desks at once:",
        flush=True,
    )
    results: dict[str, object] = {
        "users": USERS,
        "registrations": REGISTRATIONS,
        "desks": DESKS,
        "double_every": DOUBLE_EVERY,
    }
    for label in databases():
        with scratch_database(label, "bench_desk") as url:
            results[label] = bench_database(url, label)
    return results


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
