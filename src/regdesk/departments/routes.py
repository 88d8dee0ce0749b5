"""Department API (api.md 4.5)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from regdesk.departments.records import departments_json
from regdesk.departments.schemas import Department
from regdesk.deps import Reads
from regdesk.errors import api_responses
from regdesk.oauth.guard import VolunteerRead
from regdesk.quick_reads import QuickRoute, quick

router = APIRouter(prefix="/api/v0", tags=["Volunteers"], route_class=QuickRoute)


@router.get(
    "/volunteers/departments",
    summary="List volunteer departments",
    response_model=list[Department],
    responses=api_responses(401, 403),
)
@quick
async def list_departments(token: VolunteerRead, reads: Reads) -> Any:
    """Every department, publicly visible or not: a bare array, not wrapped (api.md 4.5)."""
    return Response(await departments_json(reads), media_type="application/json")
