"""Ticket scanning for apps (registrations.md, Pages): look a ticket code up
(`admin:ticket:read`), check it in (`admin:ticket:scan`), both on behalf of desk staff; and the
public keys that let an app tell a forged code from a real one offline (no token needed).

A code whose signature does not verify is a 404 before the registrations are read. A code of a
cancelled or refunded registration is a 404 too, as the API hides those (registrations.md,
Words): same envelope, same message, so a scanner learns nothing more from the server than the
signature already told it. A second check-in is a 409 in the API's envelope (decisions.md,
Errors), category `conflict`, with when and by whom; so is an unpaid order (`status`).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from regdesk.audit.service import Actor
from regdesk.deps import Reads, WriteSession
from regdesk.desk.check_in import AlreadyCheckedIn, NotCheckable, check_in
from regdesk.desk.schemas import (
    CODE_FORMAT,
    Ticket,
    TicketConflict,
    TicketKeys,
    already_checked_in,
    not_checkable,
)
from regdesk.desk.ticket_reads import live_registration, record_by_code
from regdesk.errors import Conflict, NotFound, api_responses
from regdesk.formats import format_timestamp
from regdesk.oauth.guard import TicketRead, TicketScan
from regdesk.registrations import ticket_codes
from regdesk.registrations.records import registration_documents

router = APIRouter(prefix="/api/v0/tickets", tags=["Tickets"])

NOT_FOUND = "Ticket not found."
CONFLICT_RESPONSE: dict[int | str, dict[str, Any]] = {
    409: {"description": TicketConflict.__doc__, "model": TicketConflict},
}


def _keys(request: Request) -> ticket_codes.TicketKeys:
    keys: ticket_codes.TicketKeys = request.app.state.ticket_keys
    return keys


@router.get("/key", summary="The keys ticket codes are signed with", response_model=TicketKeys)
async def ticket_keys(request: Request, reads: Reads) -> Any:
    """Every public key a genuine ticket code may be signed with (retired ones too), as a JWKS
    and as PEM, and the codes' format: a scanning app verifies a code offline with them."""
    keys = await _keys(request).read_by(reads)
    return {
        "keys": [key.jwk() for key in keys],
        "pem": [{"kid": key.kid, "publicKey": key.pem(), "retired": key.retired} for key in keys],
        "codeFormat": CODE_FORMAT,
    }


@router.get(
    "/{code}",
    summary="Look up a ticket",
    response_model=Ticket,
    responses=api_responses(401, 403, 404),
)
async def ticket(code: str, request: Request, token: TicketRead, reads: Reads) -> Any:
    """The registration record of the ticket's holder, as the registration API renders it,
    with `checkedInAt`; 404 for a code this instance did not sign, or whose registration is
    cancelled or refunded."""
    genuine = await _keys(request).verify_by(code, reads)
    if genuine is None:
        raise NotFound(NOT_FOUND)
    record = await record_by_code(reads, genuine)
    if record is None:
        raise NotFound(NOT_FOUND)
    return JSONResponse(record)


@router.post(
    "/{code}/check-in",
    summary="Check a ticket in",
    response_model=Ticket,
    responses={**api_responses(401, 403, 404), **CONFLICT_RESPONSE},
)
def check_in_ticket(code: str, request: Request, token: TicketScan, db: WriteSession) -> Any:
    """Checks the ticket's holder in, on behalf of the staff member who granted the token: 200
    with the record; 409 when it was checked in before (when, by whom) or its order is unpaid
    (take the payment at the desk first)."""
    genuine = _keys(request).verify(code, ticket_codes.keys_read_in(db))
    registration = live_registration(db, genuine) if genuine is not None else None
    if registration is None:
        raise NotFound(NOT_FOUND)
    actor = Actor(label=f"app:{token.application_id}", user_id=token.user_id)
    try:
        done = check_in(db, actor, registration)
    except AlreadyCheckedIn as refused:
        raise Conflict("Already checked in.", **already_checked_in(refused.earlier)) from None
    except NotCheckable as refused:
        raise Conflict(
            "The order is unpaid: take the payment at the desk first.", **not_checkable(refused)
        ) from None
    record = json.loads(registration_documents(db, [registration.id])[registration.id])
    return JSONResponse({**record, "checkedInAt": format_timestamp(done.at)})
