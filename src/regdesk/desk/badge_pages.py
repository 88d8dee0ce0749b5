"""Printing badges at the desk (registrations.md, Pages; issue 17): one person's badge from their
card, and a batch the night before opening.

Each page prints as it is: its stylesheet (static/badges.css) sizes a badge for 4 x 3 inch
badge stock (the common insert of badge holders, and the label of 4-inch badge printers),
landscape, one badge to a sheet, and hides everything else on paper; the browser's own
margins, headers and footers are gone with `@page { margin: 0 }`. No script: the staff member
prints (Ctrl+P), then says so with "Mark printed", which records it
(regdesk.desk.badges.mark_printed: the time on the registration, the staff member in the audit
log). A badge is printed again as often as asked; each time is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from regdesk.admin.pages import FormDep, path_number
from regdesk.desk.access import DeskDep, DeskStaffer
from regdesk.desk.badges import (
    BATCH_DEFAULT,
    BATCH_MAX,
    Badge,
    Selection,
    badge,
    batch,
    mark_printed,
)
from regdesk.desk.frame import desk_page, missing
from regdesk.events.service import current_event
from regdesk.registrations.flags import flags_of
from regdesk.registrations.products import product_rows
from regdesk.schemas import record_id
from regdesk.web.qr import qr_svg
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/desk", include_in_schema=False)

# 3 CSS pixels (1/32 in) a module: a ticket's QR code, 49 modules with its quiet zone, prints
# about 1.5 in wide, which a desk's scanner reads from arm's length.
BADGE_QR_SCALE = 3
PRINTED_STATES = {"no": True, "any": False}  # the batch's "printed" choice -> only unprinted


def qr_of(shown: Badge) -> Markup:
    return qr_svg(shown.ticket, "badge-qr", scale=BADGE_QR_SCALE)


def name_size(name: str) -> str:
    """A badge name's type size, by its length: a short one fills the badge, a long one still
    fits on it (no script measures it)."""
    length = len(name)
    return "short" if length <= 12 else "medium" if length <= 24 else "long"


def _badge_page(
    request: Request, staffer: DeskStaffer, shown: Badge, *, status_code: int = 200
) -> HTMLResponse:
    return desk_page(
        request,
        staffer,
        "desk/badge.html",
        "search",
        status_code=status_code,
        badge=shown,
        qr_of=qr_of,
        name_size=name_size,
        refused=status_code == 409,
    )


@router.get("/registrations/{registration_id}/badge")
def badge_page(
    request: Request, registration_id: str, staffer: DeskDep, db: PageDb
) -> HTMLResponse:
    shown = badge(db, path_number(registration_id))
    if shown is None:
        raise missing(request, staffer)
    return _badge_page(request, staffer, shown)


@router.post("/registrations/{registration_id}/badge/printed")
def badge_printed(request: Request, registration_id: str, staffer: DeskDep, db: PageDb) -> Response:
    """Records the badge printed, by this staff member, and goes back to the card; refused
    (409) unless the registration is live and paid."""
    shown = badge(db, path_number(registration_id))
    if shown is None:
        raise missing(request, staffer)
    if not mark_printed(db, staffer.actor, [shown.registration_id]):
        return _badge_page(request, staffer, shown, status_code=409)
    return RedirectResponse(f"/desk/{shown.registration_id}?done=printed", status_code=303)


# --- the batch --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Typed:
    """The batch's choices as they came in the query (or the form), each checked."""

    product: str = ""
    flag: str = ""
    printed: str = "no"
    limit: str = str(BATCH_DEFAULT)

    @classmethod
    def read(cls, product: str, flag: str, printed: str, limit: str) -> Typed:
        number = int(limit) if limit.isascii() and limit.isdigit() and len(limit) < 6 else 0
        return cls(
            product=product if record_id(product) else "",
            flag=flag if record_id(flag) else "",
            printed=printed if printed in PRINTED_STATES else "no",
            limit=str(min(number, BATCH_MAX) if number > 0 else BATCH_DEFAULT),
        )

    def selection(self, after: int) -> Selection:
        return Selection(
            product_id=record_id(self.product) if self.product else None,
            flag_id=record_id(self.flag) if self.flag else None,
            unprinted=PRINTED_STATES[self.printed],
            after=after,
            limit=int(self.limit),
        )

    def query(self, **more: Any) -> str:
        return urlencode({**{k: v for k, v in vars(self).items() if v}, **more})


@router.get("/badges")
def badges_page(
    request: Request,
    staffer: DeskDep,
    db: PageDb,
    product: str = "",
    flag: str = "",
    printed: str = "no",
    limit: str = str(BATCH_DEFAULT),
    after: str = "",
    marked: str = "",
) -> HTMLResponse:
    """The filters, then the batch they pick: every badge on a sheet of its own once printed,
    with "Mark these N printed" and the link to the next batch."""
    shown = Typed.read(product, flag, printed, limit)
    found = batch(db, shown.selection(record_id(after) or 0))
    event = current_event(db)
    count = int(marked) if marked.isascii() and marked.isdigit() and len(marked) < 4 else None
    return desk_page(
        request,
        staffer,
        "desk/badges.html",
        "badges",
        shown=shown,
        badges=found.badges,
        next_url=(
            f"/desk/badges?{shown.query(after=found.next_after)}" if found.next_after else None
        ),
        products=[row.product for row in product_rows(db, event.id)] if event else [],
        flags=flags_of(db, event.id) if event else [],
        batch_max=BATCH_MAX,
        marked=count,
        qr_of=qr_of,
        name_size=name_size,
    )


@router.post("/badges/printed")
def batch_printed(staffer: DeskDep, db: PageDb, form: FormDep) -> Response:
    """Records the batch's badges printed (those listed in the form: what was on the page,
    not what the filters pick now), in one transaction, and shows the filters again."""
    ids = [record_id(value) for value in form.getlist("registration") if isinstance(value, str)]
    marked = mark_printed(db, staffer.actor, [i for i in ids if i is not None])
    shown = Typed.read(*(_text(form, key) for key in ("product", "flag", "printed", "limit")))
    return RedirectResponse(f"/desk/badges?{shown.query(marked=len(marked))}", status_code=303)


def _text(form: Any, key: str) -> str:
    value = form.get(key)
    return value if isinstance(value, str) else ""
