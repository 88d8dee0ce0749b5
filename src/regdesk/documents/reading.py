"""Reading record documents back: bodies a page found, completed from the tables."""

from __future__ import annotations

from collections.abc import Sequence

from regdesk.db.driver import LoopReads
from regdesk.documents.declarations import Document


def complete(
    reads: LoopReads, rows: Sequence[tuple[int, str | None]], document: Document
) -> list[str]:
    """The bodies of (id, body) rows, rendering any a change has just removed or that is
    still queued (the page query gives None for both, `Document.body`). A record deleted since
    the page was read is left out of it."""
    missing = [id_ for id_, body in rows if body is None]
    if not missing:
        return [body for _, body in rows if body is not None]
    with reads.engine.connect() as connection:
        rendered = document.render(connection, missing)
    return [b for id_, body in rows if (b := body or rendered.get(id_)) is not None]
