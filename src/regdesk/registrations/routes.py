"""Registration API (registrations.md, API): HTTP only; the records are
registrations/records.py's, a user's orders registrations/orders.py's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from regdesk.deps import CursorsDep, Reads, ReadSession
from regdesk.errors import InsufficientScope, NotFound, api_responses
from regdesk.oauth.guard import (
    OwnOrders,
    OwnRegistration,
    RegistrationRead,
    RegistrationReadOrOwn,
    own_registration,
)
from regdesk.oauth.tokens import LiveToken
from regdesk.pagination import page_response
from regdesk.quick_reads import QuickRoute, quick
from regdesk.registrations import records
from regdesk.registrations.orders import orders_of_user
from regdesk.registrations.schemas import (
    Registration,
    RegistrationPage,
    RegistrationSearch,
    UserOrderList,
)
from regdesk.schemas import JSONText, json_body, record_id, request_body_openapi

# The service routes under /api/v0; the current user's without a version (api.md 9).
router = APIRouter(tags=["Registrations"], route_class=QuickRoute)


@router.post(
    "/api/v0/registration/search",
    summary="Search registrations",
    response_model=RegistrationPage,
    responses=api_responses(400, 401, 403),
    openapi_extra=request_body_openapi(RegistrationSearch),
)
@quick
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
    found, continue_after = await records.registration_page(
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
    "/api/v0/users/{id}/registration",
    summary="A user's registration",
    response_model=Registration,
    responses=api_responses(401, 403, 404),
    openapi_extra=own_registration.openapi_extra(),
)
@quick
async def user_registration(id: str, token: RegistrationReadOrOwn, reads: Reads) -> Any:
    """The user's live registration for the current event; 404 when there is none (an unknown
    user too). A user's token with con:read reads its own user's only (403 for another)."""
    user_id = record_id(id)
    record = await records.registration_of_user(reads, user_id) if user_id is not None else None
    if record is None:
        raise NotFound("Registration not found.")
    return JSONText(record)


def _own_user(token: LiveToken, scope: str) -> int:
    """The user who granted the token. Unreachable for a service token, which cannot hold the
    OBO-only scopes these routes need, but said as the 403 it would be."""
    if token.user_id is None:
        raise InsufficientScope([scope])
    return token.user_id


@router.get(
    "/api/users/current/registration",
    summary="Retrieve the current user's registration",
    response_model=Registration,
    responses=api_responses(401, 403, 404),
)
@quick
async def current_user_registration(token: OwnRegistration, reads: Reads) -> Any:
    """The live registration of the user who granted the token (con:read); 404 when there is
    none."""
    record = await records.registration_of_user(reads, _own_user(token, "con:read"))
    if record is None:
        raise NotFound("Registration not found.")
    return JSONText(record)


@router.get(
    "/api/users/current/orders",
    summary="Retrieve the current user's orders",
    response_model=UserOrderList,
    responses=api_responses(401, 403),
)
def current_user_orders(token: OwnOrders, session: ReadSession) -> Any:
    """Every order for the current event of the user who granted the token (pii:finance:read),
    cancelled and refunded ones too, newest first."""
    return JSONResponse({"data": orders_of_user(session, _own_user(token, "pii:finance:read"))})
