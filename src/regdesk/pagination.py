"""Signed keyset cursors, shared by every paginated search (decisions.md, Pagination).

A cursor names the last id a client has seen, the resource it pages through and a digest of
the filter it was issued for, signed with the instance secret. The next page is `id > last`
in id order, so its cost does not grow with depth, and a record inserted while a client pages
is seen at most once. A tampered cursor, or one replayed with another filter, is a 400.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.responses import Response

from regdesk.errors import ValidationFailed

DEFAULT_LIMIT = 100
MAX_LIMIT = 100


def _filter_digest(filters: Mapping[str, Any]) -> str:
    canonical = json.dumps(filters, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class Cursors:
    """Encodes and checks the cursors of one deployment (one secret key)."""

    def __init__(self, secret_key: str) -> None:
        self._serializer = URLSafeSerializer(
            secret_key,
            salt="regdesk.cursor.v1",
            signer_kwargs={"digest_method": hashlib.sha256},
        )

    def encode(self, resource: str, filters: Mapping[str, Any], last_id: int) -> str:
        return str(self._serializer.dumps([resource, _filter_digest(filters), last_id]))

    def decode(
        self, cursor: str, resource: str, filters: Mapping[str, Any], field: str = "nextPage"
    ) -> int:
        """The last id the cursor saw; a 400 naming `field` when it is not ours to accept."""
        try:
            payload = self._serializer.loads(cursor)
        except BadSignature:
            raise ValidationFailed(
                "The page cursor is not valid.", {field: "Unknown or altered cursor."}
            ) from None
        valid = (
            isinstance(payload, list)
            and len(payload) == 3
            and isinstance(payload[2], int)
            and payload[0] == resource
        )
        if not valid:
            raise ValidationFailed(
                "The page cursor is not valid.", {field: "This cursor belongs to another list."}
            )
        if payload[1] != _filter_digest(filters):
            raise ValidationFailed(
                "The page cursor is not valid.",
                {field: "This cursor was issued for a different filter."},
            )
        return int(payload[2])


def page_response(bodies: Sequence[bytes], next_page: str | None) -> Response:
    """page_document's response from records already in JSON, in UTF-8 as stored
    (documents/models.py, LoopReads.documents)."""
    tail = f'],"nextPage":{json.dumps(next_page)},"hasMore":{"true" if next_page else "false"}}}'
    return Response(b'{"data":[' + b",".join(bodies) + tail.encode(), media_type="application/json")


def page_document(data: Sequence[Any], next_page: str | None) -> dict[str, Any]:
    """The paginated response: api.md's `data` and `nextPage`, and decisions.md's `hasMore`."""
    return {"data": list(data), "nextPage": next_page, "hasMore": next_page is not None}
