"""The current user (api.md 4.8): the record of the person who granted the token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from regdesk.accounts.current import current_user_facts
from regdesk.deps import Reads
from regdesk.errors import InsufficientScope, InvalidToken, api_responses
from regdesk.oauth.guard import BasicProfile
from regdesk.users.records import get_user
from regdesk.users.schemas import CurrentUser, render_current_user

# api.md 9: the current-user endpoint carries no version segment.
router = APIRouter(prefix="/api/users", tags=["Users"])


@router.get(
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
        user = get_user(connection, token.user_id)
        if user is None:
            raise InvalidToken()
        facts = current_user_facts(connection, token.user_id)
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
