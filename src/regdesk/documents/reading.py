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
    rendered = _rendered(reads, missing, document)
    return [b for id_, body in rows if (b := body or rendered.get(id_)) is not None]


def complete_page(
    reads: LoopReads, rows: Sequence[tuple[int, bytes | None]], document: Document
) -> list[bytes]:
    """`complete` for a page read as bytes (`LoopReads.documents`): the bodies as stored, in
    UTF-8, those rendered here encoded alike."""
    missing = [id_ for id_, body in rows if body is None]
    if not missing:
        return [body for _, body in rows if body is not None]
    rendered = {id_: body.encode() for id_, body in _rendered(reads, missing, document).items()}
    return [b for id_, body in rows if (b := body or rendered.get(id_)) is not None]


def _rendered(reads: LoopReads, missing: list[int], document: Document) -> dict[int, str]:
    with reads.engine.connect() as connection:
        return document.render(connection, missing)
