"""Page cursors (`nextPage`) in a client's hands (decisions.md, Pagination: "an opaque,
tamper-evident cursor ... signed with the instance secret, bound to the query's filter"; "an
unknown or tampered cursor, or a cursor used with a different filter: 400"). A cursor is a
stateless signed token, so ASVS 4.0 V3.5.3 applies by analogy: signature, tampering, replay
and key substitution; and V4.2.1: a cursor must not open records outside its list.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI
from itsdangerous import URLSafeSerializer
from sqlalchemy import Engine

from regdesk.pagination import Cursors, _filter_digest
from tests.api.support import import_rich, validation_fields
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.transfer.support import import_

USERS, VOLUNTEERS, ROLES = "/api/v0/users/search", "/api/v0/volunteers/search", "/api/v0/roles"
RESOURCE = {USERS: "users", VOLUNTEERS: "volunteers", ROLES: "roles"}


@dataclass(frozen=True)
class Lists:
    headers: dict[str, str]
    roles: dict[str, int]


@pytest.fixture(scope="module")
def lists(client: TestClient, engine: Engine) -> Lists:
    roles = import_rich(engine).roles
    more = [{"username": u, "roles": ["Dealer", "Staff"]} for u in ("Zoë", "miyazaki")]
    import_(engine, {"users": more})
    token = Apps(engine, client).service_token("user:read volunteer:read")
    return Lists(bearer(token), roles)


def page(
    client: TestClient, lists: Lists, path: str, cursor: str | None, **body: Any
) -> httpx.Response:
    response: httpx.Response
    if path == ROLES:
        params: dict[str, Any] = {"limit": 1, **({"nextPage": cursor} if cursor else {})}
        response = client.get(path, params=params, headers=lists.headers)
    else:
        request = {"limit": 1, **body, **({"nextPage": cursor} if cursor is not None else {})}
        response = client.post(path, json=request, headers=lists.headers)
    return response


def cursors_of(client: TestClient, lists: Lists, path: str) -> tuple[str, str]:
    """The cursors after page 1 and after page 2 of the list."""
    first = page(client, lists, path, None).json()["nextPage"]
    second = page(client, lists, path, first).json()["nextPage"]
    assert isinstance(first, str)
    assert isinstance(second, str)
    return first, second


def flip(text: str, index: int) -> str:
    """`text` with the character at `index` changed in its highest bit (the low bits of a
    last base64 character may be padding, which decodes to the same bytes)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    old = text[index]
    new = alphabet[(alphabet.index(old) + 32) % 64] if old in alphabet else "A"
    return text[:index] + new + text[index + 1 :]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _payload(cursor: str) -> bytes:
    encoded = cursor.partition(".")[0]
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))


def forged_payload(path: str, last_id: Any) -> str:
    """The JSON a cursor carries, written by the attacker: the right resource and filter
    digest (both guessable), any position."""
    return b64(json.dumps([RESOURCE[path], _filter_digest({}), last_id]).encode())


Tamper = Callable[[str, str, str], str]  # (path, cursor after page 1, after page 2) -> forged

TAMPERS: dict[str, Tamper] = {
    "byte flipped in the payload": lambda p, c, d: flip(c, 2),
    "byte flipped in the signature": lambda p, c, d: flip(c, len(c) - 10),
    "first character flipped": lambda p, c, d: flip(c, 0),
    "last character flipped": lambda p, c, d: flip(c, len(c) - 1),
    "truncated by one": lambda p, c, d: c[:-1],
    "truncated to half": lambda p, c, d: c[: len(c) // 2],
    "signature removed": lambda p, c, d: c.rpartition(".")[0] + ".",
    "payload only": lambda p, c, d: c.rpartition(".")[0],
    "payload of one, signature of another": lambda p, c, d: (
        c.rpartition(".")[0] + "." + d.rpartition(".")[2]
    ),
    "rewound to the start, signature kept": lambda p, c, d: (
        forged_payload(p, 0) + "." + c.rpartition(".")[2]
    ),
    "skipped ahead, signature kept": lambda p, c, d: (
        forged_payload(p, 10**6) + "." + c.rpartition(".")[2]
    ),
    "negative position, signature kept": lambda p, c, d: (
        forged_payload(p, -1) + "." + c.rpartition(".")[2]
    ),
    "its own kind of payload rewound, signature kept": lambda p, c, d: (
        b64(f"{RESOURCE[p]}:{_filter_digest({})}:0".encode()) + "." + c.rpartition(".")[2]
    ),
    "its own payload, its id written with a leading zero, signature kept": lambda p, c, d: (
        b64(re.sub(rb":(\d+)$", rb":0\1", _payload(c))) + "." + c.rpartition(".")[2]
    ),
    "forged JSON, no signature": lambda p, c, d: forged_payload(p, 0) + ".",
    "forged JSON, signed with a guessed key": lambda p, c, d: URLSafeSerializer(
        "changeme", salt="regdesk.cursor.v1"
    ).dumps([RESOURCE[p], _filter_digest({}), 0]),
    "signed by another instance": lambda p, c, d: Cursors(
        "another instance's secret key, 32+ characters"
    ).encode(RESOURCE[p], {}, 0),
    "case flipped": lambda p, c, d: c.swapcase(),
    "padded": lambda p, c, d: c.rpartition(".")[0] + "==." + c.rpartition(".")[2],
    "doubled": lambda p, c, d: c + c,
    "surrounded by spaces": lambda p, c, d: f" {c} ",
    "JSON where the cursor goes": lambda p, c, d: json.dumps([RESOURCE[p], "", 0]),
}


@pytest.mark.parametrize("tamper", list(TAMPERS.values()), ids=list(TAMPERS))
@pytest.mark.parametrize("path", [USERS, VOLUNTEERS, ROLES], ids=["users", "volunteers", "roles"])
def test_a_tampered_cursor_is_refused(
    client: TestClient, lists: Lists, path: str, tamper: Tamper
) -> None:
    first, second = cursors_of(client, lists, path)
    forged = tamper(path, first, second)
    assert forged not in (first, second)
    response = page(client, lists, path, forged)
    assert list(validation_fields(response)) == ["nextPage"], (forged, response.text)


def test_a_cursor_of_the_earlier_kind_still_continues_its_list(
    client: TestClient, lists: Lists
) -> None:
    """Cursors were signed by itsdangerous's serializer until 2026-11: one a client got before
    an upgrade shows the same next page as the cursor regdesk gives now."""
    app = cast(FastAPI, client.app)
    earlier = URLSafeSerializer(
        app.state.secret_key,
        salt="regdesk.cursor.v1",
        signer_kwargs={"digest_method": hashlib.sha256},
    )
    for path in (USERS, VOLUNTEERS, ROLES):
        first, _ = cursors_of(client, lists, path)
        assert _payload(first).startswith(f"{RESOURCE[path]}:".encode())  # of the current kind
        last_id = app.state.cursors.decode(first, RESOURCE[path], {})
        old = earlier.dumps([RESOURCE[path], _filter_digest({}), last_id])
        now, then = page(client, lists, path, first), page(client, lists, path, old)
        assert (now.status_code, now.json()) == (then.status_code, then.json()) == (200, now.json())


def test_the_genuine_cursors_still_work(client: TestClient, lists: Lists) -> None:
    """The control, and replay: a cursor is a position, using it twice shows the same page."""
    for path in (USERS, VOLUNTEERS, ROLES):
        first, _ = cursors_of(client, lists, path)
        again = [page(client, lists, path, first) for _ in range(2)]
        assert [r.status_code for r in again] == [200, 200]
        assert again[0].json() == again[1].json()


# --- one filter's cursor with another filter ---------------------------------------------


def users_of(response: httpx.Response) -> list[str]:
    return [u["username"] for u in response.json()["data"]]


Filters = Callable[[Lists], dict[str, Any] | None]

FILTER_SWAPS: dict[str, tuple[Filters, Filters]] = {
    "all users, then one role's": (lambda f: None, lambda f: {"roleId": f.roles["Staff"]}),
    "one role's, then all users": (lambda f: {"roleId": f.roles["Staff"]}, lambda f: None),
    "one role's, then an empty filter": (lambda f: {"roleId": f.roles["Staff"]}, lambda f: {}),
    "one role's, then another role's": (
        lambda f: {"roleId": f.roles["Staff"]},
        lambda f: {"roleId": f.roles["Dealer"]},
    ),
    "one role's, then the role and a username": (
        lambda f: {"roleId": f.roles["Staff"]},
        lambda f: {"roleId": f.roles["Staff"], "username": "Zoë"},
    ),
    "all users, then an e-mail address": (lambda f: None, lambda f: {"email": "fox@example.org"}),
    "all users, then a username": (lambda f: None, lambda f: {"username": "miyazaki"}),
}


@pytest.mark.parametrize("swap", list(FILTER_SWAPS.values()), ids=list(FILTER_SWAPS))
def test_a_cursor_used_with_another_filter_is_refused(
    client: TestClient, lists: Lists, swap: tuple[Filters, Filters]
) -> None:
    """decisions.md promises the 400 (so no record outside the new filter can show)."""
    issued_with, used_with = swap[0](lists), swap[1](lists)
    body = {"filter": issued_with} if issued_with is not None else {}
    first = page(client, lists, USERS, None, **body)
    assert first.json()["hasMore"] is True
    cursor = first.json()["nextPage"]
    body = {"filter": used_with} if used_with is not None else {}
    response = page(client, lists, USERS, cursor, **body)
    assert list(validation_fields(response)) == ["nextPage"], response.text


def test_a_cursor_continues_its_own_filter_whatever_the_limit(
    client: TestClient, lists: Lists
) -> None:
    """The control: the limit is not part of the filter; the filter still holds."""
    staff = {"roleId": lists.roles["Staff"]}
    first = page(client, lists, USERS, None, filter=staff)
    rest = page(client, lists, USERS, first.json()["nextPage"], filter=staff, limit=100)
    assert rest.status_code == 200
    everyone = page(client, lists, USERS, None, filter=staff, limit=100)
    assert users_of(first) + users_of(rest) == users_of(everyone)
