"""The current event's products in the admin area (registrations.md, Pages), for
administrators: the list with the places each holds, create, edit.

Prices are typed as amounts in the instance's currency (REGDESK_CURRENCY) and shown with it;
the sale window is typed in UTC. The rules and writes are regdesk.registrations.products',
each with its audit event.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session
from starlette.datastructures import FormData

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import FormDep, admin_page, missing, path_number, see_other, typed
from regdesk.config import Settings
from regdesk.errors import Invalid
from regdesk.events.service import current_event
from regdesk.registrations.models import Product
from regdesk.registrations.money import format_amount
from regdesk.registrations.products import (
    ProductSpec,
    create_product,
    find_current_product,
    product_rows,
    update_product,
)
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/products")

SECTION = "products"
NOTICES = {
    "created": "The product was created.",
    "saved": "The product was saved.",
    "unchanged": "Nothing changed: the product already had these values.",
}


def _currency(request: Request) -> str:
    settings: Settings = request.app.state.settings
    return settings.currency


def _product(request: Request, staffer: Staffer, db: Session, product_id: str) -> Product:
    product = find_current_product(db, path_number(product_id))
    if product is None:
        raise missing(request, staffer, SECTION, "product", product_id)
    return product


def _spec(form: FormData) -> ProductSpec:
    """The form as typed (the description keeps its lines)."""
    description = form.get("description")
    return ProductSpec(
        name=typed(form, "name"),
        display_name=typed(form, "displayName"),
        description=description.replace("\x00", "") if isinstance(description, str) else "",
        price=typed(form, "price"),
        capacity=typed(form, "capacity"),
        opens_at=typed(form, "opensAt"),
        closes_at=typed(form, "closesAt"),
        public=typed(form, "public") == "true",
        position=typed(form, "position"),
    )


@router.get("")
def products_page(request: Request, staffer: AdminDep, db: PageDb, done: str = "") -> HTMLResponse:
    currency = _currency(request)
    event = current_event(db)
    return admin_page(
        request,
        "admin/products.html",
        staffer,
        SECTION,
        rows=product_rows(db, event.id) if event else [],
        money=lambda amount: format_amount(amount, currency),
        notice=NOTICES.get(done),
    )


def _form_page(
    request: Request,
    staffer: Staffer,
    db: Session,
    product: Product | None,
    spec: ProductSpec,
    *,
    errors: dict[str, str] | None = None,
    notice: str | None = None,
) -> HTMLResponse:
    row = None
    if product is not None:
        row = next(r for r in product_rows(db, product.event_id) if r.product.id == product.id)
    return admin_page(
        request,
        "admin/product.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        product=product,
        row=row,
        spec=spec,
        currency=_currency(request),
        errors=errors or {},
        notice=notice,
    )


@router.get("/new")
def new_product_page(request: Request, staffer: AdminDep, db: PageDb) -> HTMLResponse:
    return _form_page(request, staffer, db, None, ProductSpec(""))


@router.post("/new")
def add_product(request: Request, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    spec = _spec(form)
    try:
        product = create_product(db, staffer.actor, spec, _currency(request))
    except Invalid as refused:
        return _form_page(request, staffer, db, None, spec, errors=refused.errors)
    return see_other(f"/admin/products/{product.id}", "created")


@router.get("/{product_id}")
def product_page(
    request: Request, product_id: str, staffer: AdminDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    product = _product(request, staffer, db, product_id)
    spec = ProductSpec.of(product, _currency(request))
    return _form_page(request, staffer, db, product, spec, notice=NOTICES.get(done))


@router.post("/{product_id}")
def change_product(
    request: Request, product_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    product = _product(request, staffer, db, product_id)
    spec = _spec(form)
    try:
        changed = update_product(db, staffer.actor, product, spec, _currency(request))
    except Invalid as refused:
        return _form_page(request, staffer, db, product, spec, errors=refused.errors)
    return see_other(f"/admin/products/{product.id}", "saved" if changed else "unchanged")
