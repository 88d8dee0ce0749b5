"""The deployment guide, run for real (issue 23; docs/operators/deployment.md): nginx with
deploy/nginx-site.conf terminating TLS in front of two `regdesk serve` processes with
deploy/regdesk.env, on PostgreSQL and Redis (tests/deploy/support.py says how it is made).

Every client here comes from this machine's network address, never from loopback, and goes
through nginx unless it is shown being refused. Which process answered a request is read from
nginx's access log, in the guide's own format (`upstream=`).
"""

from __future__ import annotations

import re
import signal
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright
from sqlalchemy import Engine, func, select

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import make_engine, read_session, write_session
from regdesk.oauth.authorization import approve, check_authorization_request
from regdesk.oauth.models import AccessToken, Grant, RefreshToken
from regdesk.oauth.tokens import token_key
from regdesk.transport import REFUSAL
from tests import http_calls
from tests.conftest import Registered, register_application, scratch_database_url
from tests.deploy.support import Deployment, LogLine, deployment
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.e2e.support import application_callback, log_in
from tests.faults.support import wait_until
from tests.helpers import shared_redis_url
from tests.web.support import make_user

pytestmark = pytest.mark.postgres  # the guide's setup; tests/deploy/conftest.py

HSTS = ["max-age=31536000"]  # exactly once: regdesk's, not nginx's as well
API_LIMIT = 8  # REGDESK_API_RATE_LIMIT per minute, low enough to reach
ROLES = "/api/v0/roles"  # a light API route (user:read)
MARKED = f"{ROLES}?limit=99"  # the same, told apart in nginx's log
FORGED_ADDRESS = "203.0.113.66"  # what a client claims in X-Forwarded-For
TOOL_REDIRECT = "https://tool.example.org/callback"


@dataclass
class Site:
    deployment: Deployment
    engine: Engine

    def register(
        self,
        name: str,
        *,
        obo_scopes: str = "",
        service_scopes: str = "",
        redirect_uris: Sequence[str] = (),
    ) -> Registered:
        return register_application(
            self.engine,
            name=name,
            obo_scopes=obo_scopes,
            service_scopes=service_scopes,
            redirect_uris=redirect_uris,
        )


@pytest.fixture
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Site]:
    """The deployment on a database of its own; `request.param`: the test's additions to the
    guide's environment."""
    settings: dict[str, str] = getattr(request, "param", {})
    with (
        scratch_database_url("postgresql", tmp_path, migrated=True) as database_url,
        deployment(
            tmp_path,
            database_url,
            shared_redis_url(),  # counters keyed by the new database's own secret
            settings,
        ) as deployed,
    ):
        engine = make_engine(database_url)
        try:
            yield Site(deployed, engine)
        finally:
            engine.dispose()


def token(client: httpx.Client, app: Registered, **form: str) -> httpx.Response:
    return client.post("/api/oauth/token", data=form, auth=(app.client_id, app.client_secret))


def bearer(access_token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {access_token}"}


# --- everything through nginx --------------------------------------------------------------


@pytest.mark.parametrize(
    "site", [{"REGDESK_API_RATE_LIMIT": f"{API_LIMIT}/minute"}], indirect=True, ids=["limited"]
)
def test_the_guides_setup_answers_through_nginx_and_only_there(site: Site) -> None:
    deployed = site.deployment
    admin = make_user(site.engine, "ada", permissions=["admin"])

    # Plain HTTP to nginx is sent to the public address, not answered.
    plain = http_calls.get(f"http://{deployed.address}:{deployed.http_port}/account?tab=1")
    assert plain.status_code == 301
    assert plain.headers["location"] == f"{deployed.public_url}/account?tab=1"

    # A process reached directly, from an address it does not trust: refused, whatever the
    # request claims about itself (transport.py).
    host = urlsplit(deployed.public_url).netloc
    for process in deployed.processes:
        direct = http_calls.get(
            f"http://{deployed.address}:{process.port}/.well-known/openid-configuration",
            headers={"Host": host, "X-Forwarded-Proto": "https", "X-Forwarded-For": "127.0.0.1"},
        )
        assert direct.status_code == 403
        assert direct.content == REFUSAL

    with application_callback() as callback:
        tool = site.register("Time Clock", obo_scopes="user:read", redirect_uris=[callback])
        code = sign_in_and_authorize(deployed, tool, callback)

    events = audit_events(site.engine, "user.login", "oauth.consent_granted")
    assert [e.action for e in events] == ["user.login", "oauth.consent_granted"]
    # The real client's address: not nginx's (127.0.0.1), not the one it claimed.
    assert {e.ip_address for e in events} == {deployed.address}

    with deployed.client() as client:
        # Pages: HSTS once, and every cookie Secure.
        login_page = client.get("/login")
        assert login_page.headers.get_list("strict-transport-security") == HSTS
        cookies = login_page.headers.get_list("set-cookie")
        assert cookies
        assert all("; secure" in cookie.lower() for cookie in cookies), cookies

        # The code, refreshed, introspected, used, revoked.
        exchanged = token(
            client, tool, grant_type="authorization_code", code=code, redirect_uri=callback
        )
        assert exchanged.status_code == 200, exchanged.text
        assert exchanged.headers.get_list("strict-transport-security") == HSTS
        refreshed = token(
            client,
            tool,
            grant_type="refresh_token",
            refresh_token=exchanged.json()["refresh_token"],
        )
        assert refreshed.status_code == 200, refreshed.text
        tokens = refreshed.json()
        assert client.get(ROLES, headers=bearer(tokens["access_token"])).status_code == 200
        about = tool_post(client, tool, "/api/oauth/introspect", tokens["access_token"])
        assert about.json()["active"] is True
        assert about.json()["sub"] == str(admin)
        revoked = tool_post(client, tool, "/api/oauth/revoke", tokens["refresh_token"])
        assert revoked.status_code == 200, revoked.text
        about = tool_post(client, tool, "/api/oauth/introspect", tokens["access_token"])
        assert about.json() == {"active": False}
        assert client.get(ROLES, headers=bearer(tokens["access_token"])).status_code == 401

        # A service: client_credentials, then the API.
        service = site.register("Badge Printer", service_scopes="user:read")
        granted = token(client, service, grant_type="client_credentials")
        assert granted.status_code == 200, granted.text
        listed = client.get(ROLES, headers=bearer(granted.json()["access_token"]))
        assert listed.status_code == 200, listed.text
        assert listed.headers.get_list("strict-transport-security") == HSTS

        one_limit_for_both_processes(site, client)


def sign_in_and_authorize(deployed: Deployment, tool: Registered, callback: str) -> str:
    """The code flow in Chromium, through nginx: the administrator signs in on the way,
    authorizes, lands back at the tool with a code; then opens the admin area. Chromium
    trusts nginx's certificate by its key (`--ignore-certificate-errors-spki-list`), and no
    other: a wrong certificate would still stop it."""
    query = urlencode(
        {
            "client_id": tool.client_id,
            "response_type": "code",
            "redirect_uri": callback,
            "scope": "user:read",
            "state": "s1",
        }
    )
    pin = f"--ignore-certificate-errors-spki-list={deployed.certificates.spki_pin}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, pin]
        )
        try:
            # A client that claims another address: nginx adds the one it saw, which regdesk
            # believes (the rightmost address that is not a trusted proxy).
            context = browser.new_context(extra_http_headers={"X-Forwarded-For": FORGED_ADDRESS})
            context.set_default_timeout(15_000)
            page = context.new_page()
            first = page.goto(f"{deployed.public_url}/oauth/authorize?{query}")
            assert first is not None
            assert urlsplit(page.url).path == "/login"
            assert first.headers["strict-transport-security"] == HSTS[0]
            log_in(page, "ada")
            page.get_by_role("button", name="Authorize").click()
            page.wait_for_url(re.compile(re.escape(callback) + r"\?"))
            reply = parse_qs(urlsplit(page.url).query)
            assert reply["state"] == ["s1"]
            assert reply["iss"] == [deployed.public_url]

            cookies = context.cookies(deployed.public_url)
            assert {c["name"] for c in cookies} >= {"regdesk_session"}
            assert all(c["secure"] for c in cookies), cookies

            admin = page.goto(f"{deployed.public_url}/admin")
            assert admin is not None
            assert admin.status == 200
            expect(page.get_by_role("navigation", name="Admin")).to_be_visible()
            context.close()
        finally:
            browser.close()
    return reply["code"][0]


def tool_post(client: httpx.Client, tool: Registered, path: str, value: str) -> httpx.Response:
    return client.post(path, data={"token": value}, auth=(tool.client_id, tool.client_secret))


def logged(deployed: Deployment, since: int, target: str, count: int) -> list[LogLine]:
    """nginx's `count` lines of requests for `target` from byte `since`, once it has written
    them: a line goes out after its answer, so an earlier request's may come after `since`."""

    def written() -> list[LogLine]:
        lines = [line for line in deployed.nginx.lines(since) if f" {target} " in line.request]
        return lines if len(lines) >= count else []

    return wait_until(written, 10, "nginx to log every request")


def audit_events(engine: Engine, *actions: str) -> list[AuditEvent]:
    with read_session(engine) as session:
        return list(
            session.scalars(
                select(AuditEvent).where(AuditEvent.action.in_(actions)).order_by(AuditEvent.id)
            )
        )


def one_limit_for_both_processes(site: Site, client: httpx.Client) -> None:
    """A client's API requests go to both processes in turn, and its limit is reached after
    API_LIMIT of them in all, though neither process answered that many: the counters are
    shared, in Redis."""
    deployed = site.deployment
    reader = site.register("Volunteer Map", service_scopes="user:read")
    access_token = token(client, reader, grant_type="client_credentials").json()["access_token"]
    since = deployed.nginx.log_size()
    statuses = [
        client.get(MARKED, headers=bearer(access_token)).status_code for _ in range(2 * API_LIMIT)
    ]
    assert statuses == [200] * API_LIMIT + [429] * API_LIMIT

    lines = logged(deployed, since, MARKED, len(statuses))
    assert [line.status for line in lines] == statuses
    served = Counter(line.answered_by for line in lines if line.status == 200)
    assert set(served) == {process.upstream for process in deployed.processes}
    assert max(served.values()) < API_LIMIT, served  # neither process alone reached the limit
    refused = Counter(line.answered_by for line in lines if line.status == 429)
    assert set(refused) == set(served)


# --- one process stopped -----------------------------------------------------------------

GRANTS = 8
THREADS = 4  # each refreshes its own grants in turn, so that no grant is ever raced
REFRESHES = 40  # before the stop, and again after it


@dataclass
class Chain:
    """One grant as its tool holds it, and what happened to its refreshes."""

    grant_id: int
    refresh_token: str
    refreshed: int = 0  # answers 200
    resent: int = 0  # requests nginx answered 502 without a process taking them, sent again
    problems: list[str] = field(default_factory=list)


def test_a_process_stopped_mid_run_leaves_its_traffic_to_the_other(site: Site) -> None:
    """SIGTERM, as `systemctl stop` or a rolling upgrade sends it, to one process while tools
    refresh and call the API: nginx sends its traffic to the other; every refresh chain stays
    whole (each refresh token used once, each new one works); nothing is answered twice."""
    deployed = site.deployment
    stopped, survivor = deployed.processes
    user = make_user(site.engine, "fox", permissions=["user:read"])
    tool = site.register("Shift Planner", obo_scopes="user:read", redirect_uris=[TOOL_REDIRECT])
    with deployed.client() as client:
        chains = [first_tokens(site, client, tool, user) for _ in range(GRANTS)]

    done = threading.Event()
    total = Counter[str]()
    lock = threading.Lock()

    def refresh_in_turn(mine: list[Chain]) -> None:
        with deployed.client() as client:
            while not done.is_set():
                for chain in mine:
                    refresh(client, tool, chain, user)
                    with lock:
                        total["refreshes"] += 1

    workers = [
        threading.Thread(target=refresh_in_turn, args=(chains[n::THREADS],)) for n in range(THREADS)
    ]
    for worker in workers:
        worker.start()
    try:
        wait_until(lambda: total["refreshes"] >= REFRESHES, 60, "refreshes before the stop")
        before = deployed.nginx.log_size()
        # uvicorn finishes what it had started, then ends by the signal it was sent.
        assert stopped.stop(signal.SIGTERM) == -signal.SIGTERM
        assert "Finished server process" in stopped.tail()
        since = deployed.nginx.log_size()
        after = total["refreshes"]
        wait_until(lambda: total["refreshes"] >= after + REFRESHES, 60, "refreshes after it")
    finally:
        done.set()
        for worker in workers:
            worker.join(timeout=60)

    assert [chain.problems for chain in chains] == [[]] * GRANTS
    assert all(chain.refreshed > 0 for chain in chains)

    # nginx tried the stopping process and found it gone. Either it went on to the other (a
    # POST too, when it had not been sent), or, for a POST the process had taken into its
    # queue and dropped as it closed, it answered 502 and the tool sent it again. Which of
    # the two happens first is the race of the stop; both are a failover, and every 502 was
    # one of those drops, sent again. Once the process had ended, only the other answered.
    lines = deployed.nginx.lines(before)
    went_on = [
        line
        for line in lines
        if stopped.upstream in line.upstreams[:-1] and line.answered_by == survivor.upstream
    ]
    dropped = [line for line in lines if line.status == 502]
    assert went_on or dropped, [line.upstreams for line in lines]
    assert all(
        line.request.startswith("POST ") and set(line.upstreams) == {stopped.upstream}
        for line in dropped
    ), dropped
    assert len(dropped) == sum(chain.resent for chain in chains)
    answered = {line.answered_by for line in deployed.nginx.lines(since)}
    assert answered == {survivor.upstream}

    # Nothing answered twice: the database holds what the tools were answered, no more.
    with read_session(site.engine) as session:
        for chain in chains:
            grant = session.get(Grant, chain.grant_id)
            assert grant is not None
            assert grant.revoked_at is None
            rows = session.scalars(
                select(RefreshToken).where(RefreshToken.grant_id == chain.grant_id)
            ).all()
            assert len(rows) == 1 + chain.refreshed
            unconsumed = [row.token_hash for row in rows if row.consumed_at is None]
            assert unconsumed == [token_key(chain.refresh_token)]
            issued = session.scalar(
                select(func.count())
                .select_from(AccessToken)
                .where(AccessToken.grant_id == chain.grant_id)
            )
            assert issued == 1 + chain.refreshed


def first_tokens(site: Site, client: httpx.Client, tool: Registered, user: int) -> Chain:
    """A grant the way the consent page makes one, its code exchanged through nginx."""
    params = [
        ("client_id", tool.client_id),
        ("response_type", "code"),
        ("redirect_uri", TOOL_REDIRECT),
        ("scope", "user:read"),
    ]
    with write_session(site.engine) as session:
        request = check_authorization_request(session, params, site.deployment.public_url)
        location = approve(session, Actor("test"), request, user, site.deployment.public_url)
    code = parse_qs(urlsplit(location).query)["code"][0]
    answer = token(
        client, tool, grant_type="authorization_code", code=code, redirect_uri=TOOL_REDIRECT
    )
    assert answer.status_code == 200, answer.text
    refresh_token = answer.json()["refresh_token"]
    with read_session(site.engine) as session:
        grant_id = session.scalars(
            select(RefreshToken.grant_id).where(RefreshToken.token_hash == token_key(refresh_token))
        ).one()
    return Chain(grant_id, refresh_token)


def refresh(client: httpx.Client, tool: Registered, chain: Chain, user: int) -> None:
    """One refresh of `chain`, then one API call with its new access token. A 502 from nginx
    (a POST it sent on a connection the stopping process was closing: never sent again, by
    the guide's rule) is sent again once with the same refresh token, which must still work:
    no process took it."""
    for attempt in range(2):
        answer = token(client, tool, grant_type="refresh_token", refresh_token=chain.refresh_token)
        if answer.status_code != 502 or attempt:
            break
        chain.resent += 1
    if answer.status_code != 200:
        chain.problems.append(f"refresh: {answer.status_code} {answer.text}")
        return
    chain.refresh_token = answer.json()["refresh_token"]
    chain.refreshed += 1
    read = client.get(f"/api/v0/users/{user}", headers=bearer(answer.json()["access_token"]))
    if read.status_code != 200:
        chain.problems.append(f"API: {read.status_code} {read.text}")
