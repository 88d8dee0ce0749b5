"""What the admin pages share: what the admin frame needs to render a page, a record that is
not there (404), and the redirect after a form (Post/Redirect/Get)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import FormData

from regdesk.admin.access import Staffer
from regdesk.schemas import record_id
from regdesk.web.pages import render
from regdesk.web.visitor import PageRefused


def staff_context(staffer: Staffer, **context: Any) -> dict[str, Any]:
    """A page's context with what the admin frame (admin/base.html) reads."""
    return {"visitor": staffer.visitor, "staffer": staffer, **context}


def admin_page(
    request: Request,
    template: str,
    staffer: Staffer,
    section: str,
    *,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    return render(
        request,
        template,
        staff_context(staffer, section=section, **context),
        status_code=status_code,
    )


def missing(
    request: Request, staffer: Staffer, section: str, what: str, path_id: str
) -> PageRefused:
    """404: no `what` has this id (mistyped, or deleted meanwhile)."""
    return PageRefused(
        admin_page(
            request,
            "admin/missing.html",
            staffer,
            section,
            status_code=404,
            what=what,
            record_id=path_id,
            back=f"/admin/{section}",
        )
    )


def path_number(path_id: str) -> int:
    """A path id as a number; one that no record can have is simply not found (-1)."""
    number = record_id(path_id)
    return -1 if number is None else number


def see_other(path: str, done: str | None = None) -> RedirectResponse:
    """After a form: back to a page, which says what happened (`?done=<key>`)."""
    return RedirectResponse(f"{path}?done={done}" if done else path, status_code=303)


async def _form(request: Request) -> FormData:
    return await request.form()  # parsed once: the CSRF check in access.py read it already


# The submitted form as it came, for pages whose forms have many fields.
FormDep = Annotated[FormData, Depends(_form)]


def typed(form: FormData, name: str) -> str:
    """A text field as typed, without surrounding spaces ('' when absent or not text), and
    without NUL characters (no one types them, and PostgreSQL refuses them in text)."""
    value = form.get(name)
    return clean(value) if isinstance(value, str) else ""


def clean(value: str) -> str:
    return value.replace("\x00", "").strip()
