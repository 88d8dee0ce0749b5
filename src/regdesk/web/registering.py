"""The attendee's registration page (registrations.md, Pages): /register.

Not registered: the public products on sale with their price and the places they have left,
a badge name and the event's registration options. Registered: the order (number, product,
amount, status) with the organizer's payment instructions while it is unpaid, a form to change
the badge name and answers until REGDESK_REGISTRATION_EDITS_UNTIL, and cancelling an unpaid
order. The rules live in registrations/ (service.register and edit_registration,
ordering.end_order); this module reads the forms and shows the pages.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.datastructures import FormData

from regdesk.config import Settings
from regdesk.db import utcnow
from regdesk.deps import SettingsDep
from regdesk.errors import Invalid
from regdesk.events.options import TEXT_ANSWER_MAX, answer_from_form
from regdesk.events.service import current_event
from regdesk.registrations.models import OrderStatus, RegistrationOption
from regdesk.registrations.money import format_amount
from regdesk.registrations.ordering import end_order, on_sale
from regdesk.registrations.service import (
    Held,
    answers_of,
    badge_name,
    edit_registration,
    live_registration,
    products_on_offer,
    register,
    registration_options,
)
from regdesk.web import csrf
from regdesk.web.option_fields import option_view
from regdesk.web.pages import render
from regdesk.web.tickets import ticket_of
from regdesk.web.visitor import PageDb, PageRefused, Visitor, VisitorDep, signed_in

router = APIRouter(include_in_schema=False)

PATH = "/register"
EDIT_PATH = "/register/edit"
CANCEL_PATH = "/register/cancel"
BADGE_NAME_MAX = 100
PAID_CANNOT_BE_CANCELLED = (
    "A paid order cannot be cancelled here: contact the organizers for a refund."
)


async def _form_data(request: Request) -> FormData:
    """The posted form, read before the route runs (the route itself is not async)."""
    return await request.form()


FormDep = Annotated[FormData, Depends(_form_data)]


def option_field(option_id: int) -> str:
    """The form's field of an option, which is also the key of its error."""
    return f"option-{option_id}"


@dataclass
class Sent:
    """A form as it was sent (or as stored), to show again: nothing typed is lost."""

    product: str = ""
    badge: str = ""
    answers: dict[int, list[str]] = field(default_factory=dict)  # option id -> values


# --- the pages --------------------------------------------------------------------------------


@router.get(PATH)
def registration_page(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    settings: SettingsDep,
    saved: Annotated[str | None, Query()] = None,
    cancelled: Annotated[str | None, Query()] = None,
) -> Response:
    signed = signed_in(request, visitor)
    held = live_registration(db, signed.user.id)
    if held is None:
        return _offer(request, db, signed, settings, Sent(), cancelled=cancelled is not None)
    return _order(request, db, signed, settings, held, _stored(db, held), saved=saved is not None)


@router.post(PATH)
def register_for_the_event(
    request: Request, db: PageDb, visitor: VisitorDep, settings: SettingsDep, posted: FormDep
) -> Response:
    signed = _genuine(request, visitor, posted)
    event = current_event(db)
    options = registration_options(db, event.id) if event else []
    sent = _read(posted, options)
    answers, errors = _answers(options, sent)
    product_id = _product_id(sent.product, errors)
    if errors or product_id is None:
        _check_badge_name(sent.badge, errors)
    else:
        try:
            # A refusal leaves nothing behind: not an order made before the registration was.
            with db.begin_nested():
                register(
                    db,
                    signed.actor,
                    user_id=signed.user.id,
                    product_id=product_id,
                    currency=settings.currency,
                    badge=sent.badge,
                    answers=answers,
                )
        except Invalid as invalid:
            errors = _on_fields(invalid.errors, options)
    if not errors:
        return RedirectResponse(PATH, status_code=303)
    held = live_registration(db, signed.user.id)
    if held is not None:  # registered meanwhile (another tab, the desk): show that order
        return _order(request, db, signed, settings, held, _stored(db, held), errors=errors)
    return _offer(request, db, signed, settings, sent, errors=errors)


@router.post(EDIT_PATH)
def change_registration(
    request: Request, db: PageDb, visitor: VisitorDep, settings: SettingsDep, posted: FormDep
) -> Response:
    signed = _genuine(request, visitor, posted)
    held = live_registration(db, signed.user.id)
    if held is None:
        return RedirectResponse(PATH, status_code=303)
    options = registration_options(db, held.registration.event_id)
    sent = _read(posted, options)
    answers, errors = _answers(options, sent)
    if errors:
        _check_badge_name(sent.badge, errors)
    else:
        try:
            with db.begin_nested():
                edit_registration(
                    db,
                    signed.actor,
                    held.registration,
                    badge=sent.badge,
                    answers={option.name: answers.get(option.name) for option in options},
                    edits_until=settings.registration_edits_until,
                )
        except Invalid as invalid:
            errors = _on_fields(invalid.errors, options)
    if errors:
        return _order(request, db, signed, settings, held, sent, errors=errors)
    return RedirectResponse(f"{PATH}?saved", status_code=303)


@router.get(CANCEL_PATH)
def cancel_page(request: Request, db: PageDb, visitor: VisitorDep) -> Response:
    """The confirmation step: what cancelling gives up, and the button that does it."""
    signed = signed_in(request, visitor)
    held = live_registration(db, signed.user.id)
    if held is None or held.order.status != OrderStatus.UNPAID:
        return RedirectResponse(PATH, status_code=303)
    return render(request, "register_cancel.html", {"visitor": signed, "ticket": ticket_of(held)})


@router.post(CANCEL_PATH)
def cancel_order(
    request: Request, db: PageDb, visitor: VisitorDep, settings: SettingsDep, posted: FormDep
) -> Response:
    signed = _genuine(request, visitor, posted)
    held = live_registration(db, signed.user.id)
    # Only the order the visitor saw: a form left open in another tab cancels nothing newer.
    if held is None or held.order.number != _text(posted, "order"):
        return RedirectResponse(PATH, status_code=303)
    db.refresh(held.order, with_for_update=True)  # two cancels at once: one ends the order
    if held.order.status == OrderStatus.PAID:
        errors = {"registration": PAID_CANNOT_BE_CANCELLED}
        return _order(request, db, signed, settings, held, _stored(db, held), errors=errors)
    if held.order.status != OrderStatus.UNPAID:  # ended meanwhile: the page says how it stands
        return RedirectResponse(PATH, status_code=303)
    end_order(db, signed.actor, held.order, OrderStatus.CANCELLED)
    return RedirectResponse(f"{PATH}?cancelled", status_code=303)


def _genuine(request: Request, visitor: Visitor | None, posted: FormData) -> Visitor:
    """The signed-in visitor of a form carrying their session's CSRF token; else refused."""
    signed = signed_in(request, visitor)
    token = posted.get(csrf.FIELD_NAME)
    if not csrf.session_form_is_genuine(
        request, signed.session_id, token if isinstance(token, str) else None
    ):
        raise PageRefused.forbidden(request, signed)
    return signed


# --- reading the forms ------------------------------------------------------------------------


def _text(posted: FormData, name: str) -> str:
    value = posted.get(name)
    return value if isinstance(value, str) else ""


def _read(posted: FormData, options: list[RegistrationOption]) -> Sent:
    answers = {
        option.id: [v for v in posted.getlist(option_field(option.id)) if isinstance(v, str)]
        for option in options
    }
    return Sent(_text(posted, "product"), _text(posted, "badgeName"), answers)


def _product_id(sent: str, errors: dict[str, str]) -> int | None:
    if sent.isascii() and sent.isdigit() and len(sent) < 10:
        return int(sent)
    errors["product"] = "Choose a product." if not sent else "No such product."
    return None


def _check_badge_name(sent: str, errors: dict[str, str]) -> None:
    """The badge name's own error, shown beside the others when the form goes no further."""
    try:
        badge_name(sent)
    except ValueError as exc:
        errors["badgeName"] = f"The badge name {exc}."


def _answers(
    options: list[RegistrationOption], sent: Sent
) -> tuple[dict[str, Any], dict[str, str]]:
    """The answers as the service takes them (option name -> value; unanswered left out), and
    the errors of those that do not fit their option (by form field)."""
    answers: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for option in options:
        try:
            value = answer_from_form(option.type, option.choices, sent.answers.get(option.id, []))
        except ValueError as exc:
            errors[option_field(option.id)] = str(exc)
            continue
        if value is not None:
            answers[option.name] = value
    return answers, errors


def _on_fields(errors: dict[str, str], options: list[RegistrationOption]) -> dict[str, str]:
    """The service's errors under the form's field names (`options.<name>` -> `option-<id>`;
    `user` -> the registration as a whole)."""
    fields = {f"options.{option.name}": option_field(option.id) for option in options}
    shown: dict[str, str] = {}
    for key, message in errors.items():
        if key == "user":
            shown["registration"] = "You are already registered for this event."
        else:
            shown[fields.get(key, key)] = message
    return shown


# --- showing the pages ------------------------------------------------------------------------


def _stored(db: Session, held: Held) -> Sent:
    """The registration's badge name and answers, as the form shows them."""
    answers = {
        option_id: [str(v) for v in value] if isinstance(value, list) else [str(value)]
        for option_id, value in answers_of(db, held.registration.id).items()
    }
    return Sent(badge=held.registration.badge_name or "", answers=answers)


def _offer(
    request: Request,
    db: Session,
    visitor: Visitor,
    settings: Settings,
    sent: Sent,
    *,
    errors: dict[str, str] | None = None,
    cancelled: bool = False,
) -> HTMLResponse:
    """The form of one not registered: the public products on sale, each with its price and
    what is left; a badge name; the event's registration options."""
    event = current_event(db)
    now = utcnow()
    products = [
        {
            "id": product.id,
            "label": product.display_name or product.name,
            "description": product.description,
            "price": format_amount(product.price, settings.currency),
            "left": left,
            "sold_out": left == 0,
        }
        for product, left in (products_on_offer(db, event.id) if event else [])
        if product.public and on_sale(product, now)
    ]
    options = registration_options(db, event.id) if event else []
    return render(
        request,
        "register.html",
        {
            "visitor": visitor,
            "user": visitor.user,
            "event": event,
            "products": products,
            "buyable": any(not product["sold_out"] for product in products),
            "sent": sent,
            "options": [
                option_view(o, option_field(o.id), sent.answers.get(o.id, [])) for o in options
            ],
            "errors": errors or {},
            "cancelled": cancelled,
            "ticket": None,
            "badge_max": BADGE_NAME_MAX,
            "text_max": TEXT_ANSWER_MAX,
        },
        status_code=400 if errors else 200,
    )


def _order(
    request: Request,
    db: Session,
    visitor: Visitor,
    settings: Settings,
    held: Held,
    sent: Sent,
    *,
    errors: dict[str, str] | None = None,
    saved: bool = False,
) -> HTMLResponse:
    """The page of one registered: their order, how to pay it, their badge name and answers
    (a form while they may change them), and cancelling an unpaid order."""
    until = settings.registration_edits_until
    options = registration_options(db, held.registration.event_id)
    ticket = ticket_of(held)
    return render(
        request,
        "register.html",
        {
            "visitor": visitor,
            "user": visitor.user,
            "event": current_event(db),
            "ticket": ticket,
            "instructions": "" if ticket.paid else settings.payment_instructions.strip(),
            "editable": until is None or utcnow() < until,
            "edits_until": _moment(until) if until is not None else None,
            "sent": sent,
            "options": [
                option_view(o, option_field(o.id), sent.answers.get(o.id, [])) for o in options
            ],
            "errors": errors or {},
            "saved": saved,
            "badge_max": BADGE_NAME_MAX,
            "text_max": TEXT_ANSWER_MAX,
            "refund_note": PAID_CANNOT_BE_CANCELLED,
        },
        status_code=400 if errors else 200,
    )


def _moment(moment: dt.datetime) -> str:
    """`2027-06-01T00:00:00Z` as `1 June 2027 at 00:00 UTC`."""
    utc = moment.astimezone(dt.UTC)
    return f"{utc.day} {utc:%B %Y} at {utc:%H:%M} UTC"
