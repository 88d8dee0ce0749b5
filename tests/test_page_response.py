"""A page sent from stored records (pagination.page_response) is the page api.md describes,
whatever its number of records: the same document page_document makes of them, from their
bodies joined as bytes or as a view of the front of a longer join (documents.reading.read_page
cuts off the record that only told that more follow)."""

from __future__ import annotations

import json

import pytest

from regdesk.pagination import page_document, page_response

RECORDS = [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Ümit"}, {"id": 3, "name": "李"}]
MORE = {"id": 4, "name": "Zoë"}


@pytest.mark.parametrize("count", [0, 1, 2, 3])
@pytest.mark.parametrize("next_page", [None, "abc.def"])
@pytest.mark.parametrize("as_view", [False, True])
def test_a_page_of_stored_records_is_the_page_document(
    count: int, next_page: str | None, as_view: bool
) -> None:
    records = RECORDS[:count]
    stored = [json.dumps(record, ensure_ascii=False).encode() for record in records]
    joined: bytes | memoryview = b",".join(stored)
    if as_view:
        longer = b",".join([*stored, json.dumps(MORE, ensure_ascii=False).encode()])
        joined = memoryview(longer)[: len(joined)]
    response = page_response(joined, next_page)
    assert response.media_type == "application/json"
    assert json.loads(response.body) == page_document(records, next_page)
