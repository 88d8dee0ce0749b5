"""The mailed links (accounts/links.py): each works once, until it expires, for its purpose
only; only the newest of a kind works; the database keeps no token, only its hash; of two
clicks racing, one wins."""

from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, select, update

from regdesk.accounts.links import (
    AccountLink,
    Link,
    LinkPurpose,
    issue_link,
    newest_link_address,
    peek_link,
    use_link,
)
from regdesk.db import make_engine, read_session, utcnow, write_session
from regdesk.security import token_hash
from tests.helpers import database_text
from tests.web.support import make_user

pytestmark = pytest.mark.postgres
RESET, VERIFY = LinkPurpose.RESET_PASSWORD, LinkPurpose.VERIFY_EMAIL


def issue(engine: Engine, user_id: int, purpose: LinkPurpose, email: str | None = None) -> str:
    with write_session(engine) as session:
        return issue_link(session, user_id, purpose, email=email)


def use(engine: Engine, token: str, purpose: LinkPurpose) -> Link | None:
    with write_session(engine) as session:
        return use_link(session, token, purpose)


def test_a_link_works_once_and_only_for_its_purpose(engine: Engine) -> None:
    fox = make_user(engine, "fox")
    token = issue(engine, fox, VERIFY, email="fox@new.example.org")
    assert use(engine, token, RESET) is None  # another purpose
    with read_session(engine) as session:
        assert peek_link(session, token, VERIFY) == Link(fox, VERIFY, "fox@new.example.org")
    assert use(engine, token, VERIFY) == Link(fox, VERIFY, "fox@new.example.org")
    assert use(engine, token, VERIFY) is None  # used
    with read_session(engine) as session:
        assert peek_link(session, token, VERIFY) is None
    assert use(engine, token + "x", VERIFY) is None


@pytest.mark.parametrize(("purpose", "hours"), [(RESET, 1), (VERIFY, 48)])
def test_a_link_expires(engine: Engine, purpose: LinkPurpose, hours: int) -> None:
    fox = make_user(engine, "fox")
    token = issue(engine, fox, purpose)
    with read_session(engine) as session:
        expires = session.scalars(select(AccountLink.expires_at)).one()
    assert dt.timedelta(hours=hours) - dt.timedelta(minutes=1) < expires - utcnow()
    assert expires - utcnow() <= dt.timedelta(hours=hours)
    with write_session(engine) as session:
        session.execute(update(AccountLink).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
    assert use(engine, token, purpose) is None


def test_only_the_newest_link_of_a_kind_works(engine: Engine) -> None:
    fox, otter = make_user(engine, "fox"), make_user(engine, "otter")
    first = issue(engine, fox, RESET)
    verify = issue(engine, fox, VERIFY)
    others = issue(engine, otter, RESET)
    second = issue(engine, fox, RESET)
    assert use(engine, first, RESET) is None
    assert use(engine, second, RESET) == Link(fox, RESET, None)
    assert use(engine, verify, VERIFY) is not None  # another kind: untouched
    assert use(engine, others, RESET) is not None  # another person's: untouched


def test_the_database_keeps_no_token_only_its_hash(engine: Engine) -> None:
    fox = make_user(engine, "fox")
    token = issue(engine, fox, RESET)
    stored = database_text(engine)
    assert token not in stored
    assert token_hash(token) in stored


def test_of_two_clicks_racing_one_wins(engine: Engine, database_url: str) -> None:
    fox = make_user(engine, "fox")
    token = issue(engine, fox, RESET)
    engines = [make_engine(database_url) for _ in range(4)]
    start = threading.Barrier(len(engines))

    def click(mine: Engine) -> Link | None:
        start.wait()
        return use(mine, token, RESET)

    try:
        with ThreadPoolExecutor(len(engines)) as pool:
            outcomes = list(pool.map(click, engines))
    finally:
        for mine in engines:
            mine.dispose()
    assert [outcome for outcome in outcomes if outcome is not None] == [Link(fox, RESET, None)]


def test_the_address_waiting_is_the_newest_working_links(engine: Engine) -> None:
    fox = make_user(engine, "fox")
    issue(engine, fox, VERIFY, email="first@example.org")
    token = issue(engine, fox, VERIFY, email="second@example.org")
    with read_session(engine) as session:
        assert newest_link_address(session, fox, VERIFY) == "second@example.org"
    with write_session(engine) as session:
        session.execute(update(AccountLink).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
    with read_session(engine) as session:
        assert newest_link_address(session, fox, VERIFY) is None  # expired
    token = issue(engine, fox, VERIFY, email="third@example.org")
    use(engine, token, VERIFY)
    with read_session(engine) as session:
        assert newest_link_address(session, fox, VERIFY) is None  # used
