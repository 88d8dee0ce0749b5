"""`make soak`: minutes of mixed traffic against one real server, then proof that nothing was
lost, duplicated, broken or leaked (issue 7).

For each database (SQLite; PostgreSQL when REGDESK_TEST_POSTGRES_URL is set; BENCH_ONLY keeps
one): a fresh database filled as by `regdesk demo`, one `regdesk serve` worker on loopback with
rate limits off and its access log on, and for SOAK_SECONDS (default 180), all at once: user
and volunteer searches walking every page by `nextPage`, single users, client_credentials
grants, refresh chains (CHAINS grants of the demo's OBO application, each refreshed over and
over with its newest refresh token, each new access token read with), and logins through the
form with its CSRF pairing (one in five with a wrong password). The server's RSS is sampled
all along.

Then the rules (RULES, below) are checked against what the client saw, what the server's
access log says it answered and what the database holds. The report is printed and written to
build/soak.json; a broken rule fails the run. tests/test_soak.py runs the same soak for a few
seconds on each database.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import json
import os
import platform
import random
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bench.http import databases, free_port, scratch_database, serving
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import make_engine
from regdesk.demo import load_demo
from regdesk.migrations.runner import upgrade
from regdesk.oauth.models import AccessToken, Grant, RefreshToken
from regdesk.oauth.tokens import token_key
from regdesk.web.models import WebSession

SECONDS = float(os.environ.get("SOAK_SECONDS", "180"))
USERS, VOLUNTEERS = 1000, 200
PAGE_LIMIT = 50
CHAINS = 4
SEARCHERS = 2  # per search: users, volunteers
READERS = 2  # single users
WRONG_PASSWORD_EVERY = 5
MIN_REFRESHES = 2  # per chain, however short the soak
LOGIN_PAUSE = 1.0  # seconds between logins: each costs an argon2 check (see sample_memory)
# Memory is flat when the RSS grows, over the second half of the run (the first half is the
# warm-up), by less than the larger of these (see memory_growth).
MEMORY_FLOOR_MB = 10.0
MEMORY_SHARE = 0.05
MEMORY_SAMPLES = 5  # in the second half, at least


@dataclass(frozen=True)
class Kind:
    """A kind of request: its route, as the access log names it, and the answers it expects."""

    route: str
    expected: frozenset[int] = frozenset({200})


KINDS = {
    "user search": Kind("POST /api/v0/users/search"),
    "volunteer search": Kind("POST /api/v0/volunteers/search"),
    "get user": Kind("GET /api/v0/users/{id}"),
    "token grant": Kind("POST /api/oauth/token"),
    "refresh": Kind("POST /api/oauth/token"),
    "current user": Kind("GET /api/users/current"),
    "login page": Kind("GET /login"),
    # 303 to the account page; 200, the form again, after a wrong password.
    "login": Kind("POST /login", frozenset({200, 303})),
    # The setup of the refresh chains: consent, through the pages, and the code's exchange.
    "authorize page": Kind("GET /oauth/authorize"),
    "consent": Kind("POST /oauth/authorize", frozenset({303})),
    "code exchange": Kind("POST /api/oauth/token"),
}


@dataclass(frozen=True)
class RefreshRow:
    """A refresh token of a chain's grant, as the database holds it."""

    token_hash: str
    created_at: dt.datetime
    consumed_at: dt.datetime | None
    revoked_at: dt.datetime | None


@dataclass
class Chain:
    """One grant: every refresh token the client was given for it, oldest first."""

    tokens: list[str]
    last_works: bool = False  # a refresh with the newest token, after the traffic, answered 200
    rows: list[RefreshRow] = field(default_factory=list)  # filled from the database


@dataclass
class Soak:
    """What one soak saw: from the client, the server's access log and the database."""

    label: str
    seconds: float
    sent: Counter[str] = field(default_factory=Counter)  # per kind
    answered: Counter[tuple[str, int]] = field(default_factory=Counter)  # (kind, status)
    seconds_taken: dict[str, list[float]] = field(default_factory=dict)  # per kind
    lost: list[str] = field(default_factory=list)  # requests that got no answer
    unexpected: list[str] = field(default_factory=list)  # answers not among a kind's expected
    wrong: list[str] = field(default_factory=list)  # answers whose content is wrong
    walks: dict[str, list[int]] = field(default_factory=dict)  # records of each full walk
    logged: Counter[tuple[str, int]] = field(default_factory=Counter)  # (route, status)
    chains: list[Chain] = field(default_factory=list)
    database: dict[str, int] = field(default_factory=dict)
    rss: list[tuple[float, float]] = field(default_factory=list)  # (seconds, MB)

    def count(self, kind: str, *statuses: int) -> int:
        return sum(
            n for (k, status), n in self.answered.items() if k == kind and status in statuses
        )

    @property
    def total(self) -> int:
        return sum(self.sent.values())


# --- the rules -----------------------------------------------------------------------------


def every_kind_ran(soak: Soak) -> list[str]:
    """The traffic was mixed: every kind of request was answered as it should be, and every
    refresh chain was refreshed more than once."""
    return [
        f"{kind}: no request answered as expected"
        for kind, about in KINDS.items()
        if soak.count(kind, *about.expected) == 0
    ] + [
        f"chain {number}: refreshed {len(chain.tokens) - 1} times"
        for number, chain in enumerate(soak.chains, start=1)
        if len(chain.tokens) <= MIN_REFRESHES
    ]


def every_request_answered_once(soak: Soak) -> list[str]:
    """No request lost or duplicated: each sent got one answer, and the server answered each
    route as often, with the same statuses, as the client was answered."""
    problems = [f"lost: {lost}" for lost in soak.lost[:10]]
    for kind, sent in sorted(soak.sent.items()):
        answered = sum(n for (k, _), n in soak.answered.items() if k == kind)
        if answered != sent:
            problems.append(f"{kind}: {sent} sent, {answered} answered")
    client: Counter[tuple[str, int]] = Counter()
    for (kind, status), n in soak.answered.items():
        client[KINDS[kind].route, status] += n
    for key in sorted(set(client) | set(soak.logged)):
        if client[key] != soak.logged[key]:
            route, status = key
            problems.append(
                f"{route} {status}: the client was answered {client[key]} times,"
                f" the server logged {soak.logged[key]}"
            )
    return problems


def no_server_error(soak: Soak) -> list[str]:
    """No 5xx, and no other answer than each kind expects."""
    errors = sum(n for (_, status), n in soak.answered.items() if status >= 500)
    return ([f"{errors} answers with a 5xx status"] if errors else []) + soak.unexpected[:10]


def answers_consistent(soak: Soak) -> list[str]:
    """Every full walk of a search, page by page, gives every record once (the demo's USERS
    users, VOLUNTEERS volunteers), and a user read by id is that user."""
    problems = soak.wrong[:10]
    for kind, records in (("user search", USERS), ("volunteer search", VOLUNTEERS)):
        if not soak.walks.get(kind):
            problems.append(f"{kind}: no full walk")
        elif set(soak.walks[kind]) != {records}:
            problems.append(f"{kind}: full walks gave {sorted(set(soak.walks[kind]))} records")
    return problems


def server_effects_match(soak: Soak) -> list[str]:
    """What the database holds is what the client was told: a token for each grant, a pair for
    each exchange and refresh, an audit event and a session for each login."""
    found = soak.database
    issued = soak.count("code exchange", 200) + soak.count("refresh", 200)
    expected = {
        "service access tokens": soak.count("token grant", 200),
        "OBO access tokens": issued,
        "OBO refresh tokens": issued,
        "OBO grants": soak.count("code exchange", 200),
        "revoked OBO grants": 0,
        "refresh token reuse events": 0,
        "login events": soak.count("login", 303),
        "failed login events": soak.count("login", 200),
        "sessions": soak.count("login", 303),
    }
    return [
        f"{name}: {found.get(name)} in the database, {count} expected"
        for name, count in expected.items()
        if found.get(name) != count
    ]


def chain_problems(chain: Chain) -> list[str]:
    """A refresh chain is intact when its grant's refresh tokens are exactly those the client
    was given, in order (linear: no fork, none it never saw); every one superseded is consumed
    (not revoked) before the next was made; the newest alone is live, and it works."""
    problems = []
    if [row.token_hash for row in chain.rows] != [token_key(t) for t in chain.tokens]:
        problems.append(
            f"the grant holds {len(chain.rows)} refresh tokens,"
            f" not the {len(chain.tokens)} the client was given, in order"
        )
    for older, newer in zip(chain.rows, chain.rows[1:], strict=False):
        if older.consumed_at is None or older.revoked_at is not None:
            problems.append("a superseded refresh token is not consumed, or is revoked")
            break
        if older.consumed_at > newer.created_at:
            problems.append("a refresh token was made before its predecessor was consumed")
            break
    if chain.rows and (chain.rows[-1].consumed_at or chain.rows[-1].revoked_at):
        problems.append("the newest refresh token is not live")
    if not chain.last_works:
        problems.append("the newest refresh token the client held was refused")
    return problems


def refresh_chains_intact(soak: Soak) -> list[str]:
    """Every refresh chain is intact (chain_problems)."""
    return [
        f"chain {number}: {problem}"
        for number, chain in enumerate(soak.chains, start=1)
        for problem in chain_problems(chain)
    ]


def memory_growth(samples: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The RSS growth over the second half of the samples, and the bound it must stay under.

    The growth is the Theil-Sen slope (the median of the slopes between every two samples, so
    that a few spikes or drops do not move it) times the half's duration; the bound is
    MEMORY_FLOOR_MB or MEMORY_SHARE of the half's median RSS, whichever is larger.
    """
    half = _second_half(samples)
    if len(half) < 2:
        return 0.0, MEMORY_FLOOR_MB
    slope = statistics.median(
        (b_mb - a_mb) / (b_t - a_t) for (a_t, a_mb), (b_t, b_mb) in combinations(half, 2)
    )
    bound = max(MEMORY_FLOOR_MB, MEMORY_SHARE * statistics.median(mb for _, mb in half))
    return slope * (half[-1][0] - half[0][0]), bound


def _second_half(samples: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    return [sample for sample in samples if sample[0] >= samples[-1][0] / 2] if samples else []


def memory_flat(soak: Soak) -> list[str]:
    """The server's memory is flat once warm (memory_growth)."""
    if len(_second_half(soak.rss)) < MEMORY_SAMPLES:
        return [f"too few memory samples: {len(soak.rss)}"]
    growth, bound = memory_growth(soak.rss)
    if growth < bound:
        return []
    return [f"RSS grew {growth:.1f} MB over the second half (bound {bound:.1f} MB)"]


RULES: dict[str, Callable[[Soak], list[str]]] = {
    "every kind of request ran": every_kind_ran,
    "no request lost or duplicated": every_request_answered_once,
    "no 5xx or unexpected answer": no_server_error,
    "answers consistent": answers_consistent,
    "server-side effects match": server_effects_match,
    "refresh chains intact": refresh_chains_intact,
    "memory flat": memory_flat,
}


# --- the traffic ---------------------------------------------------------------------------


class _HiddenFields(HTMLParser):
    """The hidden fields of the page's form that posts to `action`."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action, self.fields = action, dict[str, str]()
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._inside = found.get("action") == self.action
        elif tag == "input" and self._inside and found.get("type") == "hidden":
            self.fields[found.get("name", "")] = found.get("value", "")


def hidden_fields(html: str, action: str) -> dict[str, str]:
    reader = _HiddenFields(action)
    reader.feed(html)
    return reader.fields


def client(base: str) -> httpx.AsyncClient:
    """A client of the server, keeping an idle connection 30 s, half the server's 60 s
    (run_soak). Not less: httpcore closes a connection idle past that time even when it has
    just handed it to a request whose task has not run yet, which a client starved of the CPU
    (the whole suite beside it) then finds closed: a request lost by the client, never seen
    by the server."""
    return httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(keepalive_expiry=30))


def _pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class Traffic:
    """The soak's clients, on one event loop, and what they saw (into `soak`)."""

    def __init__(self, base: str, demo: dict[str, Any], soak: Soak) -> None:
        self.base, self.soak = base, soak
        apps = {app["kind"]: app for app in demo["applications"]}
        self.service = (
            apps["service integration"]["client_id"],
            apps["service integration"]["client_secret"],
        )
        self.obo = apps["OBO"]
        self.logins = [(login["username"], login["password"]) for login in demo["logins"]]
        self.api = client(base)
        self.service_token = ""
        self.deadline = 0.0
        self.logging_in = 0  # logins in flight (see sample_memory)

    async def call(
        self, client: httpx.AsyncClient, kind: str, method: str, url: str, **options: Any
    ) -> httpx.Response | None:
        """One request, counted: its answer, or None when it got none."""
        self.soak.sent[kind] += 1
        started = time.perf_counter()
        try:
            response = await client.request(method, url, **options)
        except httpx.HTTPError as error:
            self.soak.lost.append(f"{kind}: {error!r}")
            return None
        self.soak.seconds_taken.setdefault(kind, []).append(time.perf_counter() - started)
        self.soak.answered[kind, response.status_code] += 1
        if response.status_code not in KINDS[kind].expected and len(self.soak.unexpected) < 20:
            self.soak.unexpected.append(f"{kind}: {response.status_code} {response.text[:300]}")
        return response

    def running(self) -> bool:
        return time.monotonic() < self.deadline

    # --- setup: a service token, and the grants of the refresh chains ----------------------

    async def grant(self) -> bool:
        answer = await self.call(
            self.api,
            "token grant",
            "POST",
            "/api/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=self.service,
        )
        if answer is None or answer.status_code != 200:
            return False
        self.service_token = answer.json()["access_token"]
        return True

    async def log_in(self, visitor: httpx.AsyncClient, username: str, password: str) -> bool:
        """The login form, filled in and sent as a browser does: True when it signed in."""
        page = await self.call(visitor, "login page", "GET", "/login")
        if page is None or page.status_code != 200:
            return False
        fields = hidden_fields(page.text, "/login")
        fields.update(username=username, password=password)
        self.logging_in += 1
        try:
            answer = await self.call(visitor, "login", "POST", "/login", data=fields)
        finally:
            self.logging_in -= 1
        return answer is not None and answer.status_code == 303

    async def new_chains(self, username: str, password: str) -> None:
        """CHAINS grants: a user signs in and consents, again and again, and the application
        exchanges each code (with PKCE) for the first refresh token of a chain."""
        async with client(self.base) as visitor:
            if not await self.log_in(visitor, username, password):
                raise RuntimeError(f"{username} could not log in: {self.soak.unexpected}")
            for _ in range(CHAINS):
                code, verifier = await self.consent(visitor)
                answer = await self.call(
                    self.api,
                    "code exchange",
                    "POST",
                    "/api/oauth/token",
                    data={
                        "grant_type": "authorization_code",
                        "code": code,
                        "redirect_uri": self.obo["redirect_uris"][0],
                        "code_verifier": verifier,
                    },
                    auth=(self.obo["client_id"], self.obo["client_secret"]),
                )
                if answer is None or answer.status_code != 200:
                    raise RuntimeError(f"no grant: {self.soak.unexpected or self.soak.lost}")
                self.soak.chains.append(Chain([answer.json()["refresh_token"]]))

    async def consent(self, visitor: httpx.AsyncClient) -> tuple[str, str]:
        """The authorization request's consent screen, answered Authorize: the code, and the
        PKCE verifier that goes with it."""
        verifier, challenge = _pkce_pair()
        params = {
            "client_id": self.obo["client_id"],
            "response_type": "code",
            "redirect_uri": self.obo["redirect_uris"][0],
            "scope": self.obo["scopes"],
            "state": secrets.token_urlsafe(8),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        page = await self.call(visitor, "authorize page", "GET", "/oauth/authorize", params=params)
        if page is None or page.status_code != 200:
            raise RuntimeError(f"no consent screen: {self.soak.unexpected or self.soak.lost}")
        form = {**hidden_fields(page.text, "/oauth/authorize"), "decision": "authorize"}
        back = await self.call(visitor, "consent", "POST", "/oauth/authorize", data=form)
        if back is None or back.status_code != 303:
            raise RuntimeError(f"consent refused: {self.soak.unexpected or self.soak.lost}")
        return parse_qs(urlsplit(back.headers["location"]).query)["code"][0], verifier

    # --- the workers -----------------------------------------------------------------------

    async def walk(self, kind: str, path: str, key: Callable[[Any], str]) -> None:
        """Page through a search from its first page to its last, again and again (a walk
        begun is finished, past the end of the soak if need be)."""
        while self.running():
            seen: list[str] = []
            body: dict[str, Any] = {"limit": PAGE_LIMIT}
            while True:
                headers = {"Authorization": f"Bearer {self.service_token}"}
                answer = await self.call(self.api, kind, "POST", path, json=body, headers=headers)
                if answer is None or answer.status_code != 200:
                    break
                page = answer.json()
                seen += [key(record) for record in page["data"]]
                if not page["hasMore"]:
                    if len(set(seen)) != len(seen):
                        self.soak.wrong.append(f"{kind}: a full walk gave a record twice")
                    self.soak.walks.setdefault(kind, []).append(len(seen))
                    break
                body = {"limit": PAGE_LIMIT, "nextPage": page["nextPage"]}

    async def read_users(self) -> None:
        while self.running():
            user_id = random.randint(1, USERS)
            headers = {"Authorization": f"Bearer {self.service_token}"}
            answer = await self.call(
                self.api, "get user", "GET", f"/api/v0/users/{user_id}", headers=headers
            )
            if answer is None or answer.status_code != 200:
                continue
            if (found := answer.json()["id"]) != str(user_id):
                self.soak.wrong.append(f"get user {user_id}: got user {found}")

    async def grant_tokens(self) -> None:
        """Each new service token is the one the readers use from then on."""
        while self.running():
            await self.grant()

    async def refresh(self, chain: Chain) -> bool:
        answer = await self.call(
            self.api,
            "refresh",
            "POST",
            "/api/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": chain.tokens[-1]},
            auth=(self.obo["client_id"], self.obo["client_secret"]),
        )
        if answer is None or answer.status_code != 200:
            return False
        pair = answer.json()
        chain.tokens.append(pair["refresh_token"])
        headers = {"Authorization": f"Bearer {pair['access_token']}"}
        await self.call(self.api, "current user", "GET", "/api/users/current", headers=headers)
        return True

    async def refresh_chain(self, chain: Chain) -> None:
        """Refresh, in sequence, each time with the newest refresh token."""
        while self.running() or len(chain.tokens) <= MIN_REFRESHES:
            if not await self.refresh(chain):
                return  # the chain broke: refresh_chains_intact says how

    async def log_in_again_and_again(self) -> None:
        """A new visitor each time, one attempt in WRONG_PASSWORD_EVERY with a wrong password."""
        attempt = 0
        async with client(self.base) as visitor:
            while self.running():
                attempt += 1
                visitor.cookies.clear()
                username, password = self.logins[attempt % len(self.logins)]
                if attempt % WRONG_PASSWORD_EVERY == 0:
                    password += "-wrong"
                await self.log_in(visitor, username, password)
                await asyncio.sleep(LOGIN_PAUSE)

    async def sample_memory(self, pid: int, interval: float) -> None:
        """The server's RSS every `interval` seconds, never while a login is in flight: its
        argon2 check holds 64 MiB (argon2-cffi's RFC 9106 profile) until it answers."""
        started = time.monotonic()
        while True:
            while self.logging_in:
                await asyncio.sleep(0.005)
            self.soak.rss.append((round(time.monotonic() - started, 2), rss_mb(pid)))
            if not self.running() and len(_second_half(self.soak.rss)) >= MEMORY_SAMPLES:
                return
            await asyncio.sleep(interval)

    async def run(self, seconds: float, pid: int) -> None:
        self.deadline = time.monotonic() + 3600  # the setup runs whatever its length
        if not await self.grant():
            raise RuntimeError(f"no service token: {self.soak.unexpected or self.soak.lost}")
        await self.new_chains(*self.logins[-1])
        self.deadline = time.monotonic() + seconds
        workers: list[Awaitable[None]] = [
            *(self.walk("user search", "/api/v0/users/search", _user_id) for _ in range(SEARCHERS)),
            *(
                self.walk("volunteer search", "/api/v0/volunteers/search", _volunteer_id)
                for _ in range(SEARCHERS)
            ),
            *(self.read_users() for _ in range(READERS)),
            self.grant_tokens(),
            *(self.refresh_chain(chain) for chain in self.soak.chains),
            self.log_in_again_and_again(),
            self.sample_memory(pid, interval=max(0.1, min(1.0, seconds / 60))),
        ]
        await asyncio.gather(*workers)
        for chain in self.soak.chains:  # the newest refresh token each client holds works
            chain.last_works = await self.refresh(chain)
        await self.api.aclose()


def _user_id(record: Any) -> str:
    return str(record["id"])


def _volunteer_id(record: Any) -> str:
    return str(record["user"]["id"])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


# --- what the server logged and the database holds -----------------------------------------

ACCESS_LINE = re.compile(r'"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})')


def access_log_counts(log: str) -> Counter[tuple[str, int]]:
    """(route, status) of each request uvicorn's access log shows, ids in paths as `{id}`."""
    counts: Counter[tuple[str, int]] = Counter()
    for method, target, status in ACCESS_LINE.findall(log):
        path = re.sub(r"/\d+(?=/|$)", "/{id}", urlsplit(target).path)
        if path != "/healthz":  # the harness's own, waiting for the server
            counts[f"{method} {path}", int(status)] += 1
    return counts


def read_database(database_url: str, demo: dict[str, Any], soak: Soak) -> None:
    apps = {app["kind"]: int(app["client_id"]) for app in demo["applications"]}
    service, obo = apps["service integration"], apps["OBO"]
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:

            def count(table: Any, *where: Any) -> int:
                return int(
                    session.execute(
                        select(func.count()).select_from(table).where(*where)
                    ).scalar_one()
                )

            def events(action: str) -> int:
                return count(AuditEvent, AuditEvent.action == action)

            obo_refresh_tokens = (
                select(RefreshToken.id)
                .join(Grant, Grant.id == RefreshToken.grant_id)
                .where(Grant.application_id == obo)
                .subquery()
            )
            soak.database = {
                "service access tokens": count(AccessToken, AccessToken.application_id == service),
                "OBO access tokens": count(AccessToken, AccessToken.application_id == obo),
                "OBO refresh tokens": count(obo_refresh_tokens),
                "OBO grants": count(Grant, Grant.application_id == obo),
                "revoked OBO grants": count(
                    Grant, Grant.application_id == obo, Grant.revoked_at.is_not(None)
                ),
                "refresh token reuse events": events("oauth.refresh_token_reused"),
                "login events": events("user.login"),
                "failed login events": events("user.login_failed"),
                "sessions": count(WebSession),
            }
            for chain in soak.chains:
                grant_id = session.scalar(
                    select(RefreshToken.grant_id).where(
                        RefreshToken.token_hash == token_key(chain.tokens[0])
                    )
                )
                rows = session.execute(
                    select(
                        RefreshToken.token_hash,
                        RefreshToken.created_at,
                        RefreshToken.consumed_at,
                        RefreshToken.revoked_at,
                    )
                    .where(RefreshToken.grant_id == grant_id)
                    .order_by(RefreshToken.id)
                )
                chain.rows = [RefreshRow(*row) for row in rows]
    finally:
        engine.dispose()


# --- one soak, and `make soak` -------------------------------------------------------------


def run_soak(database_url: str, label: str, seconds: float) -> Soak:
    """A fresh database filled with the demo, one server, `seconds` of traffic: what it saw."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
    env.update(
        REGDESK_DATABASE_URL=database_url,
        REGDESK_RATE_LIMITS="off",
        REGDESK_ACCESS_LOG="on",
        # A client starved of the CPU (the whole test suite beside it) may read an answer
        # seconds after it came, and only then start its idle clock: with the server's 5 s, it
        # can send on a connection the server is closing, a request lost that the server never
        # saw. A proxy in front has the same need (README, REGDESK_KEEP_ALIVE_SECONDS).
        REGDESK_KEEP_ALIVE_SECONDS="60",
    )
    demo = _demo(database_url)
    soak = Soak(label, seconds)
    port = free_port()
    with tempfile.TemporaryFile() as log:
        with serving(env, port, log) as server:
            traffic = Traffic(f"http://127.0.0.1:{port}", demo, soak)
            asyncio.run(traffic.run(seconds, server.pid))
        log.seek(0)
        soak.logged = access_log_counts(log.read().decode("utf-8", "replace"))
    read_database(database_url, demo, soak)
    return soak


def _demo(database_url: str) -> dict[str, Any]:
    """Migrate and fill the database as `regdesk demo --json` does, here in-process (a server
    start is the one interpreter the soak waits for): the demo's logins and applications."""
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        demo = load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=Actor("soak"))
        return demo.as_json()
    finally:
        engine.dispose()


def verdicts(soak: Soak) -> dict[str, list[str]]:
    """Each rule's problems (none: it holds)."""
    return {name: rule(soak) for name, rule in RULES.items()}


def summary(soak: Soak) -> dict[str, Any]:
    """The soak as build/soak.json keeps it (no secret: chains by their lengths only)."""
    growth, bound = memory_growth(soak.rss)
    return {
        "seconds": soak.seconds,
        "requests": soak.total,
        "requests_per_second": round(soak.total / soak.seconds, 1),
        "kinds": {
            kind: {
                "sent": sent,
                "statuses": {
                    str(status): n for (k, status), n in sorted(soak.answered.items()) if k == kind
                },
                **_latency_ms(soak.seconds_taken.get(kind, [])),
            }
            for kind, sent in sorted(soak.sent.items())
        },
        "errors": {
            "lost": soak.lost,
            "unexpected": soak.unexpected,
            "wrong": soak.wrong,
            "5xx": sum(n for (_, status), n in soak.answered.items() if status >= 500),
        },
        "rss_mb": {
            "samples": [[t, round(mb, 1)] for t, mb in soak.rss],
            "start": round(soak.rss[0][1], 1) if soak.rss else None,
            "end": round(soak.rss[-1][1], 1) if soak.rss else None,
            "growth_second_half": round(growth, 2),
            "bound": round(bound, 2),
            "rule": "growth over the second half (Theil-Sen slope x its duration)"
            f" < max({MEMORY_FLOOR_MB} MB, {MEMORY_SHARE:.0%} of its median RSS)",
        },
        "chains": {"count": len(soak.chains), "lengths": [len(c.tokens) for c in soak.chains]},
        "database": soak.database,
        "rules": {
            name: {"holds": not problems, "problems": problems}
            for name, problems in verdicts(soak).items()
        },
    }


def _latency_ms(seconds: list[float]) -> dict[str, float]:
    if not seconds:
        return {}
    ordered = sorted(seconds)

    def at(share: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)

    return {"p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": at(1.0)}


def report(label: str, result: dict[str, Any]) -> str:
    lines = [
        f"{label}: {result['requests']:,} requests in {result['seconds']:.0f} s"
        f" ({result['requests_per_second']:,} /s)"
    ]
    for kind, counts in result["kinds"].items():
        statuses = ", ".join(f"{n:,} x {status}" for status, n in counts["statuses"].items())
        lines.append(
            f"  {kind:<18} {counts['sent']:>8,}  p50 {counts.get('p50_ms', '-'):>6} ms"
            f"  p99 {counts.get('p99_ms', '-'):>7} ms  max {counts.get('max_ms', '-'):>7} ms"
            f"  {statuses}"
        )
    rss = result["rss_mb"]
    lines.append(
        f"  server RSS {rss['start']} -> {rss['end']} MB; second half grew"
        f" {rss['growth_second_half']} MB (bound {rss['bound']} MB)"
    )
    chains = result["chains"]
    lines.append(f"  {chains['count']} refresh chains, lengths {chains['lengths']}")
    for name, verdict in result["rules"].items():
        lines.append(f"  {'ok  ' if verdict['holds'] else 'FAIL'} {name}")
        lines += [f"         {problem}" for problem in verdict["problems"]]
    return "\n".join(lines)


def main() -> None:
    print(f"Soak: {SECONDS:.0f} s of mixed traffic per database, one server worker", flush=True)
    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()}",
        "seconds": SECONDS,
        "users": USERS,
        "volunteers": VOLUNTEERS,
    }
    for label in databases():
        with scratch_database(label, "soak") as url:
            results[label] = summary(run_soak(url, label, SECONDS))
        print(report(label, results[label]), flush=True)
    out = Path("build/soak.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {out}")
    broken = [
        f"{label}: {name}"
        for label in databases()
        for name, verdict in results[label]["rules"].items()
        if not verdict["holds"]
    ]
    if broken:
        sys.exit("broken: " + "; ".join(broken))


if __name__ == "__main__":
    main()
