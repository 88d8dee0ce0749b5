"""The admin area's router: one module per kind of record, each with its own sub-router."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from regdesk.admin import (
    applications,
    audit,
    departments,
    flags,
    mail,
    options,
    orders,
    products,
    registrations,
    roles,
    transfer,
    users,
    volunteers,
    webhooks,
)
from regdesk.admin.access import StaffDep
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb
from regdesk.webhooks.endpoints import disabled_by_failure

router = APIRouter(prefix="/admin", include_in_schema=False)


@router.get("")
def home(request: Request, staffer: StaffDep, db: PageDb) -> HTMLResponse:
    """Where an organizer starts: what they may manage, in the admin area's navigation; and,
    for an administrator, the webhook endpoints regdesk disabled for failing (events.md)."""
    failing = disabled_by_failure(db) if staffer.is_admin else []
    return render(
        request,
        "admin/home.html",
        {"visitor": staffer.visitor, "staffer": staffer, "failing_endpoints": failing},
    )


router.include_router(applications.router)
router.include_router(webhooks.router)
router.include_router(transfer.router)
router.include_router(audit.router)
router.include_router(mail.router)
router.include_router(options.router)
router.include_router(options.registration_router)
router.include_router(flags.router)
router.include_router(products.router)
router.include_router(orders.router)
router.include_router(registrations.router)
router.include_router(volunteers.router)
router.include_router(users.router)
router.include_router(roles.router)
router.include_router(departments.router)
