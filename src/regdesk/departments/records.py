"""Department records of the API (api.md 2.6, 4.5): rendered from their tables, kept as
documents (regdesk.documents), and sent as one list.

The list is read in one statement: whether every department's document is ready (as many
documents as departments, none queued), and their bodies joined in id order by the database
(SQLite's group_concat, PostgreSQL's string_agg). The answer is those bytes between brackets:
no row reaches Python, and nothing is kept between requests. While a change waits to be
rendered (SQL by hand, or a refresh that ran beside it), the list is read record by record and
the missing ones rendered from the tables, as every page does. Read row by row from the tables,
with the leads' columns as Python strings, the list cost five times as much as the ready
documents joined by the database (19 departments, 37 leads: 120 µs, now 20, on SQLite).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from regdesk.db import among, core_connection
from regdesk.db.driver import LoopReads, Query
from regdesk.departments.models import Department, DepartmentLead
from regdesk.departments.schemas import render_department
from regdesk.documents import Document, Stale
from regdesk.documents.reading import read_all
from regdesk.formats import as_json
from regdesk.users.models import User

Bind = Session | Connection

# The columns of users a lead shows (api.md 2.3, `render_nested_user`).
LEAD_COLUMNS = ("first_name", "last_name", "username", "preferred_name", "phone", "email")


def department_documents(bind: Bind, ids: Iterable[int]) -> dict[int, str]:
    """The JSON records of the departments with these ids (those that exist), with their
    leads in user-id order, from the tables: two queries for any number of them."""
    wanted = sorted(ids)
    bind = core_connection(bind)
    leads: defaultdict[int, list[Any]] = defaultdict(list)
    for lead in bind.execute(
        select(DepartmentLead.department_id, User.id, *(User.__table__.c[c] for c in LEAD_COLUMNS))
        .join(User, User.id == DepartmentLead.user_id)
        .where(among(bind, DepartmentLead.department_id, wanted))
        .order_by(DepartmentLead.department_id, DepartmentLead.user_id)
    ):
        leads[lead.department_id].append(lead)
    rendered = {}
    for row in bind.execute(
        select(Department.id, Department.name, Department.email, Department.publicly_visible)
        .where(among(bind, Department.id, wanted))
        .order_by(Department.id)
    ):
        shown = SimpleNamespace(
            id=row.id, name=row.name, email=row.email, publicly_visible=bool(row.publicly_visible)
        )
        rendered[row.id] = as_json(render_department(shown, leads[row.id]))
    return rendered


DOCUMENT = Document(
    kind="department",
    records="departments",
    render=department_documents,
    stale=(
        Stale(
            "departments",
            "SELECT R.id",
            ("INSERT", "UPDATE"),
            ("id", "name", "email", "publicly_visible"),
        ),
        Stale("department_leads", "SELECT R.department_id"),
        Stale(
            "users",
            "SELECT department_id FROM department_leads WHERE user_id = R.id",
            ("UPDATE",),
            LEAD_COLUMNS,
        ),
    ),
)

_TABLE, _KEY = DOCUMENT.table.name, DOCUMENT.key
# Ready: the documents are as many as the departments (a document goes with its department,
# by its foreign key) and none is queued. Names from the declaration, nothing from outside.
_READY = (
    f"(SELECT count(*) FROM departments) = (SELECT count(*) FROM {_TABLE})"  # noqa: S608
    f" AND NOT EXISTS (SELECT 1 FROM document_queue WHERE kind = '{DOCUMENT.kind}')"
)
# SQLite keeps a subquery's ORDER BY for the aggregate over it (it does not flatten a subquery
# with an ORDER BY into an aggregate query); PostgreSQL's aggregate takes its own.
_LIST_SQLITE = Query(
    f"SELECT {_READY}, (SELECT group_concat(body, ',') FROM"  # noqa: S608
    f" (SELECT body FROM {_TABLE} ORDER BY {_KEY}))",
    only="sqlite",
)
_LIST_POSTGRESQL = Query(
    f"SELECT {_READY}, (SELECT string_agg(body, ',' ORDER BY {_KEY}) FROM {_TABLE})",  # noqa: S608
    only="postgresql",
)
# Record by record, each with its stored body unless queued (Document.read).
_EACH = DOCUMENT.read("SELECT x.id, {body} FROM departments x{documents} ORDER BY x.id", "x.id")


async def departments_json(reads: LoopReads) -> bytes:
    """Every department, visible or not, with its leads: the API's bare array, in id order, as
    the UTF-8 JSON it sends (see the module)."""
    ready, joined = (await reads.documents(_LIST_SQLITE if reads.sqlite else _LIST_POSTGRESQL))[0]
    if not ready:
        joined = b",".join(await read_all(reads, _EACH, DOCUMENT))
    return b"[" + (joined or b"") + b"]"
