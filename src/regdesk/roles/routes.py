"""Role API (decisions.md, Resources: roles): HTTP only; queries live in roles/service.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response, Security
from fastapi.responses import JSONResponse
from sqlalchemy import Row
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.deps import CursorsDep, ReadSession, WriteSession
from regdesk.errors import NotFound, api_responses
from regdesk.oauth.guard import bearer
from regdesk.oauth.tokens import LiveToken
from regdesk.pagination import page_document
from regdesk.roles import service
from regdesk.roles.schemas import (
    RoleAssignment,
    RolePage,
    UserRole,
    UserRoleList,
    render_role,
    render_user_role,
)
from regdesk.schemas import json_body, record_id, request_body_openapi
from regdesk.users.routes import user_or_404

router = APIRouter(prefix="/api/v0", tags=["Roles"])

UserReader = Annotated[LiveToken, Security(bearer, scopes=["user:read"])]
RoleUpdater = Annotated[LiveToken, Security(bearer, scopes=["user:roles:update"])]

MAX_ROLE_LIMIT = 1000  # decisions.md: a real client asks for 1000 at once


@router.get(
    "/roles",
    summary="List roles",
    response_model=RolePage,
    responses=api_responses(400, 401, 403),
)
def list_roles(
    token: UserReader,
    session: ReadSession,
    cursors: CursorsDep,
    limit: Annotated[int, Query(ge=1, le=MAX_ROLE_LIMIT)] = 100,
    next_page: Annotated[str | None, Query(alias="nextPage")] = None,
) -> Any:
    after = cursors.decode(next_page, "roles", {}) if next_page else 0
    roles, more = service.list_roles(session, after, limit)
    cursor = cursors.encode("roles", {}, roles[-1].id) if more else None
    return JSONResponse(page_document([render_role(r) for r in roles], cursor))


def _role(session: Session, role_id: str) -> Row[Any]:
    number = record_id(role_id)
    role = service.get_role(session, number) if number is not None else None
    if role is None:
        raise NotFound("Role not found.")
    return role


def _actor(token: LiveToken) -> Actor:
    return Actor(label=f"app:{token.application_id}", user_id=token.user_id)


@router.get(
    "/users/{id}/roles",
    summary="A user's roles",
    response_model=UserRoleList,
    responses=api_responses(401, 403, 404),
)
def user_roles(id: str, token: UserReader, session: ReadSession) -> Any:
    user_id = user_or_404(session, id).id
    return JSONResponse({"data": [render_user_role(r) for r in service.roles_of(session, user_id)]})


@router.put(
    "/users/{id}/roles/{roleId}",
    summary="Give a user a role",
    response_model=UserRole,
    responses=api_responses(400, 401, 403, 404),
    openapi_extra=request_body_openapi(RoleAssignment),
)
def assign_role(
    id: str,
    roleId: str,  # noqa: N803 (the path's own name)
    token: RoleUpdater,
    session: WriteSession,
    body: Annotated[RoleAssignment, json_body(RoleAssignment)],
) -> Any:
    """Idempotent: the user holds the role with this scope afterwards."""
    user_id, role = user_or_404(session, id).id, _role(session, roleId)
    scope = body.scope
    assigned = service.assign_role(session, _actor(token), user_id, role, scope)
    return JSONResponse(render_user_role(assigned))


@router.delete(
    "/users/{id}/roles/{roleId}",
    summary="Take a role from a user",
    status_code=204,
    responses=api_responses(401, 403, 404),
)
def remove_role(
    id: str,
    roleId: str,  # noqa: N803 (the path's own name)
    token: RoleUpdater,
    session: WriteSession,
) -> Response:
    """Idempotent: 204 whether or not the user held the role."""
    user_id, role = user_or_404(session, id).id, _role(session, roleId)
    service.remove_role(session, _actor(token), user_id, role)
    return Response(status_code=204)
