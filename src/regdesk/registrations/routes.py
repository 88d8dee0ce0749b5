"""Registration API (registrations.md, API): HTTP only; the records are
registrations/records.py's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter

from regdesk.deps import CursorsDep, Reads
from regdesk.errors import NotFound, api_responses
from regdesk.oauth.guard import RegistrationRead
from regdesk.pagination import page_response
from regdesk.registrations import records
from regdesk.registrations.schemas import Registration, RegistrationPage, RegistrationSearch
from regdesk.schemas import JSONText, json_body, record_id, request_body_openapi

router = APIRouter(prefix="/api/v0", tags=["Registrations"])


@router.post(
    "/registration/search",
    summary="Search registrations",
    response_model=RegistrationPage,
    responses=api_responses(400, 401, 403),
    openapi_extra=request_body_openapi(RegistrationSearch),
)
async def search_registrations(
    token: RegistrationRead,
    reads: Reads,
    cursors: CursorsDep,
    body: Annotated[RegistrationSearch, json_body(RegistrationSearch)],
) -> Any:
    """The current event's live registrations in id order, `limit` (1 to 100) a page."""
    filters = body.filter.model_dump(exclude_none=True) if body.filter else {}
    after = cursors.decode(body.nextPage, "registrations", filters) if body.nextPage else 0
    user_ids, product_ids = filters.get("userIds"), filters.get("productIds")
    found, continue_after = records.registration_page(
        reads,
        records.RegistrationFilters(
            user_ids=tuple(user_ids) if user_ids is not None else None,
            status=filters.get("status"),
            product_ids=tuple(product_ids) if product_ids is not None else None,
        ),
        after,
        body.limit,
    )
    next_page = (
        cursors.encode("registrations", filters, continue_after)
        if continue_after is not None
        else None
    )
    return page_response(found, next_page)


@router.get(
    "/users/{id}/registration",
    summary="A user's registration",
    response_model=Registration,
    responses=api_responses(401, 403, 404),
)
async def user_registration(id: str, token: RegistrationRead, reads: Reads) -> Any:
    """The user's live registration for the current event; 404 when there is none (an unknown
    user too)."""
    user_id = record_id(id)
    record = records.registration_of_user(reads, user_id) if user_id is not None else None
    if record is None:
        raise NotFound("Registration not found.")
    return JSONText(record)
