"""The registration desk (registrations.md, Pages): one search box, a person's card with their
status in large type, "Check in", "Take payment" for an unpaid order, and "Print badge" once
paid (desk/badge_pages.py). A search that finds nobody offers a sale (desk/sale_pages.py).

A USB scanner types a ticket code and presses Enter: that submits the search form (GET), and a
code or an order id opens that person's card at once. After every action the search box has the
focus again (`autofocus`), for the next person in the queue. No script: a page and its forms.
The writes are the services': check_in (regdesk.desk.check_in) and the admin orders' mark_paid
(regdesk.registrations.ordering), each with its audit event.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.pages import FormDep, path_number, typed
from regdesk.db import table_of
from regdesk.desk.access import DeskDep, DeskStaffer
from regdesk.desk.check_in import (
    AlreadyCheckedIn,
    CheckIn,
    NotCheckable,
    check_in,
    earlier_check_in,
)
from regdesk.desk.frame import desk_page
from regdesk.desk.search import TYPED_MAX, find
from regdesk.errors import Invalid
from regdesk.fields import max_length
from regdesk.registrations.lists import RegistrationDetail, registration_detail
from regdesk.registrations.models import Order, PaymentMethod
from regdesk.registrations.ordering import mark_paid
from regdesk.registrations.ticket_codes import TicketKeys
from regdesk.web.visitor import PageDb, PageRefused

router = APIRouter(prefix="/desk", include_in_schema=False)

REFERENCE_MAX = max_length(table_of(Order).c.payment_reference)
NOTICES = {
    "checked-in": "Checked in.",
    "paid": "The payment was taken: the order is paid.",
    "sold": "Sold: the order is paid at the desk.",
    "sold-checked-in": "Sold, paid at the desk, and checked in.",
    "printed": "The badge is marked printed.",
}


# What desk/desk.html reads, when a page has none of it.
PAGE_DEFAULTS: dict[str, Any] = {
    "q": "",
    "missing": False,
    "detail": None,
    "found": None,
    "searched": False,
    "notice": None,
    "refused": None,
    "not_checkable": False,
    "errors": {},
    "reference": "",
}


def _desk_page(
    request: Request, staffer: DeskStaffer, *, status_code: int = 200, **context: Any
) -> HTMLResponse:
    return desk_page(
        request,
        staffer,
        "desk/desk.html",
        "search",
        status_code=status_code,
        typed_max=TYPED_MAX,
        reference_max=REFERENCE_MAX,
        **{**PAGE_DEFAULTS, **context},
    )


def _keys(request: Request) -> TicketKeys:
    keys: TicketKeys = request.app.state.ticket_keys
    return keys


@router.get("")
def desk(request: Request, staffer: DeskDep, db: PageDb, q: str = "") -> HTMLResponse:
    """The search box; what it found: one person's card, or the matches, or nothing."""
    found = find(db, q, _keys(request))
    if found.card is not None:
        return _card_page(request, staffer, db, _detail_of(db, found.card), q=q)
    return _desk_page(
        request,
        staffer,
        q=q.strip()[:TYPED_MAX],
        searched=bool(q.strip()),
        found=found,
    )


@router.get("/{registration_id}")
def card(
    request: Request, registration_id: str, staffer: DeskDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    detail = _detail(request, staffer, db, registration_id)
    return _card_page(request, staffer, db, detail, notice=NOTICES.get(done))


@router.post("/{registration_id}/check-in")
def check_in_now(
    request: Request, registration_id: str, staffer: DeskDep, db: PageDb, form: FormDep
) -> Response:
    """Checks the person in; a second time says when and by whom it was done. An
    administrator may check in an unpaid or cancelled registration (`override`)."""
    detail = _detail(request, staffer, db, registration_id)
    override = typed(form, "override") == "yes" and staffer.is_admin
    try:
        check_in(db, staffer.actor, detail.registration, override=override)
    except AlreadyCheckedIn as refused:
        db.refresh(detail.registration)  # as another desk left it a moment ago
        return _card_page(request, staffer, db, detail, status_code=409, refused=refused.earlier)
    except NotCheckable:
        db.refresh(detail.order)
        return _card_page(request, staffer, db, detail, status_code=409, not_checkable=True)
    return _see_card(detail, "checked-in")


@router.post("/{registration_id}/pay")
def take_payment(
    request: Request, registration_id: str, staffer: DeskDep, db: PageDb, form: FormDep
) -> Response:
    """Marks the unpaid order paid at the desk, with the payment's reference if any."""
    detail = _detail(request, staffer, db, registration_id)
    reference = typed(form, "reference")
    try:
        if len(reference) > REFERENCE_MAX:
            raise Invalid({"reference": f"At most {REFERENCE_MAX} characters."})
        mark_paid(
            db, staffer.actor, detail.order, method=PaymentMethod.DESK, reference=reference or None
        )
    except Invalid as refused:
        return _card_page(
            request,
            staffer,
            db,
            detail,
            status_code=400,
            errors=refused.errors,
            reference=reference,
        )
    return _see_card(detail, "paid")


# --- the card -------------------------------------------------------------------------------


def _card_page(
    request: Request,
    staffer: DeskStaffer,
    db: Session,
    detail: RegistrationDetail,
    *,
    status_code: int = 200,
    q: str = "",
    notice: str | None = None,
    refused: CheckIn | None = None,
    not_checkable: bool = False,
    errors: dict[str, str] | None = None,
    reference: str = "",
) -> HTMLResponse:
    return _desk_page(
        request,
        staffer,
        status_code=status_code,
        q=q.strip()[:TYPED_MAX],
        detail=detail,
        standing=_standing(detail),
        checked_in=earlier_check_in(db, detail.registration),
        notice=notice,
        refused=refused,
        not_checkable=not_checkable,
        errors=errors or {},
        reference=reference,
    )


def _standing(detail: RegistrationDetail) -> str:
    """What the desk says first, in large type: checked-in, paid, unpaid, cancelled or
    refunded."""
    if detail.registration.checked_in_at is not None:
        return "checked-in"
    return str(detail.order.status)


def _detail(
    request: Request, staffer: DeskStaffer, db: Session, registration_id: str
) -> RegistrationDetail:
    detail = registration_detail(db, path_number(registration_id))
    if detail is None:
        raise PageRefused(_desk_page(request, staffer, status_code=404, missing=True))
    return detail


def _detail_of(db: Session, registration_id: int) -> RegistrationDetail:
    detail = registration_detail(db, registration_id)
    assert detail is not None  # found in the current event by this request's search
    return detail


def _see_card(detail: RegistrationDetail, done: str) -> RedirectResponse:
    return RedirectResponse(f"/desk/{detail.registration.id}?done={done}", status_code=303)
