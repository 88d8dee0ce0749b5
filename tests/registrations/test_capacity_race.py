"""Capacity is never oversold (registrations.md, Rules that must hold; issue 15), through the
attendee's page as browsers send it: of many attendees racing for the last places of a
product, exactly that many get an order and every other one is told "Sold out." (never a 500),
with two `regdesk serve` processes on one PostgreSQL database and with one on SQLite; and a
user posting the form from several sessions at once gets one registration, and one order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from regdesk.db import make_engine
from regdesk.registrations.models import Order, Registration
from tests import http_calls
from tests.conftest import scratch_database_url
from tests.helpers import live_servers
from tests.volunteers.support import field_error
from tests.web.registering_support import add_product, page_error
from tests.web.support import PASSWORD, form, make_user

RACERS, PLACES = 24, 5
SESSIONS = 4  # one user's browsers posting the form at once


@dataclass(frozen=True)
class Deployment:
    engine: Engine
    servers: list[str]  # the base URLs of the server processes, sharing one database


@pytest.fixture(
    params=[
        pytest.param(("sqlite", 1), id="sqlite-one-server"),
        pytest.param(("postgresql", 2), id="postgresql-two-servers", marks=pytest.mark.postgres),
    ]
)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    backend, processes = request.param
    with scratch_database_url(backend, tmp_path, migrated=True) as url, ExitStack() as stack:
        engine = make_engine(url)
        stack.callback(engine.dispose)
        servers = stack.enter_context(live_servers(url, processes))
        yield Deployment(engine, servers)


class Browser:
    """One signed-in browser on one server: its session cookie and its forms' CSRF token."""

    def __init__(self, base: str, username: str) -> None:
        self.http = http_calls.client(base_url=base, timeout=60)
        login = self.http.get("/login")
        fields = {**form(login.text, "/login").fields, "username": username, "password": PASSWORD}
        assert self.http.post("/login", data=fields).status_code == 303
        page = self.http.get("/register")
        assert page.status_code == 200, page.text
        self.token = form(page.text, "/register").fields["csrf_token"]

    def register(self, product: int) -> httpx.Response:
        sent = {"csrf_token": self.token, "product": str(product), "badgeName": "Racer"}
        return self.http.post("/register", data=sent)

    def close(self) -> None:
        self.http.close()


def at_once(attempts: list[Callable[[], httpx.Response]]) -> list[httpx.Response]:
    """Each attempt in a thread of its own, all released together; their answers in order."""
    barrier = threading.Barrier(len(attempts))
    answers: list[httpx.Response | BaseException | None] = [None] * len(attempts)

    def run(index: int) -> None:
        barrier.wait()
        try:
            answers[index] = attempts[index]()
        except BaseException as error:  # a transport error is an answer to report
            answers[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(attempts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    failed = [answer for answer in answers if not isinstance(answer, httpx.Response)]
    assert failed == [], failed
    return [answer for answer in answers if isinstance(answer, httpx.Response)]


def count(engine: Engine, model: type, *where: object) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(model).where(*where)) or 0


def test_of_many_racing_for_the_last_places_exactly_that_many_get_an_order(
    deployment: Deployment,
) -> None:
    engine, servers = deployment.engine, deployment.servers
    last = add_product(engine, "last", capacity=PLACES)
    add_product(engine, "other")  # a product nobody races for: its places are not counted
    users = [make_user(engine, f"racer{i}") for i in range(RACERS)]
    browsers = [Browser(servers[i % len(servers)], f"racer{i}") for i in range(RACERS)]
    try:
        answers = at_once([lambda b=browser: b.register(last) for browser in browsers])
    finally:
        for browser in browsers:
            browser.close()

    statuses = [answer.status_code for answer in answers]
    assert statuses.count(303) == PLACES, statuses
    losers = [answer for answer in answers if answer.status_code != 303]
    assert {answer.status_code for answer in losers} == {400}
    assert [field_error(answer.text, "product") for answer in losers] == ["Sold out."] * (
        RACERS - PLACES
    )
    assert count(engine, Order) == PLACES
    assert count(engine, Order, Order.product_id == last) == PLACES
    assert count(engine, Registration, Registration.ended_at.is_(None)) == PLACES
    winners = {answer.request.headers["cookie"] for answer in answers if answer.status_code == 303}
    assert len(winners) == PLACES
    with Session(engine) as session:
        holders = set(session.scalars(select(Registration.user_id)))
    assert holders <= set(users)
    assert len(holders) == PLACES


def test_one_user_posting_from_several_sessions_at_once_gets_one_registration(
    deployment: Deployment,
) -> None:
    engine, servers = deployment.engine, deployment.servers
    # Two sessions for one product (held apart by its lock), two for others (by the index).
    first = add_product(engine, "first", capacity=100)
    products = [first, first, add_product(engine, "second"), add_product(engine, "third")]
    fox = make_user(engine, "fox")
    browsers = [Browser(servers[i % len(servers)], "fox") for i in range(SESSIONS)]
    try:
        answers = at_once(
            [
                lambda b=browser, p=product: b.register(p)
                for browser, product in zip(browsers, products, strict=True)
            ]
        )
    finally:
        for browser in browsers:
            browser.close()

    statuses = [answer.status_code for answer in answers]
    assert sorted(statuses) == [303] + [400] * (SESSIONS - 1), statuses
    for answer in answers:
        if answer.status_code == 400:
            assert page_error(answer.text) == "You are already registered for this event."
    assert count(engine, Registration, Registration.user_id == fox) == 1
    # No order left behind by a refused attempt: the one registration's, and no other.
    assert count(engine, Order, Order.user_id == fox) == 1
