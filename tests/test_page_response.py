"""A page sent from stored records (pagination.page_response) is the page api.md describes,
whatever its number of records: the same document page_document makes of them."""

from __future__ import annotations

import json

import pytest

from regdesk.pagination import page_document, page_response

RECORDS = [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Ümit"}, {"id": 3, "name": "李"}]


@pytest.mark.parametrize("count", [0, 1, 2, 3])
@pytest.mark.parametrize("next_page", [None, "abc.def"])
def test_a_page_of_stored_records_is_the_page_document(count: int, next_page: str | None) -> None:
    records = RECORDS[:count]
    stored = [json.dumps(record, ensure_ascii=False).encode() for record in records]
    response = page_response(stored, next_page)
    assert response.media_type == "application/json"
    assert json.loads(response.body) == page_document(records, next_page)
    assert stored == [json.dumps(r, ensure_ascii=False).encode() for r in records]  # untouched
