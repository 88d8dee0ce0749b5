"""The current user (api.md 4.8): the record of the person who granted the token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from regdesk.accounts.current import current_user_json
from regdesk.deps import Reads
from regdesk.errors import InsufficientScope, InvalidToken, api_responses
from regdesk.oauth.guard import BasicProfile
from regdesk.quick_reads import QuickRoute, quick
from regdesk.users.schemas import CurrentUser

# api.md 9: the current-user endpoint carries no version segment.
router = APIRouter(prefix="/api/users", tags=["Users"], route_class=QuickRoute)


@router.get(
    "/current",
    summary="Retrieve current user",
    response_model=CurrentUser,
    response_model_exclude_unset=True,
    responses=api_responses(401, 403),
)
@quick
async def current_user(token: BasicProfile, reads: Reads) -> Any:
    """The user who granted the token (api.md 4.8): a user's token with pii:basic only."""
    if token.user_id is None:  # unreachable today: no service may hold pii:basic
        raise InsufficientScope(["pii:basic"])
    body = await current_user_json(reads, token.user_id, token.scopes)
    if body is None:
        raise InvalidToken()
    return Response(body, media_type="application/json")
