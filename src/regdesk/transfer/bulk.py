"""The bulk statements an import writes with: a few per kind of row, whatever the number of
rows, and only what differs from the stored rows.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, bindparam, delete, insert, update
from sqlalchemy.orm import Session

from regdesk.db import sync_sequences
from regdesk.formats import truncate_to_ms
from regdesk.transfer.existing import Row


@dataclass
class Tally:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def count(self, stored: Row | None, changed: bool) -> None:
        if stored is None:
            self.created += 1
        elif changed:
            self.updated += 1
        else:
            self.unchanged += 1


def changed_columns(stored: Row, values: Mapping[str, Any]) -> dict[str, Any]:
    """The values that differ from the stored row; timestamps compare to the millisecond."""
    return {c: v for c, v in values.items() if not _same(stored[c], v)}


def _same(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, dt.datetime) and isinstance(wanted, dt.datetime):
        return truncate_to_ms(stored) == truncate_to_ms(wanted)
    return bool(stored == wanted)


class Links:
    """The rows of a link table for many owners, brought to the wanted state in bulk.

    Members are keyed by the tuple of their `key` columns; each carries the tuple of its
    `value` columns (empty for plain sets such as a user's permissions).
    """

    def __init__(
        self,
        table: Table,
        owner: str,
        key: tuple[str, ...],
        value: tuple[str, ...] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.table, self.owner, self.key, self.value = table, owner, key, value
        self.extra = dict(extra or {})  # columns that new rows get, such as created_at
        self.inserts: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self.deletes: list[dict[str, Any]] = []

    def compare(
        self,
        owner: int,
        stored: Mapping[tuple[Any, ...], tuple[Any, ...]],
        wanted: Mapping[tuple[Any, ...], tuple[Any, ...]],
    ) -> bool:
        """Queues the writes that turn `stored` into `wanted`; whether there are any."""
        before = len(self.inserts) + len(self.updates) + len(self.deletes)
        for member, values in wanted.items():
            row = self._row(owner, member, values)
            if member not in stored:
                self.inserts.append({**self.extra, **row})
            elif stored[member] != values:
                self.updates.append(row)
        for member in stored.keys() - wanted.keys():
            self.deletes.append(self._row(owner, member, ()))
        return len(self.inserts) + len(self.updates) + len(self.deletes) > before

    def write(self, conn: Connection) -> None:
        keys = (self.owner, *self.key)
        where = [self.table.c[c] == bindparam(f"key_{c}") for c in keys]
        if self.deletes:
            conn.execute(delete(self.table).where(*where), [_keyed(r, keys) for r in self.deletes])
        if self.updates:
            values: dict[str, Any] = {c: bindparam(f"new_{c}") for c in self.value}
            statement = update(self.table).where(*where).values(values)
            conn.execute(statement, [_keyed(r, keys) for r in self.updates])
        if self.inserts:
            conn.execute(insert(self.table), self.inserts)

    def _row(self, owner: int, member: tuple[Any, ...], values: tuple[Any, ...]) -> dict[str, Any]:
        return {
            self.owner: owner,
            **dict(zip(self.key, member, strict=True)),
            **dict(zip(self.value, values, strict=False)),
        }


def _keyed(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The row's values under the bind names of an UPDATE or DELETE (key_ in WHERE, new_ in SET)."""
    return {(f"key_{c}" if c in keys else f"new_{c}"): v for c, v in row.items()}


def insert_rows(
    session: Session, table: Table, rows: list[dict[str, Any]], key: str
) -> dict[Any, int]:
    """Inserts rows, returning {row[key]: id}.

    Rows asking for an id go first, and the sequence is moved past them before the others
    take theirs from it.
    """
    conn = session.connection()
    chosen = [row for row in rows if row.get("id") is not None]
    if chosen:
        conn.execute(insert(table), chosen)
        sync_sequences(session, table.name)
    ids = {row[key]: row["id"] for row in chosen}
    others = [{c: v for c, v in row.items() if c != "id"} for row in rows if row.get("id") is None]
    if others:
        statement = insert(table).returning(table.c[key], table.c.id)
        ids.update({row[0]: row[1] for row in conn.execute(statement, others)})
    return ids


def update_rows(
    conn: Connection, table: Table, changes: Iterable[tuple[int, dict[str, Any]]]
) -> None:
    """One executemany per set of changed columns: only what differs is written."""
    grouped: defaultdict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for row_id, columns in changes:
        if columns:
            grouped[tuple(sorted(columns))].append(_keyed({"id": row_id, **columns}, ("id",)))
    for names, params in grouped.items():
        statement = (
            update(table)
            .where(table.c.id == bindparam("key_id"))
            .values({name: bindparam(f"new_{name}") for name in names})
        )
        conn.execute(statement, params)


def as_set(members: Iterable[Any]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {(m if isinstance(m, tuple) else (m,)): () for m in members}


def positional(
    methods: Mapping[int, tuple[str, str, bool]],
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {(position,): method for position, method in methods.items()}
