"""Reading record documents back: bodies a page found, completed from the tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from regdesk.db.driver import LoopReads, Query
from regdesk.documents.declarations import MISSING, Document, Page

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
    reads: LoopReads, page: Page, document: Document, limit: int, **parameters: Any
) -> tuple[bytes, int | None]:
    """A page of `document`'s records, at most `limit` (`page` gives them in id order): their
    bodies as stored, in UTF-8, joined by commas, and the id to continue after when more
    follow. On SQLite read joined by the database (`Page`); read as rows otherwise, or when a
    body is not ready, then rendered here."""
    if reads.sqlite:
        [(count, last, joined, more)] = await reads.documents(
            page.joined, limit=limit, **parameters
        )
        if not count:
            return b"", None
        if MISSING not in joined:
            return joined, (last if more else None)
    rows = await reads.documents(page.rows, limit=limit + 1, **parameters)
    found = rows[:limit]  # one more asked, to tell whether more follow
    bodies = _completed_bytes(reads, found, document)
    return b",".join(bodies), (found[-1][0] if len(rows) > limit else None)


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
