"""Volunteer API (api.md 4.3, 4.4): HTTP only; the queries live in volunteers/service.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Security
from fastapi.responses import JSONResponse

from regdesk.deps import CursorsDep, ReadSession
from regdesk.errors import NotFound, api_responses
from regdesk.oauth.guard import bearer
from regdesk.oauth.tokens import LiveToken
from regdesk.pagination import page_document
from regdesk.schemas import json_body, request_body_openapi
from regdesk.users.routes import user_or_404
from regdesk.volunteers import service
from regdesk.volunteers.schemas import Volunteer, VolunteerPage, VolunteerSearch

router = APIRouter(prefix="/api/v0", tags=["Volunteers"])

VolunteerReader = Annotated[LiveToken, Security(bearer, scopes=["volunteer:read"])]


@router.post(
    "/volunteers/search",
    summary="Search volunteers",
    response_model=VolunteerPage,
    responses=api_responses(400, 401, 403),
    openapi_extra=request_body_openapi(VolunteerSearch),
)
def search_volunteers(
    token: VolunteerReader,
    session: ReadSession,
    cursors: CursorsDep,
    body: Annotated[VolunteerSearch, json_body(VolunteerSearch)],
) -> Any:
    """The current event's volunteers in creation order, `limit` (1 to 100) a page."""
    after = cursors.decode(body.nextPage, "volunteers", {}) if body.nextPage else 0
    records, continue_after = service.volunteer_page(session, after, body.limit)
    next_page = (
        cursors.encode("volunteers", {}, continue_after) if continue_after is not None else None
    )
    return JSONResponse(page_document(records, next_page))


@router.get(
    "/users/{id}/volunteer",
    summary="A user's volunteer record",
    response_model=Volunteer,
    responses=api_responses(401, 403, 404),
)
def user_volunteer(id: str, token: VolunteerReader, session: ReadSession) -> Any:
    """The user's application for the current event; 404 when there is none."""
    record = service.volunteer_of_user(session, user_or_404(session, id).id)
    if record is None:
        raise NotFound("Volunteer not found.")
    return JSONResponse(record)
