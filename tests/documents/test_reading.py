"""`Document.read`: a read of stored bodies is written once and given to each database in the
form it runs best (PostgreSQL a subquery by key, SQLite a join). The portable form runs on
SQLite too, so on one database both forms are held to the same rows, for records whose body is
stored, queued for rendering, or gone, with every kind of record queued, each kind alone, and
none."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, delete, insert, text

from regdesk.audit.service import Actor
from regdesk.db.driver import Query
from regdesk.demo import load_demo
from regdesk.departments import records as departments
from regdesk.desk import ticket_reads
from regdesk.documents import Page
from regdesk.documents.models import DocumentQueue
from regdesk.models import DOCUMENTS
from regdesk.registrations import records as registrations
from regdesk.users import records as users
from regdesk.volunteers import records as volunteers

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _rows(connection: Connection, sql: str, query: Query, parameters: dict[str, Any]) -> list[Any]:
    """`sql` (one of `query`'s forms) run as the hot paths run it, on the driver's cursor."""
    form = Query(sql)
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    cursor.execute(form.qmark, [parameters[name] for name in form.names])
    return list(cursor.fetchall())


def _scalars(connection: Connection, sql: str) -> list[Any]:
    return list(connection.execute(text(sql)).scalars())


def _reads(connection: Connection) -> list[tuple[Query, dict[str, Any]]]:
    """Every read made by `Document.read`, with parameters that find each kind of record."""
    user_ids = _scalars(connection, "SELECT id FROM users ORDER BY id")
    role = _scalars(connection, "SELECT role_id FROM user_roles LIMIT 1")[0]
    email, username = connection.execute(text("SELECT email, username FROM users")).first()  # type: ignore[misc]
    codes = _scalars(connection, "SELECT ticket_code FROM registrations")
    products = _scalars(connection, "SELECT DISTINCT product_id FROM orders")
    page = {"after": 0, "limit": 100_000}
    reads: list[tuple[Query, dict[str, Any]]] = [
        (volunteers.PAGE.rows, page),
        (departments._EACH, {}),
        *((volunteers.OF_USER, {"user_id": id_}) for id_ in user_ids),
        *((users.USER_DOCUMENT, {"user_id": id_}) for id_ in user_ids),
        *((registrations.OF_USER, {"user_id": id_}) for id_ in user_ids),
        *((ticket_reads.BY_CODE, {"code": code}) for code in codes),
    ]
    for (role_filter, email_filter, username_filter), search in users.SEARCHES.items():
        filters = {"role_id": role, "email": email, "username": username}
        used = {"role_id": role_filter, "email": email_filter, "username": username_filter}
        reads.append((search.rows, {**page, **{k: v for k, v in filters.items() if used[k]}}))
    for status in (False, True):
        for user_count in (None, 3):
            for product_count in (None, len(products)):
                query = registrations._search_query(user_count, status, product_count).rows
                parameters: dict[str, Any] = {**page, "status": "paid"}
                parameters |= {f"user{i}": user_ids[i * 7] for i in range(user_count or 0)}
                parameters |= {f"product{i}": p for i, p in enumerate(products[:product_count])}
                reads.append((query, parameters))
    return reads


def test_sqlites_form_of_each_document_read_gives_the_rows_of_the_portable_form(
    engine: Engine,
) -> None:
    load_demo(engine, users=90, volunteers=40, seed=5, actor=Actor("test"))
    queued: dict[str, list[dict[str, Any]]] = {}
    with engine.begin() as connection:
        for document in DOCUMENTS:  # a third queued, a third without a document, a third stored
            key = document.table.c[document.key]
            ids = _scalars(connection, f"SELECT {document.key} FROM {document.table.name}")
            queued[document.kind] = [{"kind": document.kind, "key": id_} for id_ in ids[::3]]
            connection.execute(delete(document.table).where(key.in_(ids[1::3])))
        reads = _reads(connection)
        bodies: list[Any] = []
        # Every kind queued, each kind alone, none.
        states = [list(queued), *([kind] for kind in queued), []]
        for kinds in states:
            connection.execute(delete(DocumentQueue))
            for kind in kinds:
                connection.execute(insert(DocumentQueue), queued[kind])
            for query, parameters in reads:
                assert query.sqlite_sql != query.sql
                sqlite = _rows(connection, query.sqlite_sql, query, parameters)
                portable = _rows(connection, query.sql, query, parameters)
                assert sqlite == portable, (kinds, query.sqlite_sql)
                bodies += [row[1] if query is ticket_reads.BY_CODE else row[-1] for row in sqlite]
    # Each kind of record was read: stored bodies, and missing ones (queued or gone).
    assert any(body is None for body in bodies)
    assert any(body is not None for body in bodies)
    # And every such read a module of regdesk holds (alone, or in a table of them) is among
    # those compared; the registration searches' shapes are made by one function, tried above.
    held = {
        id(value)
        for name, module in list(sys.modules.items())
        if name.startswith("regdesk.")
        for attribute in vars(module).values()
        for each in (attribute.values() if isinstance(attribute, dict) else (attribute,))
        for value in ((each.rows,) if isinstance(each, Page) else (each,))
        if isinstance(value, Query) and value.sqlite_sql != value.sql
    }
    assert held <= {id(query) for query, _ in reads}
