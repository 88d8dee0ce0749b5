"""What every desk page shares: the desk's navigation above it (search, new sale, badges,
statistics; desk/base.html), the amounts in the instance's currency, and the page for a
registration that is not there."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from regdesk.config import Settings
from regdesk.desk.access import DeskStaffer
from regdesk.registrations.money import format_amount
from regdesk.web.pages import render
from regdesk.web.visitor import PageRefused


def desk_page(
    request: Request,
    staffer: DeskStaffer,
    template: str,
    section: str,
    *,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    """`template` (extending desk/base.html), its navigation showing `section`."""
    return render(
        request,
        template,
        {
            "visitor": staffer.visitor,
            "staffer": staffer,
            "section": section,
            "money": format_amount,
            **context,
        },
        status_code=status_code,
    )


def missing(request: Request, staffer: DeskStaffer) -> PageRefused:
    """404: no registration of the current event has this id."""
    return PageRefused(desk_page(request, staffer, "desk/missing.html", "search", status_code=404))


def currency(request: Request) -> str:
    settings: Settings = request.app.state.settings
    return settings.currency
