"""Small helpers shared by tests: looking into the database as a whole."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, MetaData, func, select
from sqlalchemy.engine import make_url


def database_text(engine: Engine) -> str:
    """Every row of every table, as text: for asserting that a secret is nowhere in it."""
    reflected = MetaData()
    reflected.reflect(engine)
    parts: list[str] = []
    with engine.connect() as connection:
        for table in reflected.sorted_tables:
            parts.extend(repr(tuple(row)) for row in connection.execute(select(table)))
    url = make_url(engine.url)
    if url.get_backend_name() == "sqlite" and url.database:
        # The raw file and its write-ahead log too, in case a page kept an old value.
        for suffix in ("", "-wal"):
            path = Path(url.database + suffix)
            if path.exists():
                parts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def row_counts(engine: Engine) -> dict[str, int]:
    reflected = MetaData()
    reflected.reflect(engine)
    with engine.connect() as connection:
        return {
            table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in reflected.sorted_tables
        }
