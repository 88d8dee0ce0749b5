"""A registration as its attendee sees it (registrations.md, Pages): the order in words, the
amount with its currency, and the ticket: its code as text, and as a QR code the code signed
(registrations/ticket_codes.py), which the desk's scanner reads.

The QR code is made on the server (web/qr.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup
from sqlalchemy.orm import Session

from regdesk.registrations import ticket_codes
from regdesk.registrations.models import OrderStatus
from regdesk.registrations.money import format_amount
from regdesk.registrations.service import Held
from regdesk.web.qr import qr_svg

STATUS_WORDS = {OrderStatus.UNPAID: "Unpaid", OrderStatus.PAID: "Paid"}


@dataclass(frozen=True)
class Ticket:
    """A live registration and its order, in the words the attendee's pages show."""

    order_id: str
    product: str
    amount: str  # with its currency: "$65.00"
    status: str  # "Unpaid" or "Paid"
    paid: bool
    badge_name: str | None
    code: str


def ticket_of(held: Held) -> Ticket:
    order, product = held.order, held.product
    return Ticket(
        order_id=order.number,
        product=product.display_name or product.name,
        amount=format_amount(order.amount, order.currency),
        status=STATUS_WORDS.get(OrderStatus(order.status), order.status.capitalize()),
        paid=order.status == OrderStatus.PAID,
        badge_name=held.registration.badge_name,
        code=held.registration.ticket_code,
    )


def ticket_qr_svg(db: Session, code: str) -> Markup:
    """The ticket of `code`, signed, as an inline SVG QR code."""
    return qr_svg(ticket_codes.ticket_of(db, code), "ticket-qr")
