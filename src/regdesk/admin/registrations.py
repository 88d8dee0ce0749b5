"""The current event's registrations in the admin area (registrations.md, Pages), for
administrators: the list filtered by product, order status, flag and check-in; the same list
as a CSV for badge printing; one registration, whose badge name, answers and flags staff set
(with no deadline: REGDESK_REGISTRATION_EDITS_UNTIL is the attendee's).

The writes are regdesk.registrations.service's, each with its audit event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session
from starlette.datastructures import FormData

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import FormDep, admin_page, clean, missing, path_number, see_other, typed
from regdesk.audit.service import record_event
from regdesk.db import utcnow
from regdesk.errors import Invalid
from regdesk.events.models import OptionType
from regdesk.events.options import TEXT_ANSWER_MAX, answer_from_form
from regdesk.events.service import current_event
from regdesk.registrations.flags import flags_of
from regdesk.registrations.lists import (
    Filters,
    RegistrationDetail,
    badge_csv,
    every_registration,
    registration_detail,
    search_registrations,
)
from regdesk.registrations.models import OrderStatus, RegistrationOption
from regdesk.registrations.products import product_rows
from regdesk.registrations.service import (
    answers_of,
    badge_name,
    edit_registration,
    registration_options,
    set_flags,
)
from regdesk.schemas import record_id
from regdesk.web.visitor import PageDb

router = APIRouter()

SECTION = "registrations"
PER_PAGE = 50
SEARCH_MAX = 200
STATUSES = [status.value for status in OrderStatus]
CHECKED_IN = {"yes": True, "no": False}
NOTICES = {
    "saved": "The registration was saved.",
    "unchanged": "Nothing changed: the registration already had these values.",
    "flags": "The flags were saved.",
}


# --- the list -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Typed:
    """The list's filters as they came in the query, and what they ask of the list."""

    product: str = ""
    status: str = ""
    flag: str = ""
    checked_in: str = ""
    q: str = ""

    @classmethod
    def read(cls, product: str, status: str, flag: str, checked_in: str, q: str) -> Typed:
        return cls(
            product=product if record_id(product) else "",
            status=status if status in STATUSES else "",
            flag=flag if record_id(flag) else "",
            checked_in=checked_in if checked_in in CHECKED_IN else "",
            q=clean(q)[:SEARCH_MAX],
        )

    def filters(self) -> Filters:
        return Filters(
            product_id=record_id(self.product) if self.product else None,
            status=self.status or None,
            flag_id=record_id(self.flag) if self.flag else None,
            checked_in=CHECKED_IN.get(self.checked_in),
            typed=self.q,
        )

    def query(self, **more: Any) -> str:
        """As a query string, the filters given only ('' when none)."""
        kept = {**{key: value for key, value in vars(self).items() if value}, **more}
        return "?" + urlencode(kept) if kept else ""


def _page_number(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and 0 < len(text) < 7 else 1


@router.get("/registrations")
def registrations_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    product: str = "",
    status: str = "",
    flag: str = "",
    checked_in: str = "",
    q: str = "",
    page: str = "1",
) -> HTMLResponse:
    shown = Typed.read(product, status, flag, checked_in, q)
    number = _page_number(page)
    found = search_registrations(
        db, shown.filters(), offset=(number - 1) * PER_PAGE, limit=PER_PAGE
    )
    pages = max(1, -(-found.total // PER_PAGE))
    event = current_event(db)

    def link(to: int) -> str:
        return "/admin/registrations" + shown.query(**({"page": to} if to > 1 else {}))

    return admin_page(
        request,
        "admin/registrations.html",
        staffer,
        SECTION,
        lines=found.lines,
        total=found.total,
        shown=shown,
        filtered=bool(shown.query()),
        csv_url="/admin/registrations.csv" + shown.query(),
        products=[row.product for row in product_rows(db, event.id)] if event else [],
        flags=flags_of(db, event.id) if event else [],
        statuses=STATUSES,
        page=number,
        pages=pages,
        previous=link(number - 1) if number > 1 else None,
        next=link(number + 1) if number < pages else None,
    )


@router.get("/registrations.csv")
def registrations_csv(
    staffer: AdminDep,
    db: PageDb,
    product: str = "",
    status: str = "",
    flag: str = "",
    checked_in: str = "",
    q: str = "",
) -> Response:
    """The filtered list as CSV for badge printing, a file to save; kept by no cache (it holds
    personal data). The export is an audit event."""
    shown = Typed.read(product, status, flag, checked_in, q)
    lines = list(every_registration(db, shown.filters()))
    record_event(
        db,
        staffer.actor,
        "registrations.exported",
        details={"registrations": len(lines), "filters": shown.query().lstrip("?")},
    )
    name = f"registrations-{utcnow().date().isoformat()}.csv"
    return Response(
        badge_csv(iter(lines)),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
        },
    )


# --- one registration -----------------------------------------------------------------------


def _registration(
    request: Request, staffer: Staffer, db: Session, registration_id: str
) -> RegistrationDetail:
    detail = registration_detail(db, path_number(registration_id))
    if detail is None:
        raise missing(request, staffer, SECTION, "registration", registration_id)
    return detail


def option_field(option: RegistrationOption) -> str:
    return f"option-{option.id}"


def _control(option: RegistrationOption) -> str:
    if option.type == OptionType.SELECT and option.choices is not None:
        return "dropdown"
    if option.type == OptionType.MULTI:
        return "checkboxes" if option.choices is not None else "lines"
    return "number" if option.type == OptionType.NUMBER else "text"


def _shown_answers(stored: dict[int, Any]) -> dict[int, list[str]]:
    """Stored answers as a form shows them: the values of each option, as text."""
    return {
        option_id: [str(v) for v in value] if isinstance(value, list) else [str(value)]
        for option_id, value in stored.items()
    }


def _registration_page(
    request: Request,
    staffer: Staffer,
    db: Session,
    detail: RegistrationDetail,
    *,
    badge: str | None = None,
    sent: dict[int, list[str]] | None = None,
    flag_ids: set[int] | None = None,
    notice: str | None = None,
    errors: dict[str, str] | None = None,
) -> HTMLResponse:
    registration = detail.registration
    if sent is None:
        sent = _shown_answers(answers_of(db, registration.id))
    options = [
        {"option": option, "field": option_field(option), "control": _control(option),
         "sent": sent.get(option.id, [])}
        for option in registration_options(db, registration.event_id)
    ]  # fmt: skip
    return admin_page(
        request,
        "admin/registration.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        detail=detail,
        user=detail.user,
        badge=registration.badge_name or "" if badge is None else badge,
        options=options,
        flags=flags_of(db, registration.event_id),
        held=detail.flag_ids if flag_ids is None else flag_ids,
        text_max=TEXT_ANSWER_MAX,
        notice=notice,
        errors=errors or {},
    )


@router.get("/registrations/{registration_id}")
def registration_page(
    request: Request, registration_id: str, staffer: AdminDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    detail = _registration(request, staffer, db, registration_id)
    return _registration_page(request, staffer, db, detail, notice=NOTICES.get(done))


@router.post("/registrations/{registration_id}")
def edit(
    request: Request, registration_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    """Sets the badge name and every answer (an option left empty is no answer)."""
    detail = _registration(request, staffer, db, registration_id)
    badge = typed(form, "badgeName")
    options = registration_options(db, detail.registration.event_id)
    sent = {option.id: _texts(form, option_field(option)) for option in options}
    try:
        changed = edit_registration(
            db,
            staffer.actor,
            detail.registration,
            badge=badge,
            answers=_answers(options, sent, badge),
            edits_until=None,  # staff have no deadline
        )
    except Invalid as refused:
        by_name = {f"options.{option.name}": option_field(option) for option in options}
        errors = {by_name.get(key, key): message for key, message in refused.errors.items()}
        return _registration_page(
            request, staffer, db, detail, badge=badge, sent=sent, errors=errors
        )
    done = "saved" if changed else "unchanged"
    return see_other(f"/admin/registrations/{detail.registration.id}", done)


def _texts(form: FormData, name: str) -> list[str]:
    return [value.replace("\x00", "") for value in form.getlist(name) if isinstance(value, str)]


def _answers(
    options: list[RegistrationOption], sent: dict[int, list[str]], badge: str
) -> dict[str, Any]:
    """The answers by option name, as the service takes them; Invalid names each field that
    is not an answer (and the badge name, if it is wrong too), before anything is written."""
    errors: dict[str, str] = {}
    answers: dict[str, Any] = {}
    for option in options:
        try:
            value = answer_from_form(option.type, option.choices, sent.get(option.id, []))
        except ValueError as exc:
            errors[option_field(option)] = str(exc)
            continue
        if value is not None:
            answers[option.name] = value
    if errors:
        try:
            badge_name(badge)
        except ValueError as exc:
            errors = {"badgeName": f"The badge name {exc}.", **errors}
        raise Invalid(errors)
    return answers


@router.post("/registrations/{registration_id}/flags")
def save_flags(
    request: Request, registration_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    """The registration holds exactly the ticked flags afterwards."""
    detail = _registration(request, staffer, db, registration_id)
    ticked = {record_id(value) or 0 for value in _texts(form, "flag")}
    try:
        changed = set_flags(db, staffer.actor, detail.registration, ticked)
    except Invalid as refused:
        return _registration_page(
            request, staffer, db, detail, flag_ids=ticked, errors=refused.errors
        )
    done = "flags" if changed else "unchanged"
    return see_other(f"/admin/registrations/{detail.registration.id}", done)
