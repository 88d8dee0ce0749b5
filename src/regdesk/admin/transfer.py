"""Import and export from the browser (issue 8): the same documents as `regdesk import` and
`regdesk export`, through the same functions.

An import is all or nothing: a refused document is shown with each error's position and field,
and nothing is written. Only an administrator may send the upload's `MAX_UPLOAD` (anyone else,
a page's small form: regdesk.bodies), and only with its size declared within it; larger
documents are for `regdesk import` on the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.background import BackgroundTask
from starlette.datastructures import FormData, UploadFile

from regdesk.admin.access import AdminDep, AskedByAdministrator, Staffer
from regdesk.admin.pages import staff_context
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import record_event, search_events
from regdesk.bodies import raise_limit
from regdesk.config import Settings
from regdesk.db import refresh_statistics, utcnow
from regdesk.transfer.exporter import document_text, export_document
from regdesk.transfer.importer import ImportRejected, import_into, read_uploaded_document
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb, PageRefused

MAX_UPLOAD = 10 * 1024 * 1024  # about 20,000 users
MAX_UPLOAD_TEXT = "10 MB"
FORM_OVERHEAD = 64 * 1024  # the multipart framing and the form's other fields
PAGE = "/admin/transfer"
SECTIONS = {  # the document's lists, as the page names them
    "roles": "Roles",
    "users": "Users",
    "departments": "Departments",
    "events": "Events",
    "volunteers": "Volunteers",
    "products": "Products",
    "registrationFlags": "Registration flags",
    "registrationOptions": "Registration options",
    "registrations": "Registrations",
}


router = APIRouter(prefix="/transfer")


async def _upload_form(
    request: Request, administrator: AskedByAdministrator
) -> AsyncIterator[FormData]:
    """The import's form, read once it is known whether an administrator sends it: theirs up
    to the upload's limit, anyone else's within a page's (AdminDep then refuses them)."""
    if administrator and not raise_limit(request, MAX_UPLOAD + FORM_OVERHEAD):
        raise PageRefused(RedirectResponse(f"{PAGE}?too_large", status_code=303))
    form = await request.form()  # Starlette keeps it: AdminDep's CSRF check reads it again
    try:
        yield form
    finally:
        await form.close()


def _page(
    request: Request,
    staffer: Staffer,
    *,
    imported: list[tuple[str, dict[str, int]]] | None = None,
    problem: str | None = None,
    rejected: list[tuple[str, str]] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    return render(
        request,
        "admin/transfer.html",
        staff_context(
            staffer,
            imported=imported,
            problem=problem,
            rejected=rejected,
            limit=MAX_UPLOAD_TEXT,
        ),
        status_code=status_code,
    )


@router.get("")
def transfer_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    imported: Annotated[str | None, Query()] = None,
    too_large: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    """The upload form and the export button; after an import, its counts (`?imported=ID`
    names the import's audit event, which holds them)."""
    problem = None
    if too_large is not None:
        problem = (
            f"The file is larger than {MAX_UPLOAD_TEXT}, so it was not read and nothing was "
            "imported. Import it with `regdesk import` on the server, or split it."
        )
    return _page(request, staffer, imported=_counts_of(db, imported), problem=problem)


def _counts_of(db: PageDb, event_id: str | None) -> list[tuple[str, dict[str, int]]] | None:
    if not (event_id and event_id.isascii() and event_id.isdigit() and len(event_id) < 19):
        return None
    event = db.get(AuditEvent, int(event_id))
    if event is None or event.action != "data.imported":
        return None
    return [(name, event.details[kind]) for kind, name in SECTIONS.items() if kind in event.details]


@router.post("/import")
def import_upload(
    request: Request,
    form: Annotated[FormData, Depends(_upload_form)],
    staffer: AdminDep,
    db: PageDb,
) -> Response:
    """The uploaded document through `regdesk import`'s importer, in this page's transaction
    (which begins only once the upload has arrived: `form` comes first)."""
    document = form.get("document")
    if not isinstance(document, UploadFile) or not document.filename:
        return _page(request, staffer, problem="Choose a file to import.", status_code=400)
    data = document.file.read(MAX_UPLOAD + 1)
    if len(data) > MAX_UPLOAD:
        return RedirectResponse(f"{PAGE}?too_large", status_code=303)
    settings: Settings = request.app.state.settings
    try:
        parsed = read_uploaded_document(data, document.filename)
        import_into(
            db,
            parsed,
            actor=staffer.actor,
            phone_region=settings.default_phone_region,
            currency=settings.currency,
        )
    except ImportRejected as refusal:
        return _page(request, staffer, rejected=refusal.errors, status_code=400)
    # Its audit event holds the counts the page shows after the redirect.
    (event,) = search_events(
        db, actions=["data.imported"], actor=staffer.actor.label, limit=1
    ).events
    return RedirectResponse(
        f"{PAGE}?imported={event.id}",
        status_code=303,
        # The planner's statistics, once this page's transaction has committed.
        background=BackgroundTask(refresh_statistics, request.app.state.engine),
    )


@router.post("/export")
def export_download(request: Request, staffer: AdminDep, db: PageDb) -> Response:
    """`regdesk export`'s document, as a file to save; kept by no cache (it holds personal
    data and password hashes)."""
    document = export_document(request.app.state.engine)
    record_event(
        db,
        staffer.actor,
        "data.exported",
        details={kind: len(document.get(kind, [])) for kind in SECTIONS if kind != "events"},
    )
    name = f"regdesk-export-{utcnow().date().isoformat()}.json"
    return Response(
        document_text(document),
        media_type="application/json; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
        },
    )
