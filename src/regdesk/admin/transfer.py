"""Import and export from the browser (issue 8): the same documents as `regdesk import` and
`regdesk export`, through the same functions.

An import is all or nothing: a refused document is shown with each error's position and field,
and nothing is written. The upload's size is checked before its body is read (`MAX_UPLOAD`);
larger documents are for `regdesk import` on the server.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, File, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.background import BackgroundTask

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import staff_context
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import record_event, search_events
from regdesk.config import Settings
from regdesk.db import refresh_statistics, utcnow
from regdesk.transfer.exporter import document_text, export_document
from regdesk.transfer.importer import ImportRejected, import_into, read_uploaded_document
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb

MAX_UPLOAD = 10 * 1024 * 1024  # about 20,000 users
MAX_UPLOAD_TEXT = "10 MB"
FORM_OVERHEAD = 64 * 1024  # the multipart framing and the form's other fields
PAGE = "/admin/transfer"
SECTIONS = ("roles", "users", "departments", "events", "volunteers")


class SizeLimitedRoute(APIRoute):
    """A form action whose request is refused, before its body is read, when its declared
    size (Content-Length) is over the limit or not given; the page then says why."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def limited(request: Request) -> Response:
            if request.method == "POST":
                length = request.headers.get("content-length", "")
                if not length.isdigit() or int(length) > MAX_UPLOAD + FORM_OVERHEAD:
                    return RedirectResponse(f"{PAGE}?too_large", status_code=303)
            return await handle(request)

        return limited


router = APIRouter(prefix="/transfer", route_class=SizeLimitedRoute)


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
    return [(kind, event.details[kind]) for kind in SECTIONS if kind in event.details]


@router.post("/import")
def import_upload(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    document: Annotated[UploadFile | None, File()] = None,
) -> Response:
    """The uploaded document through `regdesk import`'s importer, in this page's transaction."""
    if document is None or not document.filename:
        return _page(request, staffer, problem="Choose a file to import.", status_code=400)
    data = document.file.read(MAX_UPLOAD + 1)
    if len(data) > MAX_UPLOAD:
        return RedirectResponse(f"{PAGE}?too_large", status_code=303)
    settings: Settings = request.app.state.settings
    try:
        parsed = read_uploaded_document(data, document.filename)
        import_into(db, parsed, actor=staffer.actor, phone_region=settings.default_phone_region)
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
