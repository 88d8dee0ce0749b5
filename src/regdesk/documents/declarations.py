"""What a record document is made of (see the package's docstring)."""

from __future__ import annotations

import copy
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
        queued = (  # names from the declaration and the caller's SQL, nothing from outside
            f"EXISTS (SELECT 1 FROM document_queue q WHERE q.kind = '{self.kind}'"  # noqa: S608
            f" AND q.key = {record})"
        )
        looked_up = (
            f"(SELECT body FROM {self.table.name} d WHERE d.{self.key} = {record}"  # noqa: S608
            f" AND NOT {queued})"
        )
        joined = f" LEFT JOIN {self.table.name} doc ON doc.{self.key} = {record}"
        # SQLite asks whether a record of this kind is queued at all once per statement (a
        # subquery that names no row of the read is run once), and for each record only when
        # one is: the queue is empty but for the moments after a change made outside regdesk's
        # writes. 49 µs for the page of 100 volunteers asking each record, 38 asking once.
        unqueued = (
            f"NOT EXISTS (SELECT 1 FROM document_queue WHERE kind = '{self.kind}')"  # noqa: S608
            f" OR NOT {queued}"
        )
        return Query(
            sql.format(body=looked_up, documents=""),
            sqlite=(sqlite or sql).format(
                body=f"CASE WHEN {unqueued} THEN doc.body END", documents=joined
            ),
            plan_once=plan_once,
        )
