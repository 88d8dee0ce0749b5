"""User API (api.md 4.6, 4.7) and a user's roles (decisions.md, Resources: roles): HTTP only;
the records are users/records.py's, the role writes roles/service.py's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from sqlalchemy import Connection, Row
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.deps import CursorsDep, Reads, ReadSession, WriteSession
from regdesk.errors import NotFound, api_responses
from regdesk.oauth.guard import UserRead, UserRolesUpdate
from regdesk.oauth.tokens import LiveToken
from regdesk.pagination import page_response
from regdesk.quick_reads import QuickRoute, quick
from regdesk.roles import service as roles_service
from regdesk.roles.schemas import RoleAssignment, UserRole, UserRoleList, render_user_role
from regdesk.schemas import JSONText, json_body, record_id, request_body_openapi
from regdesk.users import records
from regdesk.users.schemas import User, UserPage, UserSearch

router = APIRouter(prefix="/api/v0", tags=["Users"], route_class=QuickRoute)


def user_or_404(bind: Session | Connection, id: str) -> Row[Any]:
    """The user a path names; 404 when the id is not a decimal integer or names nobody."""
    user_id = record_id(id)
    user = records.get_user(bind, user_id) if user_id is not None else None
    if user is None:
        raise NotFound("User not found.")
    return user


@router.get(
    "/users/{id}",
    summary="Get user",
    response_model=User,
    responses=api_responses(401, 403, 404),
)
@quick
async def get_user(id: str, token: UserRead, reads: Reads) -> Any:
    """One user (api.md 2.2). An id that is not a decimal integer, or no such user: 404."""
    user_id = record_id(id)
    record = await records.user_document(reads, user_id) if user_id is not None else None
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
@quick
async def search_users(
    token: UserRead,
    reads: Reads,
    cursors: CursorsDep,
    body: Annotated[UserSearch, json_body(UserSearch)],
) -> Any:
    """Users in creation order, at most `limit` (1 to 100) a page (api.md 4.7)."""
    filters = body.filter.model_dump(exclude_none=True) if body.filter else {}
    after = cursors.decode(body.nextPage, "users", filters) if body.nextPage else 0
    found, continue_after = await records.search_users(
        reads,
        records.UserFilters(
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
    return page_response(found, next_page)


def _role(session: Session, role_id: str) -> Row[Any]:
    number = record_id(role_id)
    role = roles_service.get_role(session, number) if number is not None else None
    if role is None:
        raise NotFound("Role not found.")
    return role


def _actor(token: LiveToken) -> Actor:
    return Actor(label=f"app:{token.application_id}", user_id=token.user_id)


@router.get(
    "/users/{id}/roles",
    tags=["Roles"],
    summary="A user's roles",
    response_model=UserRoleList,
    responses=api_responses(401, 403, 404),
)
def user_roles(id: str, token: UserRead, session: ReadSession) -> Any:
    user_id = user_or_404(session, id).id
    return JSONResponse(
        {"data": [render_user_role(r) for r in roles_service.roles_of(session, user_id)]}
    )


@router.put(
    "/users/{id}/roles/{roleId}",
    tags=["Roles"],
    summary="Give a user a role",
    response_model=UserRole,
    responses=api_responses(400, 401, 403, 404),
    openapi_extra=request_body_openapi(RoleAssignment),
)
def assign_role(
    id: str,
    roleId: str,  # noqa: N803 (the path's own name)
    token: UserRolesUpdate,
    session: WriteSession,
    body: Annotated[RoleAssignment, json_body(RoleAssignment)],
) -> Any:
    """Idempotent: the user holds the role with this scope afterwards."""
    user_id, role = user_or_404(session, id).id, _role(session, roleId)
    scope = body.scope
    assigned = roles_service.assign_role(session, _actor(token), user_id, role, scope)
    return JSONResponse(render_user_role(assigned))


@router.delete(
    "/users/{id}/roles/{roleId}",
    tags=["Roles"],
    summary="Take a role from a user",
    status_code=204,
    responses=api_responses(401, 403, 404),
)
def remove_role(
    id: str,
    roleId: str,  # noqa: N803 (the path's own name)
    token: UserRolesUpdate,
    session: WriteSession,
) -> Response:
    """Idempotent: 204 whether or not the user held the role."""
    user_id, role = user_or_404(session, id).id, _role(session, roleId)
    roles_service.remove_role(session, _actor(token), user_id, role)
    return Response(status_code=204)
