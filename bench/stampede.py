"""The stampede (issue 20): registration opens at a set hour, and thousands of people press the
button in the same minute.

For each database (SQLite; PostgreSQL when REGDESK_TEST_POSTGRES_URL is set; BENCH_ONLY keeps
one): a fresh database filled by `regdesk import` with an event, one public product of
STAMPEDE_PLACES places (2,000), a T-shirt question, and STAMPEDE_ATTENDEES users (3,000), each
with a password. The document carries the password as `passwordHash`, hashed once here by the
service's own argon2 (so each sign-in costs the server a full check, while making the users
costs one hash, not thousands). Then the servers, as a deployment runs them, rate limits on at
their defaults: on SQLite one `regdesk serve`; on PostgreSQL two `regdesk serve` processes on
the same database, sharing their rate-limit counters in Redis (BENCH_REDIS_URL), attendees
handed to them in turn as a load balancer does.

Each attendee is a browser of its own (one httpx client, one cookie jar) coming from an address
of its own in 127.0.0.0/8, as people registering from home do, so the login limit per address
(REGDESK_LOGIN_RATE_LIMIT, 120/minute) holds as it would: it is counted, and refuses no one.
STAMPEDE_CONCURRENCY (64) attendees are active at a time; each, one after another:
- opens /login?next=/register (the sign-in page and its CSRF pairing), takes THINK seconds to
  type, and signs in; the 303 to /register is followed at once, as a browser does;
- on /register, if the product shows sold out, leaves (refused); else takes THINK seconds to
  choose a T-shirt size and a badge name, and posts the form; a 303 (then its order page, at
  once) is a registration, a 400 saying "Sold out." a refusal.

Reported per database: registrations per second (the successful ones, from the first
registration sent to the last one answered), p50 and p99 of the registration POST (and of the
sign-in POST, which argon2 dominates), the answers by step and status, 5xx (must be 0) and 429;
then, from the database: places sold against capacity (never over), people holding more than
one registration or order (must be 0), and whether the people holding a place are exactly those
who were told they registered.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import random
import re
import secrets
import ssl
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import httpx
import redis
from sqlalchemy import func, select
from sqlalchemy.orm import InstrumentedAttribute

from bench.http import REGDESK, databases, free_port, scratch_database, serving
from bench.soak import hidden_fields
from regdesk.db import make_engine, read_session
from regdesk.registrations.models import LIVE_STATUSES, Order, Product, Registration
from regdesk.security import hash_password, verify_password
from regdesk.users.models import User

ATTENDEES = int(os.environ.get("STAMPEDE_ATTENDEES", "3000"))
PLACES = int(os.environ.get("STAMPEDE_PLACES", "2000"))
CONCURRENCY = int(os.environ.get("STAMPEDE_CONCURRENCY", "64"))
THINK = (0.5, 3.0)  # seconds a person takes over a form: reading, typing, choosing
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
PROCESSES = {"sqlite": 1, "postgresql": 2}
PRODUCT = "attendee"
SHIRT_SIZES = ["S", "M", "L", "XL", "XXL"]
FIRST_ADDRESS = ipaddress.IPv4Address("127.1.0.1")  # attendee i comes from this + i
TIMEOUT = 300  # seconds: a sign-in waits its turn for argon2 behind 63 others
SOLD_OUT = "Sold out."
_PRODUCT_ERROR = re.compile(r'id="product-error">([^<]*)</p>')


@dataclass(frozen=True)
class Sizes:
    attendees: int
    places: int
    concurrency: int
    think: tuple[float, float]  # seconds, least and most


@dataclass
class Visit:
    """What one attendee saw: each request's step, status and latency (seconds), and how it
    ended: registered, refused (sold out on the page, or at the post), or failed."""

    username: str
    answers: list[tuple[str, int, float]] = field(default_factory=list)
    outcome: str = "failed"  # registered, sold out on the page, sold out at the post, failed
    failure: str = ""
    posted_at: float | None = None  # perf_counter when the registration was sent
    registered_at: float | None = None  # ... and when its 303 came back
    counted: bool = False  # the sign-in was counted by the login rate limit (its headers)


# --- the attendee ----------------------------------------------------------------------------


class _RegisterForm(HTMLParser):
    """The /register form: its hidden fields, whether each product can be chosen, and each
    radio question's choices."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden: dict[str, str] = {}
        self.products: dict[str, bool] = {}  # product id -> can be chosen
        self.questions: dict[str, list[str]] = {}  # field -> its choices
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._inside = found.get("action") == "/register"
        if tag != "input" or not self._inside:
            return
        name, value = found.get("name", ""), found.get("value", "")
        if found.get("type") == "hidden":
            self.hidden[name] = value
        elif name == "product":
            self.products[value] = "disabled" not in found
        elif name.startswith("option-") and found.get("type") == "radio" and value:
            self.questions.setdefault(name, []).append(value)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One for every attendee: each client would otherwise read the bundle of authorities
    again, whatever the address's scheme (26 ms of CPU on these machines)."""
    return httpx.create_ssl_context()


def _attend(base: str, username: str, password: str, address: str, sizes: Sizes) -> Visit:
    visit = Visit(username)
    transport = httpx.HTTPTransport(local_address=address, verify=_tls_context())
    with httpx.Client(base_url=base, transport=transport, timeout=TIMEOUT) as browser:

        def send(
            step: str, method: str, url: str, data: dict[str, str] | None = None
        ) -> httpx.Response:
            began = time.perf_counter()
            answer = browser.request(method, url, data=data)
            visit.answers.append((step, answer.status_code, time.perf_counter() - began))
            return answer

        def think() -> None:
            time.sleep(random.uniform(*sizes.think))

        try:
            page = send("sign-in page", "GET", "/login?next=/register")
            if page.status_code != 200:
                return _failed(visit, page)
            think()
            fields = {**hidden_fields(page.text, "/login"), "username": username}
            answer = send("sign-in", "POST", "/login", data={**fields, "password": password})
            visit.counted = "ratelimit-limit" in answer.headers
            if answer.status_code != 303 or answer.headers["location"] != "/register":
                return _failed(visit, answer)
            page = send("registration page", "GET", "/register")
            form = _RegisterForm()
            form.feed(page.text)
            product = next(iter(form.products), None)
            if page.status_code != 200 or product is None:
                return _failed(visit, page)
            if not form.products[product]:
                visit.outcome = "sold out on the page"
                return visit
            think()
            sent = {
                **form.hidden,
                "product": product,
                "badgeName": f"Badge {username}",
                **{name: random.choice(choices) for name, choices in form.questions.items()},
            }
            visit.posted_at = time.perf_counter()
            answer = send("registration", "POST", "/register", data=sent)
            if answer.status_code == 303:
                visit.registered_at = time.perf_counter()
                visit.outcome = "registered"
                order = send("order page", "GET", answer.headers["location"])
                if order.status_code != 200 or "order-number" not in order.text:
                    return _failed(visit, order)
            elif answer.status_code == 400 and _product_error(answer.text) == SOLD_OUT:
                visit.outcome = "sold out at the post"
            else:
                return _failed(visit, answer)
        except httpx.HTTPError as error:
            visit.outcome, visit.failure = "failed", repr(error)
    return visit


def _failed(visit: Visit, answer: httpx.Response) -> Visit:
    visit.outcome = "failed"
    visit.failure = f"{answer.request.method} {answer.request.url.path}: {answer.status_code}"
    return visit


def _product_error(html: str) -> str | None:
    found = _PRODUCT_ERROR.search(html)
    return found.group(1).strip() if found else None


# --- the database and the servers ------------------------------------------------------------


def _document(sizes: Sizes, password_hash: str) -> dict[str, object]:
    return {
        "event": {"name": "Stampede Con", "current": True},
        "products": [
            {
                "name": PRODUCT,
                "displayName": "Attendee",
                "price": 6500,
                "capacity": sizes.places,
                "public": True,
            }
        ],
        "registrationOptions": [{"name": "T-shirt size", "type": "select", "choices": SHIRT_SIZES}],
        "users": [
            {
                "username": _username(i),
                "email": f"{_username(i)}@example.org",
                "firstName": "Attendee",
                "lastName": str(i),
                "verified": True,
                "passwordHash": password_hash,
            }
            for i in range(sizes.attendees)
        ],
    }


def _username(i: int) -> str:
    return f"attendee{i:05d}"


def _server_env(database_url: str, label: str) -> dict[str, str]:
    """As a deployment sets it: rate limits on, at their defaults; several processes share
    their counters in Redis, one keeps them in its memory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
    env.update({"REGDESK_DATABASE_URL": database_url, "REGDESK_RATE_LIMITS": "on"})
    if PROCESSES[label] > 1:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()  # else say so now
        env["REGDESK_REDIS_URL"] = REDIS_URL
    return env


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass(frozen=True)
class Holdings:
    """What the database holds afterwards."""

    capacity: int
    sold: int  # live orders of the product
    holders: set[str]  # usernames holding a live registration
    registered_twice: int  # users with more than one registration (nobody cancels here)
    ordered_twice: int  # users with more than one order, whatever its status


def _holdings(database_url: str) -> Holdings:
    engine = make_engine(database_url)
    with read_session(engine) as session:
        product = session.scalars(select(Product).where(Product.name == PRODUCT)).one()
        sold = session.scalar(
            select(func.count())
            .select_from(Order)
            .where(Order.product_id == product.id, Order.status.in_(LIVE_STATUSES))
        )
        holders = session.scalars(
            select(User.username)
            .join(Registration, Registration.user_id == User.id)
            .where(Registration.ended_at.is_(None))
        ).all()

        def more_than_one(column: InstrumentedAttribute[int]) -> int:
            per_user = select(column).group_by(column).having(func.count() > 1).subquery()
            return int(session.scalar(select(func.count()).select_from(per_user)) or 0)

        found = Holdings(
            capacity=product.capacity or 0,
            sold=int(sold or 0),
            holders=set(holders),
            registered_twice=more_than_one(Registration.user_id),
            ordered_twice=more_than_one(Order.user_id),
        )
    engine.dispose()
    return found


# --- the run ---------------------------------------------------------------------------------


def run_stampede(database_url: str, label: str, sizes: Sizes) -> dict[str, object]:
    """The stampede against a fresh database on `label` (sqlite, postgresql): what it saw."""
    password = secrets.token_urlsafe(12)  # in memory only; the document holds its hash
    password_hash = hash_password(password)
    checks = []
    for _ in range(5):  # what one sign-in's argon2 costs, the servers' way (hash's own cost)
        began = time.process_time()
        assert verify_password(password_hash, password)
        checks.append(time.process_time() - began)
    env = _server_env(database_url, label)
    with tempfile.TemporaryDirectory() as folder:
        document = Path(folder) / "stampede.json"
        document.write_text(json.dumps(_document(sizes, password_hash)))
        subprocess.run(
            [str(REGDESK), "import", str(document)], env=env, check=True, capture_output=True
        )
    with ExitStack() as stack:
        servers = []
        for _ in range(PROCESSES[label]):
            port = free_port()
            servers.append((f"http://127.0.0.1:{port}", stack.enter_context(serving(env, port))))
        cpu_before = sum(_cpu_seconds(server.pid) for _, server in servers)
        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=sizes.concurrency) as pool:
            visits = list(
                pool.map(
                    lambda i: _attend(
                        servers[i % len(servers)][0],
                        _username(i),
                        password,
                        str(FIRST_ADDRESS + i),
                        sizes,
                    ),
                    range(sizes.attendees),
                )
            )
        seconds = time.perf_counter() - began
        server_cpu = sum(_cpu_seconds(server.pid) for _, server in servers) - cpu_before
    held = _holdings(database_url)
    return _report(label, sizes, visits, held, seconds, server_cpu, statistics.median(checks))


def _report(
    label: str,
    sizes: Sizes,
    visits: list[Visit],
    held: Holdings,
    seconds: float,
    server_cpu: float,
    argon2_seconds: float,
) -> dict[str, object]:
    answers: Counter[tuple[str, int]] = Counter()
    latencies: dict[str, list[float]] = {}
    for visit in visits:
        for step, status, latency in visit.answers:
            answers[step, status] += 1
            latencies.setdefault(step, []).append(latency)
    outcomes = Counter(visit.outcome for visit in visits)
    registered = {visit.username for visit in visits if visit.outcome == "registered"}
    posted = [visit.posted_at for visit in visits if visit.posted_at is not None]
    answered = [visit.registered_at for visit in visits if visit.registered_at is not None]
    window = max(answered) - min(posted) if answered else 0.0

    def milliseconds(step: str, fraction: float) -> float:
        found = latencies.get(step) or [0.0]
        return round(_percentile(found, fraction) * 1000, 1)

    result: dict[str, object] = {
        "processes": PROCESSES[label],
        "seconds": round(seconds, 1),
        "registrations": len(registered),
        "registrations_per_second": round(len(registered) / window, 1) if window else 0.0,
        "registration_p50_ms": milliseconds("registration", 0.5),
        "registration_p99_ms": milliseconds("registration", 0.99),
        "sign_in_p50_ms": milliseconds("sign-in", 0.5),
        "sign_in_p99_ms": milliseconds("sign-in", 0.99),
        "answers": {f"{step} {status}": n for (step, status), n in sorted(answers.items())},
        "server_errors": sum(n for (_, status), n in answers.items() if status >= 500),
        "rate_limited": sum(n for (_, status), n in answers.items() if status == 429),
        "sign_ins_counted_by_rate_limit": sum(visit.counted for visit in visits),
        "outcomes": dict(sorted(outcomes.items())),
        "refused_sold_out": outcomes["sold out on the page"] + outcomes["sold out at the post"],
        "failures": [visit.failure for visit in visits if visit.outcome == "failed"][:5],
        "capacity": held.capacity,
        "places_sold": held.sold,
        "oversold": max(0, held.sold - held.capacity),
        "registered_twice": held.registered_twice,
        "ordered_twice": held.ordered_twice,
        "holders_are_the_registered": held.holders == registered,
        "server_cpu_seconds": round(server_cpu, 1),
        "argon2_check_ms": round(argon2_seconds * 1000, 1),
        "argon2_share_of_server_cpu": _share(
            len(latencies.get("sign-in", [])), argon2_seconds, server_cpu
        ),
    }
    print(
        f"  {label:<10} {sizes.attendees:,} attendees for {held.capacity:,} places,"
        f" {PROCESSES[label]} process(es): {result['registrations_per_second']} registrations/s,"
        f" registration p50 {result['registration_p50_ms']} ms p99"
        f" {result['registration_p99_ms']} ms, sign-in p50 {result['sign_in_p50_ms']} ms p99"
        f" {result['sign_in_p99_ms']} ms; sold {held.sold}/{held.capacity},"
        f" refused {result['refused_sold_out']}, 5xx {result['server_errors']},"
        f" 429 {result['rate_limited']}, failed {outcomes['failed']},"
        f" registered twice {held.registered_twice}; {result['seconds']} s,"
        f" argon2 {result['argon2_share_of_server_cpu']} of the servers' CPU",
        flush=True,
    )
    return result


def _share(sign_ins: int, argon2_seconds: float, server_cpu: float) -> float:
    """The sign-ins' argon2 checks as a share of the CPU time the servers spent."""
    return round(sign_ins * argon2_seconds / server_cpu, 2) if server_cpu else 0.0


def run() -> dict[str, object]:
    sizes = Sizes(ATTENDEES, PLACES, CONCURRENCY, THINK)
    print(
        f"Stampede: {ATTENDEES} attendees signing in and registering, {CONCURRENCY} at a time,"
        f" for {PLACES} places, {THINK[0]}-{THINK[1]} s thinking before each form:",
        flush=True,
    )
    results: dict[str, object] = {
        "attendees": ATTENDEES,
        "places": PLACES,
        "concurrency": CONCURRENCY,
        "think_seconds": list(THINK),
    }
    for label in databases():
        with scratch_database(label, "bench_stampede") as url:
            results[label] = run_stampede(url, label, sizes)
    return results


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
