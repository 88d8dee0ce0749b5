"""The current event's options in the admin area (issue 8): the questions of the volunteer
form, which administrators define. The rules and writes are regdesk.events.service's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import missing, path_number, staff_context
from regdesk.errors import Invalid
from regdesk.events.models import EventOption, OptionType
from regdesk.events.service import current_event, current_options, find_current_option
from regdesk.volunteers.options import (
    OptionSpec,
    answer_counts,
    create_option,
    delete_option,
    update_option,
)
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/options")

TYPES = [
    (OptionType.SELECT.value, "Select", "one choice from a list"),
    (OptionType.MULTI.value, "Multi", "any number of choices from a list"),
    (OptionType.TEXT.value, "Text", "a free answer"),
    (OptionType.NUMBER.value, "Number", "a number, such as 12 or 7.5"),
]
NOTICES = {
    "created": "The option was added to the volunteer form.",
    "saved": "The changes were saved.",
    "deleted": "The option was deleted, with its answers.",
}

TextField = Annotated[str, Form()]


def _context(staffer: Staffer, **context: Any) -> dict[str, Any]:
    return staff_context(staffer, types=TYPES, **context)


def _spec_of(option: EventOption) -> OptionSpec:
    return OptionSpec(
        option.name, option.type, "\n".join(option.choices or []), str(option.position)
    )


def _found(request: Request, staffer: Staffer, db: Session, option_id: str) -> EventOption:
    """The current event's option with this id, or a 404 page."""
    option = find_current_option(db, path_number(option_id))
    if option is None:
        raise missing(request, staffer, "options", "option", option_id)
    return option


def _answers(db: Session, option: EventOption) -> int:
    return answer_counts(db, [option.id]).get(option.id, 0)


@router.get("")
def options_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    done: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    options = current_options(db)
    return render(
        request,
        "admin/options.html",
        _context(
            staffer,
            event=current_event(db),
            options=options,
            answers=answer_counts(db, [option.id for option in options]),
            notice=NOTICES.get(done or ""),
        ),
    )


@router.get("/new")
def new_option_page(request: Request, staffer: AdminDep) -> HTMLResponse:
    return _option_form(request, staffer, None, OptionSpec("", OptionType.SELECT.value), 0)


@router.post("/new")
def add_option(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    name: TextField = "",
    type: TextField = "",
    choices: TextField = "",
    position: TextField = "",
) -> Response:
    spec = OptionSpec(name, type, choices, position)
    try:
        create_option(db, staffer.actor, spec)
    except Invalid as invalid:
        return _option_form(request, staffer, None, spec, 0, invalid.errors)
    return RedirectResponse("/admin/options?done=created", status_code=303)


@router.get("/{option_id}")
def option_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    option_id: str,
    done: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    option = _found(request, staffer, db, option_id)
    answers = _answers(db, option)
    return _option_form(
        request, staffer, option, _spec_of(option), answers, notice=NOTICES.get(done or "")
    )


@router.post("/{option_id}")
def change_option(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    option_id: str,
    name: TextField = "",
    type: TextField = "",
    choices: TextField = "",
    position: TextField = "",
) -> Response:
    option = _found(request, staffer, db, option_id)
    spec = OptionSpec(name, type, choices, position)
    try:
        update_option(db, staffer.actor, option, spec)
    except Invalid as invalid:
        return _option_form(request, staffer, option, spec, _answers(db, option), invalid.errors)
    return RedirectResponse(f"/admin/options/{option.id}?done=saved", status_code=303)


@router.get("/{option_id}/delete")
def delete_option_page(
    request: Request, staffer: AdminDep, db: PageDb, option_id: str
) -> HTMLResponse:
    """Are you sure? Deleting an option deletes every answer to it."""
    option = _found(request, staffer, db, option_id)
    return render(
        request,
        "admin/option_delete.html",
        _context(staffer, option=option, answers=_answers(db, option)),
    )


@router.post("/{option_id}/delete")
def remove_option(request: Request, staffer: AdminDep, db: PageDb, option_id: str) -> Response:
    option = _found(request, staffer, db, option_id)
    delete_option(db, staffer.actor, option)
    return RedirectResponse("/admin/options?done=deleted", status_code=303)


def _option_form(
    request: Request,
    staffer: Staffer,
    option: EventOption | None,
    spec: OptionSpec,
    answers: int,
    errors: dict[str, str] | None = None,
    *,
    notice: str | None = None,
) -> HTMLResponse:
    return render(
        request,
        "admin/option.html",
        _context(
            staffer, option=option, spec=spec, errors=errors or {}, notice=notice, answers=answers
        ),
        status_code=400 if errors else 200,
    )
