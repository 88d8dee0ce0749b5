"""PostgreSQL: backups and restores through PostgreSQL's own programs, pg_dump (its custom
format) and pg_restore, which must be on PATH.

The database's password goes to them in their environment (PGPASSWORD), never on the command
line, where every user of the machine could read it (`ps`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from sqlalchemy.engine import URL, make_url

# What every archive in pg_dump's custom format begins with.
HEADER = b"PGDMP"

INSTALL = (
    "install PostgreSQL's client programs (on Debian and Ubuntu the postgresql-client "
    "package), of the server's major version or newer"
)


class ToolFailed(Exception):
    """pg_dump or pg_restore missing or failing; the message says which, and why."""


def _program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolFailed(f"{name} is not on PATH: {INSTALL}, then run this command again.")
    return found


def _connection(database_url: str) -> tuple[str, dict[str, str]]:
    """The database as libpq's URI without its password, and the environment carrying it."""
    url = make_url(database_url)
    environment = dict(os.environ)
    if url.password is not None:
        environment["PGPASSWORD"] = str(url.password)
    # Made anew: `URL.set(password=None)` would keep the password (None there means "as is").
    bare = URL.create("postgresql", url.username, None, url.host, url.port, url.database, url.query)
    return bare.render_as_string(hide_password=False), environment


def _run(arguments: list[str], environment: dict[str, str] | None = None) -> str:
    """Run one of PostgreSQL's programs; its output, or ToolFailed with what it said."""
    name = Path(arguments[0]).name
    result = subprocess.run(  # noqa: S603 (our own arguments, no shell)
        arguments, env=environment, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        said = result.stderr.strip() or f"exit status {result.returncode}"
        if "version mismatch" in said:
            said += f"\n({INSTALL})"
        raise ToolFailed(f"{name} failed: {said}")
    return result.stdout


def dump(database_url: str, into: Path) -> None:
    """The whole database into the file `into`, as one snapshot (pg_dump's own transaction)."""
    uri, environment = _connection(database_url)
    _run(
        [_program("pg_dump"), "--format=custom", f"--dbname={uri}", f"--file={into}"],
        environment,
    )


def revision(archive: Path) -> str | None:
    """The schema revision an archive holds (its alembic_version row), read without restoring
    it; None when it holds no regdesk schema."""
    script = _run(
        [_program("pg_restore"), "--data-only", "--table=alembic_version", "--file=-", str(archive)]
    )
    lines = iter(script.splitlines())
    for line in lines:
        if line.startswith("COPY ") and "alembic_version" in line:
            value = next(lines, "\\.")
            return None if value == "\\." else value.strip()
    return None


def restore(archive: Path, database_url: str) -> None:
    """Restore `archive` into the database, all or nothing (one transaction). Objects belong
    to the role restoring them, whichever role made the backup."""
    uri, environment = _connection(database_url)
    _run(
        [
            _program("pg_restore"),
            "--single-transaction",
            "--exit-on-error",
            "--no-owner",
            "--no-privileges",
            f"--dbname={uri}",
            str(archive),
        ],
        environment,
    )
