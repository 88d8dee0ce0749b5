"""What a record document is made of (see the package's docstring)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sqlalchemy import Column, Connection, ForeignKey, Integer, Table, Text
from sqlalchemy.orm import Session

from regdesk.db import Base
from regdesk.db.driver import Query

ALL = ("INSERT", "UPDATE", "DELETE")
# Renders the records with these ids (those that exist) from their tables: {id: JSON text}.
Render = Callable[[Session | Connection, Iterable[int]], dict[int, str]]


@dataclass(frozen=True)
class Stale:
    """A change to a row of `table` makes stale the documents of the records `ids` selects,
    the changed row being `R` (`"SELECT R.id"`, `"SELECT id FROM volunteers WHERE user_id =
    R.id"`). `operations`: which changes; an UPDATE counts only when one of `columns` (when
    given) changed, so that a change the document does not show leaves it alone."""

    table: str
    ids: str
    operations: tuple[str, ...] = ALL
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Document:
    """The rendered JSON of one kind of record, kept in `<kind>_documents`."""

    kind: str
    records: str  # the table of the records, keyed by `id`
    render: Render
    stale: tuple[Stale, ...]
    table: Table = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        tables = [stale.table for stale in self.stale]
        # One trigger function per table it watches (documents.triggers names them so).
        assert len(tables) == len(set(tables)), f"{self.kind}: one Stale per table"
        table = Table(
            f"{self.kind}_documents",
            Base.metadata,
            Column(
                self.key,
                Integer,
                ForeignKey(f"{self.records}.id", ondelete="CASCADE"),
                primary_key=True,
            ),
            Column("body", Text, nullable=False),
        )
        object.__setattr__(self, "table", table)

    def without(self, tables: Iterable[str]) -> Document:
        """The declaration without its `Stale` of these tables (the same document table): what
        an older revision installed, before those tables were watched or made."""
        dropped = set(tables)
        left = tuple(stale for stale in self.stale if stale.table not in dropped)
        older = copy.copy(self)  # no __post_init__: the table is shared, not defined again
        object.__setattr__(older, "stale", left)
        return older

    @property
    def key(self) -> str:
        return f"{self.kind}_id"

    def read(
        self, sql: str, record: str, *, plan_once: bool = True, sqlite: str | None = None
    ) -> Query:
        """A read of this document's stored bodies: `sql` with `{body}` where the body of the
        record whose id is `record` (an SQL expression) goes, NULL while the record is queued
        or has none (the reader then renders it: `reading.complete`), and `{documents}` in its
        FROM clause, after the table `record` comes from. Each database gets the form it runs
        best. PostgreSQL looks the body up by key in a subquery: as a join, it would merge with
        every document from the first one on, a cost that grows with a page's depth. SQLite
        joins the documents table by key: it runs a subquery as a program of its own for each
        row, and a page of 100 volunteers took 71 µs that way, 49 joined. `plan_once`:
        whether PostgreSQL plans it once for any values; `sqlite`, SQLite's own `sql` where the
        two differ otherwise too (`Query`)."""
        body, documents = self._joined_sqlite(record)
        return Query(
            sql.format(body=self._looked_up(record), documents=""),
            sqlite=(sqlite or sql).format(body=body, documents=documents),
            plan_once=plan_once,
        )

    def _queued(self, record: str) -> str:
        # Names from the declaration and the caller's SQL, nothing from outside.
        return (
            f"EXISTS (SELECT 1 FROM document_queue q WHERE q.kind = '{self.kind}'"  # noqa: S608
            f" AND q.key = {record})"
        )

    def _looked_up(self, record: str) -> str:
        """PostgreSQL's body of `record`: looked up by key, NULL while queued."""
        return (
            f"CASE WHEN {self._unqueued(record)} THEN (SELECT body FROM {self.table.name} d"  # noqa: S608
            f" WHERE d.{self.key} = {record}) END"
        )

    def _unqueued(self, record: str) -> str:
        """Whether `record` is not queued for rendering. Both databases ask whether a record of
        this kind is queued at all once per statement (a subquery that names no row of the read
        is run once), and for each record only when one is: the queue is empty but for the
        moments after a change made outside regdesk's writes. On SQLite the page of 100
        volunteers took 49 µs asking each record, 38 asking once. On PostgreSQL, which scans the
        small queue for each record it asks about, the database server's CPU for a request of
        that page went from 260-280 to 214-226 µs, under wrk."""
        return (
            f"NOT EXISTS (SELECT 1 FROM document_queue WHERE kind = '{self.kind}')"  # noqa: S608
            f" OR NOT {self._queued(record)}"
        )

    def _joined_sqlite(self, record: str) -> tuple[str, str]:
        """SQLite's body of `record`, NULL while queued, and the join it reads it from."""
        return (
            f"CASE WHEN {self._unqueued(record)} THEN doc.body END",
            f" LEFT JOIN {self.table.name} doc ON doc.{self.key} = {record}",
        )

    def page(
        self, sql: str, record: str, *, plan_once: bool = True, sqlite: str | None = None
    ) -> Page:
        """A page of this document's records: `sql` as for `read`, giving (id, body) rows in
        id order after `:after`, at most its `:limit`. Read as rows (`read`), and, on SQLite,
        joined in the database (`Page`)."""
        template = sqlite or sql
        body, documents = self._joined_sqlite(record)
        # Whether more follow: the page's own query, after its last record, for one row.
        following = _PAGE_END.sub(
            lambda name: {"after": "joined.last", "limit": "1"}[name[1]],
            template.format(body="NULL", documents=""),
        )
        assert following.count("joined.last") == 1, "a page is read after one :after"
        # SQLite keeps the page's order for the aggregate over it (it does not flatten a
        # subquery with a LIMIT into an aggregate). Each use of a subquery's text column
        # copies it (8 µs a page), so the body is used once.
        joined = Query(  # names from the declaration and the caller's SQL, nothing from outside
            f"WITH page(id, body) AS ({template.format(body=body, documents=documents)})"  # noqa: S608
            f" SELECT joined.*, EXISTS ({following}) FROM (SELECT count(*) AS count,"
            f" max(id) AS last, group_concat(ifnull(body, char({ord(MISSING)})), ',')"
            " FROM page) joined",
            only="sqlite",
        )
        return Page(self.read(sql, record, plan_once=plan_once, sqlite=sqlite), joined)


# A page query's parameters that say where it starts and how long it is.
_PAGE_END = re.compile(r"(?<![:\w]):(after|limit)\b")


# What a page read joined gives for a body that is not ready: a control character, which JSON
# never holds unescaped, so no stored body has it.
MISSING = b"\x01"


@dataclass(frozen=True)
class Page:
    """A page of a document's records, read two ways (`Document.page`, `reading.read_page`).

    `rows`: (id, body) rows, a body NULL while not ready. `joined`, SQLite's: one row of how
    many records the page holds, the last one's id, their bodies joined by commas in id order
    (MISSING for each not ready), and whether more follow. No record reaches the driver as a
    row of its own, and the page is one string: timed alone, a page of 100 volunteers took 41
    µs of SQLite's and the driver's time as rows, 30 joined. PostgreSQL reads rows: its
    string_agg took the server 100 µs more than the rows it joins."""

    rows: Query
    joined: Query
