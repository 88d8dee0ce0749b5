"""Backups of the whole database, and their restores into an empty one (docs/operations.md).

SQLite is copied by its own online backup while the service keeps writing; PostgreSQL by
pg_dump in its custom format and pg_restore. A backup is one consistent snapshot, taken as
it began; a restore goes into an empty database only, all or nothing, and never merges. The
file is readable by its owner only: it holds the instance's secrets and everyone's records.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from regdesk.backups import _postgres, _sqlite
from regdesk.backups._sqlite import STEP_PAGES, Progress
from regdesk.db import make_engine, refresh_statistics
from regdesk.migrations.revisions import SchemaState, schema_state

__all__ = [
    "DATABASE_NAMES",
    "Backup",
    "BackupRefused",
    "Progress",
    "Restored",
    "back_up",
    "restore",
]


DATABASE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


class BackupRefused(Exception):
    """A backup or restore that cannot be made as asked: the message says why, and that
    nothing was changed."""


@dataclass(frozen=True)
class Backup:
    file: Path
    size: int  # bytes
    database: str  # "sqlite" or "postgresql"
    revision: str  # the schema revision it holds

    def as_json(self) -> dict[str, Any]:
        return {
            "file": str(self.file),
            "size": self.size,
            "database": self.database,
            "revision": self.revision,
        }


@dataclass(frozen=True)
class Restored:
    file: Path
    database: str
    schema: SchemaState  # the restored database's revision beside this regdesk's

    @property
    def upgrade_needed(self) -> bool:
        """A backup from an older release: `regdesk db upgrade` before serving it."""
        return self.schema.known and not self.schema.is_current

    def as_json(self) -> dict[str, Any]:
        return {
            "file": str(self.file),
            "database": self.database,
            "revision": self.schema.current,
            "head": self.schema.head,
            "upgrade_needed": self.upgrade_needed,
            "newer_release": not self.schema.known,
        }


def back_up(
    database_url: str,
    file: Path,
    *,
    force: bool = False,
    progress: Progress | None = None,
    step_pages: int = STEP_PAGES,
) -> Backup:
    """Back up the database into `file`, refused when `file` exists unless `force`. SQLite's
    copy goes `step_pages` at a time, `progress` told after each; PostgreSQL's is pg_dump's."""
    kind = _kind(database_url)
    if file.is_dir():
        raise BackupRefused(f"{file} is a folder: name the backup file to write.")
    if not file.parent.is_dir():
        raise BackupRefused(f"there is no folder {file.parent} to write {file.name} in.")
    if file.exists() and not force:
        raise BackupRefused(f"{file} exists: nothing was written (--force replaces it).")
    with _new_private_file(file, force) as temporary:
        if kind == "sqlite":
            source = _sqlite_path(database_url)
            if file.resolve() == source.resolve():
                raise BackupRefused(f"{file} is the database itself: name another file.")
            if not source.is_file():
                raise BackupRefused(f"there is no database at {source}: nothing to back up.")
            revision = _sqlite.back_up(source, temporary, progress, step_pages)
        else:
            with _tool_failures():
                _postgres.dump(database_url, temporary)
                revision = _postgres.revision(temporary)
        if revision is None:
            raise BackupRefused(
                f"{_label(database_url)} holds no regdesk schema: nothing to back up."
            )
    return Backup(file=file, size=file.stat().st_size, database=kind, revision=revision)


def restore(database_url: str, file: Path) -> Restored:
    """Restore the backup `file` into the database, which must be empty (no table at all)."""
    kind = _kind(database_url)
    made_by = _backup_kind(file)
    if made_by != kind:
        raise BackupRefused(
            f"{file} is a backup of a {DATABASE_NAMES[made_by]} database, and the database to "
            f"restore into is {DATABASE_NAMES[kind]}: a backup restores into the same kind of "
            "database only. Nothing was changed."
        )
    if kind == "sqlite":
        target = _sqlite_path(database_url)
        revision = _sqlite.revision(file)
        found = _sqlite.tables(target)
    else:
        with _tool_failures():
            revision = _postgres.revision(file)
        found = _postgres_tables(database_url)
    if revision is None:
        raise BackupRefused(f"{file} holds no regdesk schema: it is not a regdesk backup.")
    if found:
        raise BackupRefused(
            f"{_label(database_url)} is not empty: it holds {_listed(found)}. A restore goes "
            "into an empty database only and never merges; nothing was changed."
        )
    if kind == "sqlite":
        _check_no_stray_log(target)
        _sqlite.restore(file, target)
    else:
        with _tool_failures():
            _postgres.restore(file, database_url)
    engine = make_engine(database_url)
    try:
        refresh_statistics(engine)  # the planner's view of the rows just loaded
        return Restored(file=file, database=kind, schema=schema_state(engine))
    finally:
        engine.dispose()


def _kind(database_url: str) -> str:
    backend = make_url(database_url).get_backend_name()
    if backend == "sqlite":
        return "sqlite"
    if backend in ("postgresql", "postgres"):
        return "postgresql"
    raise BackupRefused(f"backups are made of SQLite and PostgreSQL databases, not {backend}.")


def _backup_kind(file: Path) -> str:
    if not file.is_file():
        raise BackupRefused(f"there is no backup file {file}.")
    with file.open("rb") as handle:
        start = handle.read(len(_sqlite.HEADER))
    if start.startswith(_sqlite.HEADER):
        return "sqlite"
    if start.startswith(_postgres.HEADER):
        return "postgresql"
    raise BackupRefused(
        f"{file} is not a regdesk backup: neither a SQLite database nor a pg_dump archive "
        "in its custom format."
    )


def _sqlite_path(database_url: str) -> Path:
    database = make_url(database_url).database
    if not database or database == ":memory:":
        raise BackupRefused("an in-memory SQLite database has no file to back up or restore.")
    return Path(database)


def _label(database_url: str) -> str:
    """The database as the organizer configured it, without its password."""
    return f"the database {make_url(database_url).render_as_string(hide_password=True)}"


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:8])
    more = len(names) - 8
    return f"the tables {shown}" + (f" and {more} more" if more > 0 else "")


def _postgres_tables(database_url: str) -> list[str]:
    engine = make_engine(database_url)
    try:
        return sorted(inspect(engine).get_table_names())
    except OperationalError as exc:
        raise BackupRefused(
            f"cannot reach {_label(database_url)} ({exc.orig}): create the empty database "
            "first (`createdb`), then restore into it."
        ) from None
    finally:
        engine.dispose()


def _check_no_stray_log(target: Path) -> None:
    """A write-ahead log left without its database would be replayed into the restored one."""
    log = target.with_name(f"{target.name}-wal")
    if not target.exists() and log.exists():
        raise BackupRefused(
            f"{log} is there without its database {target}: move it away, then restore. "
            "Nothing was changed."
        )


@contextmanager
def _tool_failures() -> Iterator[None]:
    try:
        yield
    except _postgres.ToolFailed as exc:
        raise BackupRefused(str(exc)) from None


@contextmanager
def _new_private_file(file: Path, replace: bool) -> Iterator[Path]:
    """A new file beside `file`, readable by its owner only, that becomes `file` when the block
    ends well and is gone when it does not: a backup is never left half-written."""
    descriptor, name = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
    os.close(descriptor)
    temporary = Path(name)
    try:
        yield temporary
        if replace:
            os.replace(temporary, file)
        else:
            _link_unless_taken(temporary, file)
    finally:
        temporary.unlink(missing_ok=True)


def _link_unless_taken(temporary: Path, file: Path) -> None:
    """`temporary` becomes `file`, refused if `file` appeared meanwhile (a link never
    replaces), or on a file system without links, if it is there now."""
    try:
        os.link(temporary, file)
    except FileExistsError:
        raise BackupRefused(f"{file} exists: nothing was written (--force replaces it).") from None
    except OSError:
        if file.exists():
            raise BackupRefused(
                f"{file} exists: nothing was written (--force replaces it)."
            ) from None
        os.replace(temporary, file)
