"""A person's registration, whoever handles it (the attendee's page, the admin area, the desk,
an import): registering with a badge name and answers, editing them, changing an unpaid order's
product, setting flags. Orders and places are `ordering`'s; every change is an audit event.
"""

from __future__ import annotations

import datetime as dt
import math
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import table_of, utcnow
from regdesk.errors import Invalid
from regdesk.events.models import OptionType, option_value_error
from regdesk.events.options import (
    CHOICE_MAX_LENGTH,
    MULTI_ANSWER_MAX,
    NUMBER_MAX,
    TEXT_ANSWER_MAX,
)
from regdesk.events.service import current_event, current_event_for_writing
from regdesk.fields import text
from regdesk.registrations.models import (
    LIVE_STATUSES,
    Order,
    OrderStatus,
    Product,
    Registration,
    RegistrationFlag,
    RegistrationFlagLink,
    RegistrationOption,
    RegistrationOptionValue,
)
from regdesk.registrations.ordering import Placed, place_order, places_left

_REGISTRATIONS = table_of(Registration)
_badge_name = text(_REGISTRATIONS.c.badge_name)
# Unicode's Bidi_Control characters: they reorder the text around them, so that a badge prints
# other than it reads.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


@dataclass(frozen=True)
class Held:
    """A user's live registration with its order and product."""

    registration: Registration
    order: Order
    product: Product


def badge_name(value: Any) -> str | None:
    """A badge name as stored: trimmed, each run of whitespace (tabs, line breaks) one space,
    then at most 100 characters; no control characters, bidi controls included; empty is none
    (the badge shows the person's name). Joiners stay: emoji sequences (🏳️‍🌈) and the scripts
    that write with them (Persian's ZWNJ) need them."""
    if value is None:
        return None
    if isinstance(value, str):
        value = " ".join(value.split())
    name = _badge_name(value)
    if any(unicodedata.category(c) in ("Cc", "Cs") or c in _BIDI_CONTROLS for c in name):
        raise ValueError("may not hold control characters")
    return name or None


def live_registration(db: Session, user_id: int) -> Held | None:
    """The user's live registration for the current event, if any."""
    event = current_event(db)
    if event is None:
        return None
    row = db.execute(
        select(Registration, Order, Product)
        .join(Order, Order.id == Registration.order_id)
        .join(Product, Product.id == Order.product_id)
        .where(
            Registration.event_id == event.id,
            Registration.user_id == user_id,
            Registration.ended_at.is_(None),
        )
    ).first()
    return Held(*row) if row is not None else None


def registration_options(db: Session, event_id: int) -> list[RegistrationOption]:
    """The event's registration options in the order the form asks them."""
    return list(
        db.scalars(
            select(RegistrationOption)
            .where(RegistrationOption.event_id == event_id)
            .order_by(RegistrationOption.position, RegistrationOption.id)
        )
    )


def answers_of(db: Session, registration_id: int) -> dict[int, Any]:
    """The registration's answers: option id → value."""
    rows = db.execute(
        select(RegistrationOptionValue.option_id, RegistrationOptionValue.value).where(
            RegistrationOptionValue.registration_id == registration_id
        )
    )
    return {row.option_id: row.value for row in rows}


def check_answers(
    options: Collection[RegistrationOption], given: Mapping[str, Any]
) -> dict[int, Any]:
    """Answers by option name checked against the event's options: option id → value. An
    answer that is None, "" or [] is no answer. Invalid names each bad one (`options.<name>`)."""
    by_name = {option.name: option for option in options}
    errors: dict[str, str] = {}
    answers: dict[int, Any] = {}
    for name, value in given.items():
        option = by_name.get(name)
        if option is None:
            errors[f"options.{name}"] = "The event has no such registration option."
            continue
        if value is None or value == "" or value == []:
            continue
        problem = option_value_error(option.type, option.choices, value) or _beyond_bounds(
            option.type, value
        )
        if problem:
            errors[f"options.{name}"] = f"The answer {problem}."
        else:
            answers[option.id] = value
    if errors:
        raise Invalid(errors)
    return answers


def _beyond_bounds(option_type: str, value: Any) -> str | None:
    """Why an answer of the right type is still refused: the bounds the form's own reading of
    an answer keeps (events/options.py), for every other writer too. A NaN or an infinity is
    no number JSON can hold."""
    if option_type == OptionType.NUMBER:
        if (isinstance(value, float) and not math.isfinite(value)) or abs(value) > NUMBER_MAX:
            return f"must be a number between -{NUMBER_MAX:,} and {NUMBER_MAX:,}"
    elif option_type == OptionType.MULTI:
        if len(value) > MULTI_ANSWER_MAX:
            return f"may hold at most {MULTI_ANSWER_MAX} values"
        if any(len(item) > CHOICE_MAX_LENGTH for item in value):
            return f"may hold values of at most {CHOICE_MAX_LENGTH} characters"
    elif len(value) > TEXT_ANSWER_MAX:
        return f"may be at most {TEXT_ANSWER_MAX} characters long"
    return None


def register(
    db: Session,
    actor: Actor,
    *,
    user_id: int,
    product_id: int,
    currency: str,
    badge: Any = None,
    answers: Mapping[str, Any] | None = None,
    by_staff: bool = False,
    number: str | None = None,
) -> Placed:
    """An unpaid order of the product and the user's registration, with its badge name and
    answers, in the caller's transaction (ordering.place_order holds the places)."""
    errors: dict[str, str] = {}
    name = None
    try:
        name = badge_name(badge)
    except ValueError as exc:
        errors["badgeName"] = f"The badge name {exc}."
    event = current_event_for_writing(db)
    checked: dict[int, Any] = {}
    try:
        checked = check_answers(registration_options(db, event.id), answers or {})
    except Invalid as invalid:
        errors.update(invalid.errors)
    if errors:
        raise Invalid(errors)
    placed = place_order(
        db,
        actor,
        user_id=user_id,
        product_id=product_id,
        currency=currency,
        badge_name=name,
        by_staff=by_staff,
        number=number,
    )
    _write_answers(db, placed.registration.id, checked)
    return placed


def edit_registration(
    db: Session,
    actor: Actor,
    registration: Registration,
    *,
    badge: Any,
    answers: Mapping[str, Any],
    edits_until: dt.datetime | None = None,
) -> list[str]:
    """Sets the badge name and the answers (every option: one not given is cleared). Refused
    after `edits_until` (the attendee's deadline; staff pass None) and on an ended
    registration. Returns what changed (`badgeName`, option names)."""
    if registration.ended_at is not None:
        raise Invalid({"registration": "This registration was cancelled."})
    if edits_until is not None and utcnow() >= edits_until:
        raise Invalid({"registration": "Registrations can no longer be changed."})
    errors: dict[str, str] = {}
    name = registration.badge_name
    try:
        name = badge_name(badge)
    except ValueError as exc:
        errors["badgeName"] = f"The badge name {exc}."
    options = registration_options(db, registration.event_id)
    checked: dict[int, Any] = {}
    try:
        checked = check_answers(options, answers)
    except Invalid as invalid:
        errors.update(invalid.errors)
    if errors:
        raise Invalid(errors)
    before = answers_of(db, registration.id)
    names = {option.id: option.name for option in options}
    changed = [
        names[i] for i in sorted(set(before) | set(checked)) if before.get(i) != checked.get(i)
    ]
    if name != registration.badge_name:
        changed.insert(0, "badgeName")
    if not changed:
        return []
    registration.badge_name = name
    registration.updated_at = utcnow()
    db.execute(
        delete(RegistrationOptionValue).where(
            RegistrationOptionValue.registration_id == registration.id
        )
    )
    _write_answers(db, registration.id, checked)
    record_event(
        db,
        actor,
        "registration.updated",
        target_type="registration",
        target_id=registration.id,
        details={"fields": changed},
    )
    db.flush()
    return changed


def change_product(db: Session, actor: Actor, order: Order, product_id: int) -> None:
    """Moves an unpaid order to another product of its event (staff: any product, on sale or
    not), at that product's price, if it has a place left (held under its lock)."""
    if order.status != OrderStatus.UNPAID:
        raise Invalid({"product": "Only an unpaid order can change product."})
    if product_id == order.product_id:
        return
    product = db.scalars(
        select(Product).where(Product.id == product_id).with_for_update()
    ).one_or_none()
    if product is None or product.event_id != order.event_id:
        raise Invalid({"product": "No such product."})
    left = places_left(db, product)
    if left is not None and left <= 0:
        raise Invalid({"product": "Sold out."})
    before = db.get(Product, order.product_id)
    record_event(
        db,
        actor,
        "order.product_changed",
        target_type="order",
        target_id=order.number,
        details={
            "before": {"product": before.name if before else None, "amount": order.amount},
            "after": {"product": product.name, "amount": product.price},
        },
    )
    order.product_id = product.id
    order.amount = product.price
    order.updated_at = utcnow()
    db.flush()


def set_flags(
    db: Session, actor: Actor, registration: Registration, flag_ids: Collection[int]
) -> bool:
    """The registration's flags become exactly these (flags of its event). True if changed."""
    wanted = set(flag_ids)
    known = set(
        db.scalars(
            select(RegistrationFlag.id).where(
                RegistrationFlag.event_id == registration.event_id,
                RegistrationFlag.id.in_(wanted or [0]),
            )
        )
    )
    if wanted - known:
        raise Invalid({"flags": "No such flag."})
    held = set(
        db.scalars(
            select(RegistrationFlagLink.flag_id).where(
                RegistrationFlagLink.registration_id == registration.id
            )
        )
    )
    if held == wanted:
        return False
    db.execute(
        delete(RegistrationFlagLink).where(
            RegistrationFlagLink.registration_id == registration.id,
            RegistrationFlagLink.flag_id.in_(held - wanted or [0]),
        )
    )
    for flag_id in sorted(wanted - held):
        db.add(RegistrationFlagLink(registration_id=registration.id, flag_id=flag_id))
    registration.updated_at = utcnow()
    names = {
        flag.id: flag.short_name
        for flag in db.execute(
            select(RegistrationFlag.id, RegistrationFlag.short_name).where(
                RegistrationFlag.id.in_(held | wanted or {0})
            )
        )
    }
    record_event(
        db,
        actor,
        "registration.flags_changed",
        target_type="registration",
        target_id=registration.id,
        details={
            "before": sorted(names[i] for i in held),
            "after": sorted(names[i] for i in wanted),
        },
    )
    db.flush()
    return True


def products_on_offer(db: Session, event_id: int) -> list[tuple[Product, int | None]]:
    """The event's products in display order, each with the places it has left (None: no
    limit), counted in one query."""
    live = (
        select(Order.product_id, func.count().label("held"))
        .where(Order.status.in_(LIVE_STATUSES))
        .group_by(Order.product_id)
        .subquery()
    )
    rows = db.execute(
        select(Product, live.c.held)
        .outerjoin(live, live.c.product_id == Product.id)
        .where(Product.event_id == event_id)
        .order_by(Product.position, Product.id)
    )
    return [
        (product, None if product.capacity is None else max(0, product.capacity - (held or 0)))
        for product, held in rows
    ]


def _write_answers(db: Session, registration_id: int, answers: Mapping[int, Any]) -> None:
    for option_id, value in answers.items():
        db.add(
            RegistrationOptionValue(
                registration_id=registration_id, option_id=option_id, value=value
            )
        )
    db.flush()
