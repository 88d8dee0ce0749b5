"""The ticket API's shapes (registrations.md, Pages: ticket scanning): the ticket's record,
the 409 of a second check-in, and the public keys a scanning app verifies codes with."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from regdesk.desk.check_in import CheckIn, NotCheckable
from regdesk.formats import format_timestamp
from regdesk.registrations.schemas import Registration
from regdesk.registrations.ticket_codes import CODE_MAX, SIGNATURE_LENGTH
from regdesk.schemas import Record

CODE_FORMAT = (
    f"The registration's code (up to {CODE_MAX} letters and digits) followed by its Ed25519"
    f" signature by one of these keys: the last {SIGNATURE_LENGTH} characters, RFC 4648 base32"
    " (A-Z, 2-7) of the 64 bytes, no padding, over the bytes of 'regdesk ticket ' and the code."
    " The signature may be typed in lower case; the code, all in the other case (Caps Lock)."
)


class Ticket(Registration):
    checkedInAt: str | None = Field(
        examples=["2026-07-04T18:30:00.000Z"], description="When it was checked in; null if not."
    )


class _CheckedInBy(Record):
    id: str = Field(examples=["5"])
    name: str = Field(examples=["Bea Foxworth (badger)"])


class _Conflict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str
    checkedInAt: str | None = Field(
        default=None, description="Already checked in: when (absent when the order is unpaid)."
    )
    checkedInBy: _CheckedInBy | None = Field(
        default=None, description="Already checked in: by whom (null: a user since deleted)."
    )
    status: Literal["unpaid", "cancelled", "refunded"] | None = Field(
        default=None, description="Not checked in because of the order's status."
    )


class _ConflictErrors(BaseModel):
    conflict: _Conflict


class TicketConflict(BaseModel):
    """409: checked in before (when, by whom), or the order is unpaid."""

    errors: _ConflictErrors


class TicketKeyPem(Record):
    kid: str
    publicKey: str = Field(description="PEM, SubjectPublicKeyInfo.")
    retired: bool = Field(description="Signs no new codes; the codes it signed stay valid.")


class TicketKeys(Record):
    keys: list[dict[str, str]] = Field(
        description="A JWKS (RFC 7517; Ed25519 as in RFC 8037): every key a genuine ticket may"
        " be signed with, retired ones too."
    )
    pem: list[TicketKeyPem]
    codeFormat: str = Field(examples=[CODE_FORMAT])


def already_checked_in(earlier: CheckIn) -> dict[str, Any]:
    """The members of the 409 `conflict` of a second check-in."""
    return {
        "checkedInAt": format_timestamp(earlier.at),
        "checkedInBy": None
        if earlier.by_user_id is None
        else {"id": str(earlier.by_user_id), "name": earlier.by_name or ""},
    }


def not_checkable(refused: NotCheckable) -> dict[str, Any]:
    return {"status": refused.status}
