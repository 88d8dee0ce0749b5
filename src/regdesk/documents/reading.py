"""Reading record documents back: bodies a page found, completed from the tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Connection

from regdesk.db import LoopReads

Render = Callable[[Connection, list[int]], dict[int, str]]


def complete(reads: LoopReads, rows: Sequence[tuple[int, str | None]], render: Render) -> list[str]:
    """The bodies of (id, body) rows, rendering with `render` any a change has just removed or
    that is still queued (the page query gives None for both). A record deleted since the page
    was read is left out of it."""
    missing = [id_ for id_, body in rows if body is None]
    if not missing:
        return [body for _, body in rows if body is not None]
    with reads.engine.connect() as connection:
        rendered = render(connection, missing)
    return [b for id_, body in rows if (b := body or rendered.get(id_)) is not None]
