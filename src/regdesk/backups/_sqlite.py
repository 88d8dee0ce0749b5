"""SQLite: backups and restores through SQLite's own online backup (sqlite3's `backup`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

# What every SQLite database file begins with (the file format's header string).
HEADER = b"SQLite format 3\x00"

# 1,024 pages (4 MiB at SQLite's default page size) a step, and the callback told after each.
STEP_PAGES = 1024
Progress = Callable[[int, int], None]  # (pages still to copy, pages in all)


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """`path` opened for reading only: a missing file stays missing (not created empty)."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    connection.isolation_level = None  # transactions begin where this code says
    with closing(connection):
        connection.execute("PRAGMA busy_timeout = 30000")
        yield connection


def _revision(connection: sqlite3.Connection) -> str | None:
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError:  # no such table: not a regdesk schema
        return None
    return None if row is None else str(row[0])


def revision(path: Path) -> str | None:
    """The schema revision of the regdesk database (or backup) at `path`; None if none."""
    try:
        with _read_only(path) as connection:
            return _revision(connection)
    except sqlite3.DatabaseError:  # not a database, or a damaged one
        return None


def tables(path: Path) -> list[str]:
    """The tables in the database at `path`, none when the file is missing or empty."""
    if not path.exists() or path.stat().st_size == 0:
        return []
    with _read_only(path) as connection:
        rows = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
        return sorted(name for (name,) in rows)


def back_up(
    source: Path, into: Path, progress: Progress | None = None, step_pages: int = STEP_PAGES
) -> str | None:
    """Copy the database at `source` into the (empty) file `into`, a step at a time while
    others keep writing, as it was when the copy began; its schema revision then (None, and
    nothing copied, when it holds no regdesk schema)."""
    with _read_only(source) as connection:
        # A read transaction held across the steps pins one snapshot: in WAL mode (regdesk's)
        # writers go on beside it, and SQLite never restarts the copy because one wrote.
        connection.execute("BEGIN")
        connection.execute("SELECT count(*) FROM sqlite_master")  # the snapshot is taken here
        schema_revision = _revision(connection)
        if schema_revision is None:
            return None
        with closing(sqlite3.connect(into)) as target:
            connection.backup(target, pages=step_pages, progress=_reporting(progress))
            # One self-contained file: the copy took the source's WAL mode with its pages.
            target.execute("PRAGMA journal_mode = DELETE")
        connection.execute("COMMIT")
    return schema_revision


def restore(backup: Path, into: Path) -> None:
    """Copy the backup at `backup` into the database file `into` (made when missing), as one
    transaction of the target: a restore that fails leaves it as it was."""
    with _read_only(backup) as source, closing(sqlite3.connect(into)) as target:
        target.execute("PRAGMA busy_timeout = 30000")
        source.backup(target)


def _reporting(progress: Progress | None) -> Callable[[int, int, int], object] | None:
    if progress is None:
        return None
    return lambda _status, remaining, total: progress(remaining, total)
