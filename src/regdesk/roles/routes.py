"""Role API (decisions.md, Resources: roles): the roles themselves; a user's roles are
users/routes.py's. HTTP only; queries live in roles/service.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from regdesk.deps import CursorsDep, ReadSession
from regdesk.errors import api_responses
from regdesk.oauth.guard import UserRead
from regdesk.pagination import page_document
from regdesk.roles import service
from regdesk.roles.schemas import RolePage, render_role

router = APIRouter(prefix="/api/v0", tags=["Roles"])

MAX_ROLE_LIMIT = 1000  # decisions.md: a real client asks for 1000 at once


@router.get(
    "/roles",
    summary="List roles",
    response_model=RolePage,
    responses=api_responses(400, 401, 403),
)
def list_roles(
    token: UserRead,
    session: ReadSession,
    cursors: CursorsDep,
    limit: Annotated[int, Query(ge=1, le=MAX_ROLE_LIMIT)] = 100,
    next_page: Annotated[str | None, Query(alias="nextPage")] = None,
) -> Any:
    after = cursors.decode(next_page, "roles", {}) if next_page else 0
    roles, more = service.list_roles(session, after, limit)
    cursor = cursors.encode("roles", {}, roles[-1].id) if more else None
    return JSONResponse(page_document([render_role(r) for r in roles], cursor))
