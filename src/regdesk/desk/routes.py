"""The desk's pages under /desk, in the order they must be matched: the named pages (the sale,
badges, statistics) before the person's card, whose path takes any id (`/desk/{id}`)."""

from __future__ import annotations

from fastapi import APIRouter

from regdesk.desk import badge_pages, pages, sale_pages, stats_pages

router = APIRouter()
for named in (sale_pages.router, badge_pages.router, stats_pages.router):
    router.include_router(named)
router.include_router(pages.router)
