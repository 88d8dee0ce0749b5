"""JSON request bodies (schemas.json_body): text no database stores is refused however the
body spells it, the same 400 naming the field (the hostile-input suite sends the escapes)."""

from __future__ import annotations

import pytest

from tests.api.support import validation_fields
from tests.client import TestClient
from tests.conftest import Apps, bearer

SEARCH = "/api/v0/volunteers/search"

# The same member, `nextPage`, holding a NUL or a lone surrogate, in each way JSON can say so.
ESCAPED = '{"nextPage": "a\\ud800b"}'
WRITTEN_OUT = '{"nextPage": "a\ud800b"}'
SPELLINGS = {
    "NUL escaped": b'{"nextPage": "a\\u0000b"}',
    "surrogate escaped": b'{"nextPage": "a\\ud800b"}',
    "surrogate escaped in capitals": b'{"nextPage": "a\\uD800b"}',
    "surrogate written out in UTF-8": b'{"nextPage": "a\xed\xa0\x80b"}',
    "UTF-16, surrogate escaped": ESCAPED.encode("utf-16-le"),
    "UTF-16, surrogate written out": WRITTEN_OUT.encode("utf-16-le", "surrogatepass"),
    "UTF-16 with its mark, NUL escaped": '{"nextPage": "a\\u0000b"}'.encode("utf-16"),
    "UTF-32, surrogate written out": WRITTEN_OUT.encode("utf-32-be", "surrogatepass"),
}


@pytest.mark.parametrize("body", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_unstorable_text_is_refused_however_the_body_spells_it(
    client: TestClient, apps: Apps, body: bytes
) -> None:
    token = apps.service_token("volunteer:read")
    answer = client.post(
        SEARCH, content=body, headers={**bearer(token), "Content-Type": "application/json"}
    )
    assert validation_fields(answer) == {"nextPage": "Text with a NUL or a lone surrogate."}


def test_a_member_name_holding_unstorable_text_is_refused(client: TestClient, apps: Apps) -> None:
    token = apps.service_token("volunteer:read")
    answer = client.post(
        SEARCH,
        content=b'{"limit": 5, "a\xed\xa0\x80": 1}',
        headers={**bearer(token), "Content-Type": "application/json"},
    )
    assert validation_fields(answer) == {"body": "Text with a NUL or a lone surrogate."}
