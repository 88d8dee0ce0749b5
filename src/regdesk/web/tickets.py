"""A registration as its attendee sees it (registrations.md, Pages): the order in words, the
amount with its currency, and the ticket code as a QR code.

The QR code is an SVG made here, on the server, and inlined in the page: the pages run no
script, and their Content-Security-Policy (web/headers.py) loads images from this origin
only, so neither a script nor a `data:` image could draw it.
"""

from __future__ import annotations

from dataclasses import dataclass

import segno
from markupsafe import Markup

from regdesk.registrations.models import OrderStatus
from regdesk.registrations.money import format_amount
from regdesk.registrations.service import Held

QR_ERROR_LEVEL = "m"  # 15% of the code may be smudged or creased and it still reads
QR_SCALE = 6  # pixels per module: 29 modules and the quiet zone make a code of about 200 px
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


def ticket_qr_svg(code: str) -> Markup:
    """The ticket code as an inline SVG QR code, dark on a white quiet zone (a scanner needs
    the contrast whatever the page around it looks like)."""
    qr = segno.make(code, error=QR_ERROR_LEVEL, micro=False)
    svg = qr.svg_inline(scale=QR_SCALE, dark="#000000", light="#ffffff", svgclass="ticket-qr")
    return Markup(svg)  # noqa: S704 (segno's own markup, of a code of letters and digits)
