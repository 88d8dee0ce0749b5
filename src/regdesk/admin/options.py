"""The current event's options in the admin area: the questions of a form, which
administrators define. One set of pages serves both forms that ask them: the volunteer form
("Event options", issue 8) and the registration form ("Registration options",
registrations.md). The rules and writes are regdesk.events.options', for either kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import missing, path_number, staff_context
from regdesk.errors import Invalid
from regdesk.events.models import OptionType
from regdesk.events.options import OptionKind, OptionRow, OptionSpec
from regdesk.events.service import current_event
from regdesk.registrations.options import REGISTRATION_OPTIONS
from regdesk.volunteers.options import VOLUNTEER_OPTIONS
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb

TYPES = [
    (OptionType.SELECT.value, "Select", "one choice from a list"),
    (OptionType.MULTI.value, "Multi", "any number of choices from a list"),
    (OptionType.TEXT.value, "Text", "a free answer"),
    (OptionType.NUMBER.value, "Number", "a number, such as 12 or 7.5"),
]

TextField = Annotated[str, Form()]


@dataclass(frozen=True)
class OptionPages:
    """One form's option pages: where they are, and how they speak of the form."""

    kind: OptionKind[Any]
    section: str  # its entry in the admin navigation, also the path under /admin
    title: str
    form_name: str  # "volunteer form": the option was added to the volunteer form
    form_long_name: str  # "volunteer application form": the questions it asks
    form_url: str  # where the form is, as the people answering it see it
    answerer: str  # who answers, one of them: "volunteer"
    related: tuple[tuple[str, str], ...] = ()  # links of the list page's header: (path, text)

    @property
    def base(self) -> str:
        """The list's path, e.g. /admin/options."""
        return f"/admin/{self.section}"

    def notice(self, done: str | None) -> str | None:
        return {
            "created": f"The option was added to the {self.form_name}.",
            "saved": "The changes were saved.",
            "deleted": "The option was deleted, with its answers.",
        }.get(done or "")


VOLUNTEER_PAGES = OptionPages(
    VOLUNTEER_OPTIONS,
    section="options",
    title="Event options",
    form_name="volunteer form",
    form_long_name="volunteer application form",
    form_url="/volunteer",
    answerer="volunteer",
)
REGISTRATION_PAGES = OptionPages(
    REGISTRATION_OPTIONS,
    section="registration-options",
    title="Registration options",
    form_name="registration form",
    form_long_name="registration form",
    form_url="/register",
    answerer="attendee",
    related=(("/admin/flags", "Flags"),),
)


def option_router(pages: OptionPages) -> APIRouter:
    """The list, add, edit and delete pages of one form's options, under `pages.base`."""
    router = APIRouter(prefix=f"/{pages.section}")
    kind = pages.kind

    def context(staffer: Staffer, **more: Any) -> dict[str, Any]:
        return staff_context(staffer, types=TYPES, pages=pages, section=pages.section, **more)

    def found(request: Request, staffer: Staffer, db: Session, option_id: str) -> Any:
        """The current event's option with this id, or a 404 page."""
        option = kind.find_current(db, path_number(option_id))
        if option is None:
            raise missing(request, staffer, pages.section, "option", option_id)
        return option

    def answers(db: Session, option: OptionRow) -> int:
        return kind.answer_counts(db, [option.id]).get(option.id, 0)

    def option_form(
        request: Request,
        staffer: Staffer,
        option: OptionRow | None,
        spec: OptionSpec,
        answered: int,
        errors: dict[str, str] | None = None,
        *,
        notice: str | None = None,
    ) -> HTMLResponse:
        return render(
            request,
            "admin/option.html",
            context(
                staffer,
                option=option,
                spec=spec,
                errors=errors or {},
                notice=notice,
                answers=answered,
            ),
            status_code=400 if errors else 200,
        )

    @router.get("")
    def options_page(
        request: Request,
        staffer: AdminDep,
        db: PageDb,
        done: Annotated[str | None, Query()] = None,
    ) -> HTMLResponse:
        event = current_event(db)
        options = kind.of_event(db, event.id) if event else []
        return render(
            request,
            "admin/options.html",
            context(
                staffer,
                event=event,
                options=options,
                answers=kind.answer_counts(db, [option.id for option in options]),
                notice=pages.notice(done),
            ),
        )

    @router.get("/new")
    def new_option_page(request: Request, staffer: AdminDep) -> HTMLResponse:
        return option_form(request, staffer, None, OptionSpec("", OptionType.SELECT.value), 0)

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
            kind.create(db, staffer.actor, spec)
        except Invalid as invalid:
            return option_form(request, staffer, None, spec, 0, invalid.errors)
        return RedirectResponse(f"{pages.base}?done=created", status_code=303)

    @router.get("/{option_id}")
    def option_page(
        request: Request,
        staffer: AdminDep,
        db: PageDb,
        option_id: str,
        done: Annotated[str | None, Query()] = None,
    ) -> HTMLResponse:
        option = found(request, staffer, db, option_id)
        spec = OptionSpec(
            option.name, option.type, "\n".join(option.choices or []), str(option.position)
        )
        return option_form(
            request, staffer, option, spec, answers(db, option), notice=pages.notice(done)
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
        option = found(request, staffer, db, option_id)
        spec = OptionSpec(name, type, choices, position)
        try:
            kind.update(db, staffer.actor, option, spec)
        except Invalid as invalid:
            return option_form(request, staffer, option, spec, answers(db, option), invalid.errors)
        return RedirectResponse(f"{pages.base}/{option.id}?done=saved", status_code=303)

    @router.get("/{option_id}/delete")
    def delete_option_page(
        request: Request, staffer: AdminDep, db: PageDb, option_id: str
    ) -> HTMLResponse:
        """Are you sure? Deleting an option deletes every answer to it."""
        option = found(request, staffer, db, option_id)
        return render(
            request,
            "admin/option_delete.html",
            context(staffer, option=option, answers=answers(db, option)),
        )

    @router.post("/{option_id}/delete")
    def remove_option(request: Request, staffer: AdminDep, db: PageDb, option_id: str) -> Response:
        option = found(request, staffer, db, option_id)
        kind.delete(db, staffer.actor, option)
        return RedirectResponse(f"{pages.base}?done=deleted", status_code=303)

    return router


# The volunteer form's options (routes.py mounts both).
router = option_router(VOLUNTEER_PAGES)
registration_router = option_router(REGISTRATION_PAGES)
