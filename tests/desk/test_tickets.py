"""The ticket API (registrations.md, Pages: ticket scanning): a scanning app on behalf of desk
staff looks a code up and checks it in; a forged code is told apart offline with the published
keys, and by the server before it reads a registration."""

from __future__ import annotations

import base64
import logging

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from fastapi import FastAPI
from sqlalchemy import Engine, delete, event

from regdesk.db import write_session
from regdesk.keys import retire
from regdesk.oauth.models import UserPermission
from regdesk.registrations import ticket_codes
from tests.admin.registering import api_registration, make_product, registered
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.desk.support import Queue, queue
from tests.web.support import make_user

SCOPES = "admin:ticket:read admin:ticket:scan"


def scanner(apps: Apps, user_id: int) -> dict[str, str]:
    """A scanning app's token, granted by the desk staff member `user_id`."""
    return bearer(apps.mint(apps.register(obo_scopes=SCOPES), SCOPES, user_id=user_id))


def scan_staff(engine: Engine, username: str = "sid") -> int:
    return make_user(engine, username, permissions=["admin:ticket:read", "admin:ticket:scan"])


ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def forged(code: str) -> str:
    """The ticket with one character inside its signature changed: well formed, not genuine.
    (Not the last: base32's last character carries bits that a decoder may drop.)"""
    changed = "A" if code[-50] != "A" else "B"
    return code[:-50] + changed + code[-49:]


@pytest.fixture
def people(engine: Engine) -> Queue:
    return queue(engine)


def test_a_ticket_reads_as_the_registration_record_with_checked_in_at(
    people: Queue, engine: Engine, apps: Apps, client: TestClient
) -> None:
    headers = scanner(apps, scan_staff(engine))
    code = people.code(engine, people.fox)
    answer = client.get(f"/api/v0/tickets/{code}", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {**api_registration(apps, people.fox_id), "checkedInAt": None}
    # A scanner with Caps Lock on types it in lower case: the same ticket.
    assert client.get(f"/api/v0/tickets/{code.lower()}", headers=headers).json()["id"] == (
        people.fox.registration_id
    )


def test_check_in_then_a_second_scan_is_a_409_saying_when_and_by_whom(
    people: Queue, engine: Engine, apps: Apps, client: TestClient
) -> None:
    sid, sue = scan_staff(engine, "sid"), scan_staff(engine, "sue")
    code = people.code(engine, people.fox)
    first = client.post(f"/api/v0/tickets/{code}/check-in", headers=scanner(apps, sid))
    assert first.status_code == 200, first.text
    record = first.json()
    assert record["checkedInAt"].endswith("Z")
    assert {k: v for k, v in record.items() if k not in ("checkedInAt", "updatedAt")} == {
        k: v for k, v in api_registration(apps, people.fox_id).items() if k != "updatedAt"
    }
    again = client.post(f"/api/v0/tickets/{code}/check-in", headers=scanner(apps, sue))
    assert again.status_code == 409
    assert again.json() == {
        "errors": {
            "conflict": {
                "message": "Already checked in.",
                "checkedInAt": record["checkedInAt"],
                "checkedInBy": {"id": str(sid), "name": "Fae Sid (sid)"},
            }
        }
    }
    looked_up = client.get(f"/api/v0/tickets/{code}", headers=scanner(apps, sue)).json()
    assert looked_up["checkedInAt"] == record["checkedInAt"]


def test_an_unpaid_ticket_is_not_checked_in(
    people: Queue, engine: Engine, apps: Apps, client: TestClient
) -> None:
    code = people.code(engine, people.owl)
    answer = client.post(
        f"/api/v0/tickets/{code}/check-in", headers=scanner(apps, scan_staff(engine))
    )
    assert answer.status_code == 409
    assert answer.json()["errors"]["conflict"]["status"] == "unpaid"
    assert people.registration(engine, people.owl).checked_in_at is None


def test_a_cancelled_registrations_ticket_is_not_found(
    people: Queue, engine: Engine, apps: Apps, client: TestClient
) -> None:
    headers = scanner(apps, scan_staff(engine))
    code = people.code(engine, people.cat)
    for answer in (
        client.get(f"/api/v0/tickets/{code}", headers=headers),
        client.post(f"/api/v0/tickets/{code}/check-in", headers=headers),
    ):
        assert answer.status_code == 404
        assert answer.json() == {"errors": {"resource": {"message": "Ticket not found."}}}
    assert people.registration(engine, people.cat).checked_in_at is None


def test_a_forged_code_is_not_found_without_reading_a_registration(
    people: Queue,
    engine: Engine,
    apps: Apps,
    client: TestClient,
    app: FastAPI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    headers = scanner(apps, scan_staff(engine))
    code = forged(people.code(engine, people.fox))
    client.get("/api/v0/tickets/key")  # the keys in memory, as after the app's first scan
    statements: list[str] = []

    def remember(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    # The event loop's reads log their SQL (db/driver.py); the pool's are SQLAlchemy's events.
    event.listen(app.state.engine, "before_cursor_execute", remember)
    try:
        with caplog.at_level(logging.DEBUG, logger="regdesk.sql"):
            answers = [
                client.get(f"/api/v0/tickets/{code}", headers=headers),
                client.get("/api/v0/tickets/NOT-A-CODE", headers=headers),
                client.post(f"/api/v0/tickets/{code}/check-in", headers=headers),
            ]
    finally:
        event.remove(app.state.engine, "before_cursor_execute", remember)
    assert [a.status_code for a in answers] == [404, 404, 404]
    assert all(a.json()["errors"]["resource"]["message"] == "Ticket not found." for a in answers)
    statements += [record.getMessage() for record in caplog.records]
    assert statements, "the token's lookup is logged: the log is watched"
    assert not [s for s in statements if "registrations" in s or "signing_keys" in s]


def test_a_ticket_has_one_spelling(people: Queue, engine: Engine) -> None:
    """The last base32 character of the signature holds 2 bits of it and 3 unused ones: the
    same ticket with those unused bits set is refused, as is any other change; lower case is
    the same ticket."""
    ticket = people.code(engine, people.fox)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    same_bits = alphabet[alphabet.index(ticket[-1]) ^ 1]  # a dropped bit flipped
    with write_session(engine) as session:
        keys = ticket_codes.public_keys(session, ticket_codes.PURPOSE)
    assert ticket_codes.is_genuine(ticket, keys)
    code = people.registration(engine, people.fox).ticket_code
    assert ticket_codes.is_genuine(code + ticket[len(code) :].lower(), keys)
    assert not ticket_codes.is_genuine(ticket[:-1] + same_bits, keys)
    assert not ticket_codes.is_genuine(forged(ticket), keys)


def test_a_scanner_tells_a_forged_code_from_a_real_one_offline_with_the_published_keys(
    people: Queue, engine: Engine, client: TestClient
) -> None:
    published = client.get("/api/v0/tickets/key")  # no token: public keys
    assert published.status_code == 200
    body = published.json()
    (jwk,) = body["keys"]
    assert (jwk["kty"], jwk["crv"], jwk["alg"], jwk["use"]) == ("OKP", "Ed25519", "EdDSA", "sig")
    x = base64.urlsafe_b64decode(jwk["x"] + "==")
    from_jwk = ed25519.Ed25519PublicKey.from_public_bytes(x)
    from_pem = load_pem_public_key(body["pem"][0]["publicKey"].encode())
    assert body["pem"][0]["kid"] == jwk["kid"]

    def verifies(ticket: str) -> bool:
        # The format the key route describes: the code, then base32 of its signature.
        code, text = ticket[:-103], ticket[-103:]
        signature = base64.b32decode(text + "=" * (-len(text) % 8))
        message = b"regdesk ticket " + code.encode()
        try:
            from_jwk.verify(signature, message)
        except InvalidSignature:
            return False
        assert isinstance(from_pem, ed25519.Ed25519PublicKey)
        from_pem.verify(signature, message)
        return True

    code = people.code(engine, people.fox)
    assert code.startswith(people.registration(engine, people.fox).ticket_code)
    assert set(code) <= set(ALPHANUMERIC)  # a QR code's alphanumeric mode: the densest
    assert verifies(code)
    assert not verifies(forged(code))


def test_codes_signed_by_a_retired_key_still_verify(
    people: Queue, engine: Engine, apps: Apps, client: TestClient, app: FastAPI
) -> None:
    headers = scanner(apps, scan_staff(engine))
    old_code = people.code(engine, people.fox)
    with write_session(engine) as session:
        retired = retire(session, ticket_codes.PURPOSE)
    newcomer = registered(engine, make_user(engine, "emu"), make_product(engine, "sponsor"))
    new_code = people.code(engine, newcomer)
    app.state.ticket_keys.fresh_for = 0  # this app reads the new key now, not in a minute
    keys = client.get("/api/v0/tickets/key").json()
    assert [(k["kid"] == retired, k["retired"]) for k in keys["pem"]] == [
        (True, True),
        (False, False),
    ]
    assert client.get(f"/api/v0/tickets/{old_code}", headers=headers).status_code == 200
    assert client.get(f"/api/v0/tickets/{new_code}", headers=headers).status_code == 200


def test_a_token_stops_scanning_once_its_user_loses_the_permission(
    people: Queue, engine: Engine, apps: Apps, client: TestClient
) -> None:
    """Sensitive scopes, for users holding the permission of the same name (decisions.md)."""
    code = people.code(engine, people.fox)
    sid = scan_staff(engine)
    headers = scanner(apps, sid)
    assert client.get(f"/api/v0/tickets/{code}", headers=headers).status_code == 200
    with engine.begin() as connection:
        connection.execute(delete(UserPermission).where(UserPermission.user_id == sid))
    answer = client.get(f"/api/v0/tickets/{code}", headers=headers)
    assert answer.status_code == 403
    assert answer.json()["errors"]["access"]["permissions"] == ["admin:ticket:read"]
    assert client.post(f"/api/v0/tickets/{code}/check-in", headers=headers).status_code == 403
    assert people.registration(engine, people.fox).checked_in_at is None


def test_the_ticket_routes_are_in_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert set(paths["/api/v0/tickets/{code}"]) == {"get"}
    assert set(paths["/api/v0/tickets/{code}/check-in"]) == {"post"}
    assert set(paths["/api/v0/tickets/key"]) == {"get"}
    conflict = paths["/api/v0/tickets/{code}/check-in"]["post"]["responses"]["409"]
    assert "checked in before" in conflict["description"]
