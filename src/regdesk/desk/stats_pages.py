"""The desk's statistics page for organizers (issue 17): desk staff and administrators see
check-ins per hour, each product's check-ins against its sales, and who is still to come. The
figures are regdesk.desk.stats' aggregates; this page only shows them."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from regdesk.desk.access import DeskDep
from regdesk.desk.frame import desk_page
from regdesk.desk.stats import desk_stats
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/desk", include_in_schema=False)


@router.get("/stats")
def stats_page(request: Request, staffer: DeskDep, db: PageDb) -> HTMLResponse:
    return desk_page(request, staffer, "desk/stats.html", "stats", stats=desk_stats(db))
