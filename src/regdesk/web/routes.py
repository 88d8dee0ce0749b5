"""The web pages' routes, as one router for `create_app` (operator.md, Web pages)."""

from __future__ import annotations

from fastapi import APIRouter

from regdesk.admin.routes import router as admin_router
from regdesk.web import accounts, consent, volunteering

router = APIRouter(include_in_schema=False)
router.include_router(accounts.router)
router.include_router(consent.router)
router.include_router(volunteering.router)
router.include_router(admin_router)
