"""The current event's orders in the admin area (registrations.md, Pages), for administrators:
found by order number, name or e-mail; one order with its person, registration and history;
and what staff do to it: mark it paid (how, with a reference), cancel it while unpaid, refund
it once paid, change its product while unpaid.

The writes are regdesk.registrations.ordering's and service's, the same every way of
registering uses, each with its audit event (target `order`, the order number).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import FormDep, admin_page, clean, missing, see_other, typed
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import search_events
from regdesk.config import Settings
from regdesk.db import table_of
from regdesk.errors import Invalid
from regdesk.fields import max_length
from regdesk.registrations.lists import OrderDetail, order_detail, search_orders
from regdesk.registrations.models import Order, OrderStatus, PaymentMethod
from regdesk.registrations.money import format_amount
from regdesk.registrations.ordering import end_order, mark_paid
from regdesk.registrations.products import product_rows
from regdesk.registrations.service import change_product
from regdesk.schemas import record_id
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/orders")

SECTION = "orders"
PER_PAGE = 50
SEARCH_MAX = 200
HISTORY = 50
STATUSES = [status.value for status in OrderStatus]
METHODS = [
    (PaymentMethod.DESK.value, "At the desk"),
    (PaymentMethod.TRANSFER.value, "Bank transfer"),
    (PaymentMethod.EXTERNAL.value, "Elsewhere (another shop)"),
    (PaymentMethod.COMP.value, "Complimentary (no payment)"),
]
REFERENCE_MAX = max_length(table_of(Order).c.payment_reference)
NOTICES = {
    "paid": "The order was marked paid.",
    "cancelled": "The order was cancelled: its place is free, and the person may register again.",
    "refunded": "The order was marked refunded: its place is free, and the person may register "
    "again. Pay the money back where it was paid.",
    "product": "The order's product was changed, and its amount with it.",
    "unchanged": "Nothing changed: the order already had this product.",
}


def _money(request: Request) -> Any:
    settings: Settings = request.app.state.settings
    return lambda amount, currency=settings.currency: format_amount(amount, currency)


def _page_number(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and 0 < len(text) < 7 else 1


# --- finding orders -------------------------------------------------------------------------


@router.get("")
def orders_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    q: str = "",
    status: str = "",
    page: str = "1",
) -> HTMLResponse:
    """The current event's orders, newest first: one box takes an order number, a name or an
    e-mail address."""
    text = clean(q)[:SEARCH_MAX]
    chosen = status if status in STATUSES else ""
    number = _page_number(page)
    found = search_orders(db, text, chosen or None, offset=(number - 1) * PER_PAGE, limit=PER_PAGE)
    pages = max(1, -(-found.total // PER_PAGE))
    filters = {key: value for key, value in (("q", text), ("status", chosen)) if value}

    def link(to: int) -> str:
        return "/admin/orders?" + urlencode({**filters, **({"page": to} if to > 1 else {})})

    return admin_page(
        request,
        "admin/orders.html",
        staffer,
        SECTION,
        lines=found.lines,
        total=found.total,
        q=text,
        status=chosen,
        statuses=STATUSES,
        filtered=bool(filters),
        page=number,
        pages=pages,
        previous=link(number - 1).rstrip("?") if number > 1 else None,
        next=link(number + 1) if number < pages else None,
        money=_money(request),
    )


# --- one order ------------------------------------------------------------------------------


def _order(request: Request, staffer: Staffer, db: Session, number: str) -> OrderDetail:
    detail = None
    if number.isascii() and number.isdigit() and len(number) <= 20:
        detail = order_detail(db, number)
    if detail is None:
        raise missing(request, staffer, SECTION, "order", number)
    return detail


def history(db: Session, detail: OrderDetail) -> list[AuditEvent]:
    """The order's audit events and its registration's, newest first."""
    events = [
        *search_events(
            db, target_type="order", target_id=detail.order.number, limit=HISTORY
        ).events,
        *search_events(
            db,
            target_type="registration",
            target_id=str(detail.registration.id),
            limit=HISTORY,
        ).events,
    ]
    return sorted(events, key=lambda event: event.id, reverse=True)[:HISTORY]


def _order_page(
    request: Request,
    staffer: Staffer,
    db: Session,
    detail: OrderDetail,
    *,
    notice: str | None = None,
    errors: dict[str, str] | None = None,
    typed_reference: str = "",
    method: str = PaymentMethod.DESK.value,
) -> HTMLResponse:
    return admin_page(
        request,
        "admin/order.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        detail=detail,
        order=detail.order,
        user=detail.user,
        products=product_rows(db, detail.order.event_id),
        methods=METHODS,
        method=method,
        reference=typed_reference,
        reference_max=REFERENCE_MAX,
        events=history(db, detail),
        money=_money(request),
        notice=notice,
        errors=errors or {},
    )


@router.get("/{number}")
def order_page(
    request: Request, number: str, staffer: AdminDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    detail = _order(request, staffer, db, number)
    return _order_page(request, staffer, db, detail, notice=NOTICES.get(done))


@router.post("/{number}/pay")
def pay(request: Request, number: str, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    """Marks the unpaid order paid: how (the desk, a transfer, a shop elsewhere, or
    complimentary), with the payment's reference if there is one."""
    detail = _order(request, staffer, db, number)
    method, reference = typed(form, "method"), typed(form, "reference")
    errors = {}
    if method not in {value for value, _ in METHODS}:
        errors["method"] = "Choose how the order was paid."
    if len(reference) > REFERENCE_MAX:
        errors["reference"] = f"The reference may be at most {REFERENCE_MAX} characters long."
    try:
        if errors:
            raise Invalid(errors)
        mark_paid(
            db,
            staffer.actor,
            detail.order,
            method=PaymentMethod(method),
            reference=reference or None,
        )
    except Invalid as refused:
        return _order_page(
            request,
            staffer,
            db,
            detail,
            errors=refused.errors,
            typed_reference=reference,
            method=method,
        )
    return see_other(f"/admin/orders/{detail.order.number}", "paid")


@router.post("/{number}/cancel")
def cancel(request: Request, number: str, staffer: AdminDep, db: PageDb) -> Response:
    return _end(request, number, staffer, db, OrderStatus.CANCELLED)


@router.post("/{number}/refund")
def refund(request: Request, number: str, staffer: AdminDep, db: PageDb) -> Response:
    return _end(request, number, staffer, db, OrderStatus.REFUNDED)


def _end(
    request: Request, number: str, staffer: Staffer, db: Session, status: OrderStatus
) -> Response:
    detail = _order(request, staffer, db, number)
    try:
        end_order(db, staffer.actor, detail.order, status)
    except Invalid as refused:
        return _order_page(request, staffer, db, detail, errors=refused.errors)
    return see_other(f"/admin/orders/{detail.order.number}", status.value)


@router.post("/{number}/product")
def move(request: Request, number: str, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    """Moves the unpaid order to another product, at that product's price."""
    detail = _order(request, staffer, db, number)
    before = detail.order.product_id
    try:
        change_product(db, staffer.actor, detail.order, record_id(typed(form, "product")) or 0)
    except Invalid as refused:
        return _order_page(request, staffer, db, detail, errors=refused.errors)
    done = "unchanged" if detail.order.product_id == before else "product"
    return see_other(f"/admin/orders/{detail.order.number}", done)
