"""Volunteer API (api.md 4.3, 4.4): HTTP only; the records are volunteers/records.py's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter

from regdesk.deps import CursorsDep, Reads
from regdesk.errors import NotFound, api_responses
from regdesk.oauth.guard import VolunteerRead
from regdesk.pagination import page_response
from regdesk.quick_reads import QuickRoute, quick
from regdesk.schemas import JSONText, json_body, record_id, request_body_openapi
from regdesk.volunteers import records
from regdesk.volunteers.schemas import Volunteer, VolunteerPage, VolunteerSearch

router = APIRouter(prefix="/api/v0", tags=["Volunteers"], route_class=QuickRoute)


@router.post(
    "/volunteers/search",
    summary="Search volunteers",
    response_model=VolunteerPage,
    responses=api_responses(400, 401, 403),
    openapi_extra=request_body_openapi(VolunteerSearch),
)
@quick
async def search_volunteers(
    token: VolunteerRead,
    reads: Reads,
    cursors: CursorsDep,
    body: Annotated[VolunteerSearch, json_body(VolunteerSearch)],
) -> Any:
    """The current event's volunteers in creation order, `limit` (1 to 100) a page."""
    after = cursors.decode(body.nextPage, "volunteers", {}) if body.nextPage else 0
    found, continue_after = await records.volunteer_page(reads, after, body.limit)
    next_page = (
        cursors.encode("volunteers", {}, continue_after) if continue_after is not None else None
    )
    return page_response(found, next_page)


@router.get(
    "/users/{id}/volunteer",
    summary="A user's volunteer record",
    response_model=Volunteer,
    responses=api_responses(401, 403, 404),
)
@quick
async def user_volunteer(id: str, token: VolunteerRead, reads: Reads) -> Any:
    """The user's application for the current event; 404 when there is none."""
    user_id = record_id(id)
    found, record = (
        await records.volunteer_of_user(reads, user_id) if user_id is not None else (False, None)
    )
    if not found:
        raise NotFound("User not found.")
    if record is None:
        raise NotFound("Volunteer not found.")
    return JSONText(record)
