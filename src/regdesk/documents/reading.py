"""Reading record documents back: bodies a page found, completed from the tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from regdesk.db.driver import LoopReads, Query
from regdesk.documents.declarations import Document

Body = TypeVar("Body", str, bytes)


def complete(
    reads: LoopReads, rows: Sequence[tuple[int, str | None]], document: Document
) -> list[str]:
    """The bodies of (id, body) rows, rendering any a change has just removed or that is
    still queued (the page query gives None for both, `Document.read`). A record deleted since
    the page was read is left out of it."""
    return _completed(rows, lambda missing: _rendered(reads, missing, document))


async def read_all(
    reads: LoopReads, query: Query, document: Document, **parameters: Any
) -> list[bytes]:
    """The bodies of every row `query` gives ((id, body) rows, in its order), as stored, in
    UTF-8, those missing rendered here and encoded alike."""
    return _completed_bytes(reads, await reads.documents(query, **parameters), document)


async def read_page(
    reads: LoopReads, query: Query, document: Document, limit: int, **parameters: Any
) -> tuple[list[bytes], int | None]:
    """A page of `document`'s records: `query` gives (id, body) rows in id order, at most its
    `:limit` (limit + 1 of them, to tell whether more follow). The bodies as stored, in UTF-8
    (`LoopReads.documents`), those rendered here encoded alike; and the id to continue after
    when more follow."""
    rows = await reads.documents(query, limit=limit + 1, **parameters)
    page = rows[:limit]
    bodies = _completed_bytes(reads, page, document)
    return bodies, (page[-1][0] if len(rows) > limit else None)


def _completed_bytes(
    reads: LoopReads, rows: Sequence[tuple[int, bytes | None]], document: Document
) -> list[bytes]:
    return _completed(
        rows,
        lambda missing: {i: b.encode() for i, b in _rendered(reads, missing, document).items()},
    )


def _completed(
    rows: Sequence[tuple[int, Body | None]], render: Callable[[list[int]], dict[int, Body]]
) -> list[Body]:
    missing = [id_ for id_, body in rows if body is None]
    if not missing:
        return [body for _, body in rows if body is not None]
    rendered = render(missing)
    return [b for id_, body in rows if (b := body or rendered.get(id_)) is not None]


def _rendered(reads: LoopReads, missing: list[int], document: Document) -> dict[int, str]:
    with reads.engine.connect() as connection:
        return document.render(connection, missing)
