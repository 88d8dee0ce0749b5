"""A page read joined by SQLite (`Page.joined`, `reading.read_page`) is the page read as rows:
the same bodies in the same order and the same id to continue after, for every page query
regdesk holds, at every length and place. A body that is not ready (queued, or gone) has the
page read as rows and rendered, and it is the same page still; a page whose bodies are all
ready is one statement."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, delete, insert, text

from regdesk.audit.service import Actor
from regdesk.db.driver import LoopReads, Query
from regdesk.demo import load_demo
from regdesk.documents import Document, Page
from regdesk.documents.models import DocumentQueue
from regdesk.documents.reading import read_page
from regdesk.registrations import records as registrations
from regdesk.users import records as users
from regdesk.volunteers import records as volunteers

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

LIMITS = (1, 2, 7, 100)


def _scalars(connection: Connection, sql: str) -> list[Any]:
    return list(connection.execute(text(sql)).scalars())


def _pages(connection: Connection) -> Iterator[tuple[str, Page, Document, dict[str, Any]]]:
    """Every page query regdesk holds, with parameters that find records."""
    yield "volunteers", volunteers.PAGE, volunteers.DOCUMENT, {}
    role = _scalars(connection, "SELECT role_id FROM user_roles LIMIT 1")[0]
    email, username = connection.execute(text("SELECT email, username FROM users LIMIT 1")).one()
    for shape, search in users.SEARCHES.items():
        values = {"role_id": role, "email": email, "username": username}
        used = dict(zip(("role_id", "email", "username"), shape, strict=True))
        yield f"users {shape}", search, users.DOCUMENT, {k: values[k] for k in used if used[k]}
    user_ids = _scalars(connection, "SELECT user_id FROM registrations ORDER BY id")
    products = _scalars(connection, "SELECT DISTINCT product_id FROM orders ORDER BY 1")
    for status in (False, True):
        for user_count in (None, 9):
            for product_count in (None, 1):
                page = registrations._search_query(user_count, status, product_count)
                parameters: dict[str, Any] = {"status": "paid"} if status else {}
                parameters |= {f"user{i}": user_ids[i * 3] for i in range(user_count or 0)}
                parameters |= {f"product{i}": products[i] for i in range(product_count or 0)}
                shape = (user_count, status, product_count)
                yield f"registrations {shape}", page, registrations.DOCUMENT, parameters


class CountedReads(LoopReads):
    """The loop's reads, telling which queries they ran."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.ran: list[Query] = []

    async def documents(self, query: Query, **parameters: Any) -> list[tuple[Any, ...]]:
        self.ran.append(query)
        return await super().documents(query, **parameters)


async def _as_rows(
    reads: LoopReads, page: Page, document: Document, limit: int, **parameters: Any
) -> tuple[bytes, int | None]:
    """The page as its rows give it, the missing bodies rendered from the tables."""
    rows = await reads.documents(page.rows, limit=limit + 1, **parameters)
    found = rows[:limit]
    missing = [id_ for id_, body in found if body is None]
    with reads.engine.connect() as connection:
        rendered = document.render(connection, missing)
    bodies = [body or rendered[id_].encode() for id_, body in found if body or id_ in rendered]
    return b",".join(bodies), (found[-1][0] if len(rows) > limit else None)


def _walk(engine: Engine) -> tuple[dict[str, int], list[list[str]]]:
    """Every page of every query at every limit, read both ways and compared: how many pages
    each query at each limit gave, and which statements each page read took."""
    pages_read: dict[str, int] = {}
    statements: list[list[str]] = []

    async def run() -> None:
        reads = CountedReads(engine)
        try:
            with engine.connect() as connection:
                pages = list(_pages(connection))
            for name, page, document, parameters in pages:
                forms = {id(page.joined): "joined", id(page.rows): "rows"}
                for limit in LIMITS:
                    after: int | None = 0
                    count = 0
                    while after is not None:
                        reads.ran.clear()
                        joined = await read_page(
                            reads, page, document, limit, after=after, **parameters
                        )
                        statements.append([forms[id(query)] for query in reads.ran])
                        expected = await _as_rows(
                            reads, page, document, limit, after=after, **parameters
                        )
                        assert joined == expected, (name, limit, after)
                        assert type(joined[0]) is bytes
                        after, count = joined[1], count + 1
                    pages_read[f"{name} {limit}"] = count
        finally:
            await reads.aclose()

    asyncio.run(run())
    return pages_read, statements


def test_a_page_read_joined_is_the_page_read_as_rows(engine: Engine) -> None:
    load_demo(engine, users=90, volunteers=40, seed=5, actor=Actor("test"))
    pages_read, statements = _walk(engine)
    # Pages of more than one record, and more than one page of them at the smaller limits.
    assert pages_read["volunteers 7"] > 2
    assert pages_read["volunteers 100"] == 1
    assert pages_read["registrations (None, False, None) 2"] > 2
    assert pages_read["users (False, False, False) 1"] > 2
    assert pages_read["users (True, False, False) 7"] > 2
    # Every body ready: each page is the one joined statement.
    assert all(each == ["joined"] for each in statements)


def test_a_page_with_a_body_not_ready_is_read_as_rows_and_rendered(engine: Engine) -> None:
    load_demo(engine, users=90, volunteers=40, seed=5, actor=Actor("test"))
    with engine.begin() as connection:
        for document in (volunteers.DOCUMENT, users.DOCUMENT, registrations.DOCUMENT):
            key = document.table.c[document.key]
            ids = _scalars(connection, f"SELECT {document.key} FROM {document.table.name}")
            # One in five queued (its stored body stale), one in five gone.
            connection.execute(
                insert(DocumentQueue), [{"kind": document.kind, "key": i} for i in ids[::5]]
            )
            connection.execute(delete(document.table).where(key.in_(ids[1::5])))
    _, statements = _walk(engine)
    # A page with a body not ready read its rows too; one with every body ready did not.
    assert {tuple(each) for each in statements} == {("joined",), ("joined", "rows")}
