"""What the tests of the attendee's registration page share (tests/web/test_register.py,
tests/registrations/test_capacity_race.py): products and registration options of the current
event, the form as an attendee fills it in, and readers of the pages and the database."""

from __future__ import annotations

import datetime as dt
import html
import re
from typing import Any

import segno
from fastapi import FastAPI
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from regdesk.db import write_session
from regdesk.events.service import current_event_for_writing
from regdesk.registrations.models import (
    Order,
    Product,
    Registration,
    RegistrationOption,
    RegistrationOptionValue,
)
from regdesk.web.qr import QR_ERROR_LEVEL

EVENT = "FurCon 2027"
HOUR = dt.timedelta(hours=1)


def set_edits_until(app: FastAPI, moment: dt.datetime | None) -> None:
    """REGDESK_REGISTRATION_EDITS_UNTIL, as if the server had started with it."""
    settings = app.state.settings
    app.state.settings = settings.model_copy(update={"registration_edits_until": moment})


def add_product(engine: Engine, name: str, **fields: Any) -> int:
    with write_session(engine) as session:
        event = current_event_for_writing(session)
        event.name = EVENT
        fields.setdefault("price", 6500)
        made = Product(event_id=event.id, name=name, **fields)
        session.add(made)
        session.flush()
        return made.id


def add_options(engine: Engine) -> dict[str, int]:
    """One registration option of each type, by name -> id."""
    with write_session(engine) as session:
        event = current_event_for_writing(session)
        made = [
            RegistrationOption(event_id=event.id, name=name, type=kind, choices=choices, position=i)
            for i, (name, kind, choices) in enumerate(
                (
                    ("T-shirt size", "select", ["S", "M", "L"]),
                    ("Diet", "multi", ["Vegetarian", "Vegan", "No nuts"]),
                    ("Fursuit", "text", None),
                    ("Nights", "number", None),
                )
            )
        ]
        session.add_all(made)
        session.flush()
        return {option.name: option.id for option in made}


def form(
    product: int, options: dict[str, int], answers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The registration form as an attendee fills it in; `answers` by option name."""
    sent: dict[str, Any] = {"product": str(product), "badgeName": "Fae the Fox"}
    for name, value in (answers or {}).items():
        sent[f"option-{options[name]}"] = value
    return sent


def live(engine: Engine, user_id: int) -> tuple[Order, Registration] | None:
    with Session(engine) as session:
        row = session.execute(
            select(Order, Registration)
            .join(Registration, Registration.order_id == Order.id)
            .where(Registration.user_id == user_id, Registration.ended_at.is_(None))
        ).first()
        return (row[0], row[1]) if row else None


def answers(engine: Engine, registration_id: int) -> dict[int, Any]:
    with Session(engine) as session:
        rows = session.execute(
            select(RegistrationOptionValue.option_id, RegistrationOptionValue.value).where(
                RegistrationOptionValue.registration_id == registration_id
            )
        )
        return {row.option_id: row.value for row in rows}


def orders(engine: Engine) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(Order)) or 0


def page_error(page: str) -> str:
    """The message in the page's error summary (an error of the registration as a whole)."""
    found = re.search(r'role="alert">.*?<ul>\s*<li>([^<]*)</li>', page, re.S)
    assert found is not None, "no error summary"
    return html.unescape(found.group(1))


def product_input(page: str, product: int) -> str:
    tag = re.search(rf'<input id="product-{product}"[^>]*>', page)
    assert tag is not None, f"product {product} not offered"
    return tag.group(0)


def ticket_qr_path(page: str) -> str:
    """The drawing of the QR code inlined in the page (its dark modules, as a path)."""
    found = re.search(r'<svg [^>]*class="ticket-qr".*?class="qrline"[^>]*\bd="([^"]+)"', page, re.S)
    assert found is not None, "no QR code in the page"
    return found.group(1)


def segno_path(code: str) -> str:
    drawn = segno.make(code, error=QR_ERROR_LEVEL, micro=False).svg_inline()
    found = re.search(r'class="qrline"[^>]*\bd="([^"]+)"', drawn)
    assert found is not None
    return found.group(1)
