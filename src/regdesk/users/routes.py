"""User API (api.md 4.6, 4.7): HTTP only; the queries live in users/service.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Security
from fastapi.responses import JSONResponse
from sqlalchemy import Connection, Row
from sqlalchemy.orm import Session

from regdesk.deps import CursorsDep, Reads
from regdesk.errors import InsufficientScope, InvalidToken, NotFound, api_responses
from regdesk.oauth.guard import bearer
from regdesk.oauth.tokens import LiveToken
from regdesk.pagination import page_response
from regdesk.schemas import JSONText, json_body, record_id, request_body_openapi
from regdesk.users import service
from regdesk.users.schemas import (
    CurrentUser,
    User,
    UserPage,
    UserSearch,
    render_current_user,
)

router = APIRouter(prefix="/api/v0", tags=["Users"])
# api.md 9: the current-user endpoint carries no version segment.
current_router = APIRouter(prefix="/api/users", tags=["Users"])

UserReader = Annotated[LiveToken, Security(bearer, scopes=["user:read"])]
BasicProfile = Annotated[LiveToken, Security(bearer, scopes=["pii:basic"])]


def user_or_404(bind: Session | Connection, id: str) -> Row[Any]:
    """The user a path names; 404 when the id is not a decimal integer or names nobody."""
    user_id = record_id(id)
    user = service.get_user(bind, user_id) if user_id is not None else None
    if user is None:
        raise NotFound("User not found.")
    return user


@router.get(
    "/users/{id}",
    summary="Get user",
    response_model=User,
    responses=api_responses(401, 403, 404),
)
async def get_user(id: str, token: UserReader, reads: Reads) -> Any:
    """One user (api.md 2.2). An id that is not a decimal integer, or no such user: 404."""
    user_id = record_id(id)
    record = service.user_document(reads, user_id) if user_id is not None else None
    if record is None:
        raise NotFound("User not found.")
    return JSONText(record)


@router.post(
    "/users/search",
    summary="Search users",
    response_model=UserPage,
    responses=api_responses(400, 401, 403),
    openapi_extra=request_body_openapi(UserSearch),
)
async def search_users(
    token: UserReader,
    reads: Reads,
    cursors: CursorsDep,
    body: Annotated[UserSearch, json_body(UserSearch)],
) -> Any:
    """Users in creation order, at most `limit` (1 to 100) a page (api.md 4.7)."""
    filters = body.filter.model_dump(exclude_none=True) if body.filter else {}
    after = cursors.decode(body.nextPage, "users", filters) if body.nextPage else 0
    records, continue_after = service.search_users(
        reads,
        service.UserFilters(
            role_id=filters.get("roleId"),
            email=filters.get("email"),
            username=filters.get("username"),
        ),
        after,
        body.limit,
    )
    next_page = (
        cursors.encode("users", filters, continue_after) if continue_after is not None else None
    )
    return page_response(records, next_page)


@current_router.get(
    "/current",
    summary="Retrieve current user",
    response_model=CurrentUser,
    response_model_exclude_unset=True,
    responses=api_responses(401, 403),
)
async def current_user(token: BasicProfile, reads: Reads) -> Any:
    """The user who granted the token (api.md 4.8): a user's token with pii:basic only."""
    if token.user_id is None:  # unreachable today: no service may hold pii:basic
        raise InsufficientScope(["pii:basic"])
    with reads.engine.connect() as connection:
        user = service.get_user(connection, token.user_id)
        if user is None:
            raise InvalidToken()
        facts = service.current_user_facts(connection, token.user_id)
    return JSONResponse(
        render_current_user(
            user,
            token.scopes,
            is_volunteer=facts["is_volunteer"],
            is_department_lead=facts["is_department_lead"],
            roles=facts["roles"],
            permissions=facts["permissions"],
        )
    )
