"""The on-site sale (registrations.md, Pages; issue 17): one page, one submit.

The desk types who it is (the search box's words come along from a search that found no
registration): the people that matches are listed to choose from, beside "a new person" with
the fields an account needs. Then the product (staff-only ones too; sold-out ones said so),
the badge name, the payment's reference, and "check in now" (ticked: the buyer is standing
at the desk). One submit sells, takes the payment at the desk and checks in
(regdesk.desk.sale.sell, one savepoint), and lands on the person's card, where "Print badge"
waits. A refusal (a taken username, a sold-out product) shows the form again with what was
typed and the reason at its field; nothing was written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from regdesk.admin.pages import FormDep, typed
from regdesk.db import table_of
from regdesk.desk.access import DeskDep, DeskStaffer
from regdesk.desk.frame import currency, desk_page
from regdesk.desk.sale import NewPerson, Sale, candidates, sell
from regdesk.errors import Invalid
from regdesk.events.service import current_event
from regdesk.fields import max_length
from regdesk.registrations.models import Order
from regdesk.registrations.products import product_rows
from regdesk.schemas import record_id
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/desk", include_in_schema=False)

PATH = "/desk/sale"
TYPED_MAX = 200
REFERENCE_MAX = max_length(table_of(Order).c.payment_reference)
NEW = "new"
# The services' field names (the API's) -> the form's.
FIELDS = {
    "firstName": "first_name",
    "lastName": "last_name",
    "badgeName": "badge_name",
    "user": "person",
    "status": "product",
}
NEW_PERSON_FIELDS = ("username", "email", "first_name", "last_name")
LABELS = {
    "person": "The person",
    "username": "The username",
    "email": "The e-mail address",
    "first_name": "The first name",
    "last_name": "The last name",
    "product": "The product",
    "badge_name": "The badge name",
    "reference": "The reference",
}


@dataclass
class Sent:
    """The form as it was typed, to show again: nothing typed is lost."""

    q: str = ""
    person: str = ""
    username: str = ""
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    product: str = ""
    badge_name: str = ""
    reference: str = ""
    check_in: bool = True
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, form: FormData) -> Sent:
        def text(name: str) -> str:
            return typed(form, name)[:TYPED_MAX]

        return cls(
            q=text("q"),
            person=text("person"),
            username=text("username"),
            email=text("email"),
            first_name=text("first_name"),
            last_name=text("last_name"),
            product=text("product"),
            badge_name=text("badge_name"),
            reference=text("reference"),
            check_in=typed(form, "check_in") == "yes",
        )

    @classmethod
    def started(cls, q: str) -> Sent:
        """A new sale, its person's fields guessed from what the desk searched for: an
        e-mail address, or a first and last name."""
        text = " ".join(q.replace("\x00", "").split())[:TYPED_MAX]
        words = text.split()
        return cls(
            q=text,
            email=text if "@" in text and len(words) == 1 else "",
            first_name=words[0] if len(words) == 2 and "@" not in text else "",
            last_name=words[1] if len(words) == 2 and "@" not in text else "",
        )

    def sale(self) -> Sale:
        """What to sell; Invalid names what the form itself lacks, before any service runs."""
        errors = {}
        product_id = record_id(self.product) if self.product else None
        if product_id is None:
            errors["product"] = "Choose a product."
        user_id = record_id(self.person) if self.person != NEW else None
        if self.person != NEW and user_id is None:
            errors["person"] = "Choose the person, or a new one."
        if len(self.reference) > REFERENCE_MAX:
            errors["reference"] = f"At most {REFERENCE_MAX} characters."
        if errors:
            raise Invalid(errors)
        assert product_id is not None
        new = (
            NewPerson(self.username, self.email, self.first_name, self.last_name)
            if self.person == NEW
            else None
        )
        return Sale(
            product_id=product_id,
            user_id=user_id,
            new_person=new,
            badge_name=self.badge_name,
            reference=self.reference or None,
            check_in_now=self.check_in,
        )


def _sale_page(
    request: Request, staffer: DeskStaffer, db: PageDb, sent: Sent, *, status_code: int = 200
) -> HTMLResponse:
    found, more = candidates(db, sent.q)
    event = current_event(db)
    if not found and not sent.person:
        sent.person = NEW  # nobody to choose from
    return desk_page(
        request,
        staffer,
        "desk/sale.html",
        "sale",
        status_code=status_code,
        sent=sent,
        errors=sent.errors,
        people=found,
        more_people=more,
        products=product_rows(db, event.id) if event else [],
        currency=currency(request),
        typed_max=TYPED_MAX,
        reference_max=REFERENCE_MAX,
    )


@router.get("/sale")
def sale_page(request: Request, staffer: DeskDep, db: PageDb, q: str = "") -> HTMLResponse:
    return _sale_page(request, staffer, db, Sent.started(q))


@router.post("/sale")
def sell_at_the_desk(request: Request, staffer: DeskDep, db: PageDb, form: FormDep) -> Response:
    sent = Sent.read(form)
    try:
        sold = sell(db, staffer.actor, sent.sale(), currency=currency(request))
    except Invalid as refused:
        sent.errors = _on_fields(refused.errors)
        return _sale_page(request, staffer, db, sent, status_code=400)
    done = "sold-checked-in" if sold.checked_in else "sold"
    return RedirectResponse(f"/desk/{sold.registration_id}?done={done}", status_code=303)


def _on_fields(errors: dict[str, str]) -> dict[str, str]:
    """The services' errors, each at the form's field it is about, as a sentence that names
    the field (the error summary lists them apart from their fields)."""
    shown: dict[str, str] = {}
    for name, message in errors.items():
        key = FIELDS.get(name, name)
        key = key if key in LABELS else "person"
        said = message if message[:1].isupper() else f"{LABELS[key]} {message}"
        shown.setdefault(key, said if said.endswith(".") else f"{said}.")
    return shown
