"""The desk's pages under /desk, in the order they must be matched: the named pages (the sale,
badges, statistics) before the person's card, whose path takes any id (`/desk/{id}`)."""

from __future__ import annotations

from regdesk.desk import badge_pages, pages, sale_pages, stats_pages

# Each router's own routes, which the app takes as they are, in this order (app.ROUTERS).
ROUTERS = (sale_pages.router, badge_pages.router, stats_pages.router, pages.router)
