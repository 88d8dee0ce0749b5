"""Signed keyset cursors, shared by every paginated search (decisions.md, Pagination).

A cursor names the last id a client has seen, the resource it pages through and a digest of
the filter it was issued for, signed with the instance secret. The next page is `id > last`
in id order, so its cost does not grow with depth, and a record inserted while a client pages
is seen at most once. A tampered cursor, or one replayed with another filter, is a 400.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.responses import Response

from regdesk.errors import ValidationFailed
from regdesk.security import b64url

DEFAULT_LIMIT = 100
MAX_LIMIT = 100


def _filter_digest(filters: Mapping[str, Any]) -> str:
    if not filters:
        return _NO_FILTER  # most pages' (every volunteer page's): worked out once
    canonical = json.dumps(filters, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


_NO_FILTER = hashlib.sha256(b"{}").hexdigest()[:16]


# What a cursor says: the resource, the filter's digest, the last id seen.
_PAYLOAD = re.compile(r"([a-z_]+):([0-9a-f]{16}):(0|[1-9][0-9]{0,18})")


class Cursors:
    """Encodes and checks the cursors of one deployment (one secret key).

    A cursor is its payload, `<resource>:<filter digest>:<last id>`, in base64url, a dot, and
    the payload's HMAC-SHA256 in base64url, under a key made once from the instance secret.
    Only the exact text regdesk wrote is accepted (the same bytes written otherwise, padded or
    with other spare bits, are not). Signed by itsdangerous's serializer (JSON, compressed when
    shorter so), as cursors were until 2026-11, encoding one took 11 µs and checking one 9;
    this way, 2.2 and 3.8 (2.7 and 4.9 while each signature keyed HMAC anew, and a cursor was
    matched against the base64url alphabet before it was decoded). A cursor of that earlier
    kind (`regdesk.cursor.v1`) is still accepted, so that a client paging through an upgrade
    goes on."""

    def __init__(self, secret_key: str) -> None:
        key = hmac.digest(secret_key.encode(), b"regdesk.cursor.v2", "sha256")
        self._mac = hmac.new(key, digestmod="sha256")  # keyed once; copied for each cursor
        self._earlier = URLSafeSerializer(
            secret_key,
            salt="regdesk.cursor.v1",
            signer_kwargs={"digest_method": hashlib.sha256},
        )

    def encode(self, resource: str, filters: Mapping[str, Any], last_id: int) -> str:
        payload = f"{resource}:{_filter_digest(filters)}:{last_id}".encode()
        return self._written(payload)

    def _written(self, payload: bytes) -> str:
        """The cursor regdesk writes for `payload`: it, then its signature, in base64url."""
        mac = self._mac.copy()
        mac.update(payload)
        return f"{b64url(payload)}.{b64url(mac.digest())}"

    def decode(
        self, cursor: str, resource: str, filters: Mapping[str, Any], field: str = "nextPage"
    ) -> int:
        """The last id the cursor saw; a 400 naming `field` when it is not ours to accept."""
        payload = self._signed(cursor)
        if payload is None:
            raise ValidationFailed(
                "The page cursor is not valid.", {field: "Unknown or altered cursor."}
            )
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

    def _signed(self, cursor: str) -> Any:
        """What the cursor says when regdesk signed it ([resource, digest, last id]), else None."""
        # The exact text regdesk writes for the payload it decodes to, and nothing else: any
        # other spelling (characters base64 skips, padding, spare bits) is written back otherwise.
        if cursor.isascii():  # as every cursor regdesk writes (compare_digest takes no other)
            payload = _unb64(cursor.partition(".")[0])
            if hmac.compare_digest(cursor, self._written(payload)):
                said = _PAYLOAD.fullmatch(payload.decode("ascii"))
                # Signed by regdesk, then always of this form: anything else is not a list's.
                return [said[1], said[2], int(said[3])] if said else None
        try:
            return self._earlier.loads(cursor)
        except BadSignature:
            return None


def _unb64(text: str) -> bytes:
    """base64url without its padding, decoded; what does not decode, as no bytes."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return b""


def page_response(records: bytes, next_page: str | None) -> Response:
    """page_document's response from records already in JSON, joined by commas, in UTF-8 as
    stored (documents/reading.py, read_page)."""
    more = "true" if next_page else "false"
    tail = f'],"nextPage":{json.dumps(next_page)},"hasMore":{more}}}'.encode()
    # One join, so the page's bytes (about 100 kB) are copied once.
    return Response(b"".join((b'{"data":[', records, tail)), media_type="application/json")


def page_document(data: Sequence[Any], next_page: str | None) -> dict[str, Any]:
    """The paginated response: api.md's `data` and `nextPage`, and decisions.md's `hasMore`."""
    return {"data": list(data), "nextPage": next_page, "hasMore": next_page is not None}
