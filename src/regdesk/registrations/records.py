"""Registration records of the API (registrations.md, API): the current event's live
registrations, read a page at a time, kept rendered as documents (regdesk.documents).

A page is one query whatever its depth: the ready documents of the next live registrations
(keyset on ix_registrations_event_id_id). Rendering a record from its tables, for the documents
and for any a reader finds missing, costs three queries for a whole batch: the registrations
with their orders, products and users, then the flags, then the option answers of the batch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from regdesk.db import ID_MAX, among, core_connection
from regdesk.db.driver import LoopReads
from regdesk.documents import Document, Page, Stale
from regdesk.documents.reading import complete, read_page
from regdesk.events.models import CURRENT_EVENT_ID, in_current_event
from regdesk.formats import as_json
from regdesk.registrations.models import (
    Order,
    Product,
    Registration,
    RegistrationFlag,
    RegistrationFlagLink,
    RegistrationOption,
    RegistrationOptionValue,
)
from regdesk.registrations.schemas import render_registration
from regdesk.users.models import User
from regdesk.users.records import SHOWN, SHOWN_COLUMNS

Bind = Session | Connection
BATCH = 2000

REGISTRATION_WITH_ORDER = (
    select(
        Registration.id.label("registration_id"),
        Registration.created_at.label("registration_created_at"),
        Registration.updated_at.label("registration_updated_at"),
        Registration.badge_name,
        Order.number.label("order_number"),
        Order.status.label("order_status"),
        Product.id.label("product_id"),
        Product.name.label("product_name"),
        Product.display_name.label("product_display_name"),
        *SHOWN,
    )
    .join(Order, Order.id == Registration.order_id)
    .join(Product, Product.id == Order.product_id)
    .join(User, User.id == Registration.user_id)
)


def registration_documents(bind: Bind, ids: Iterable[int]) -> dict[int, str]:
    """The JSON records of the registrations with these ids (those that exist), from the
    tables."""
    wanted = sorted(ids)
    rendered = {}
    bind = core_connection(bind)
    for start in range(0, len(wanted), BATCH):
        chunk = wanted[start : start + BATCH]
        batch = REGISTRATION_WITH_ORDER.where(among(bind, Registration.id, chunk))
        rows = bind.execute(batch).all()
        flags = defaultdict(list)
        for flag in bind.execute(
            select(
                RegistrationFlagLink.registration_id,
                RegistrationFlag.id.label("flag_id"),
                RegistrationFlag.short_name,
            )
            .join(RegistrationFlag, RegistrationFlag.id == RegistrationFlagLink.flag_id)
            .where(among(bind, RegistrationFlagLink.registration_id, chunk))
            .order_by(RegistrationFlagLink.registration_id, RegistrationFlag.id)
        ):
            flags[flag.registration_id].append(flag)
        options = defaultdict(list)
        for answer in bind.execute(
            select(
                RegistrationOptionValue.registration_id,
                RegistrationOptionValue.value,
                RegistrationOption.name,
                RegistrationOption.type,
            )
            .join(RegistrationOption, RegistrationOption.id == RegistrationOptionValue.option_id)
            .where(among(bind, RegistrationOptionValue.registration_id, chunk))
            .order_by(
                RegistrationOptionValue.registration_id,
                RegistrationOption.position,
                RegistrationOption.id,
            )
        ):
            options[answer.registration_id].append(answer)
        for row in rows:
            record = render_registration(
                row, flags[row.registration_id], options[row.registration_id]
            )
            rendered[row.registration_id] = as_json(record)
    return rendered


DOCUMENT = Document(
    kind="registration",
    records="registrations",
    render=registration_documents,
    stale=(
        Stale(
            "users",
            "SELECT id FROM registrations WHERE user_id = R.id",
            ("UPDATE",),
            SHOWN_COLUMNS,
        ),
        Stale(
            "registrations",
            "SELECT R.id",
            ("INSERT", "UPDATE"),
            ("id", "user_id", "order_id", "badge_name", "created_at", "updated_at"),
        ),
        Stale(
            "orders",
            "SELECT id FROM registrations WHERE order_id = R.id",
            ("UPDATE",),
            ("status", "number", "product_id"),  # the product changes while unpaid
        ),
        Stale(
            "products",
            "SELECT r.id FROM registrations r JOIN orders o ON o.id = r.order_id"
            " WHERE o.product_id = R.id",
            ("UPDATE",),
            ("name", "display_name"),
        ),
        Stale("registration_flag_links", "SELECT R.registration_id"),
        Stale(
            "registration_flags",
            "SELECT registration_id FROM registration_flag_links WHERE flag_id = R.id",
            ("UPDATE",),
            ("short_name",),
        ),
        Stale("registration_option_values", "SELECT R.registration_id"),
        Stale(
            "registration_options",
            "SELECT registration_id FROM registration_option_values WHERE option_id = R.id",
            ("UPDATE",),
            ("name", "type", "position"),
        ),
    ),
)


# The user's live registration for the current event (a live one: its order unpaid or paid;
# registrations.md: a cancelled or refunded one is not shown), with its stored body unless queued.
OF_USER = DOCUMENT.read(
    f"""
    SELECT r.id, {{body}}
    FROM registrations r{{documents}}
    WHERE r.event_id = {CURRENT_EVENT_ID} AND r.user_id = :user_id AND r.ended_at IS NULL
    """,  # noqa: S608 (the current event's subquery)
    "r.id",
)


@dataclass(frozen=True)
class RegistrationFilters:
    user_ids: tuple[int, ...] | None = None
    status: str | None = None
    product_ids: tuple[int, ...] | None = None


@cache
def _search_query(users: int | None, status: bool, products: int | None) -> Page:
    """The page query for one shape of filter (how many user and product ids, whether a
    status), members combined with AND, seeking ix_registrations_event_id_id in id order.

    A page with no filter is planned once (events.models.in_current_event). A filtered one is
    planned as PostgreSQL chooses (Query.plan_once): a status or a product may hold a few
    registrations of many, which ix_orders_product_id_status then finds (1 ms against 59 for a
    product's refunded orders, planned once for any values), and a few users', which
    ix_registrations_user_id_event_id finds."""
    filtered = users is not None or status or products is not None

    def form(sqlite: bool) -> str:
        # A filtered page keeps SQLite's `=` form on PostgreSQL too, planned for its values.
        current, order = in_current_event("r", sqlite=sqlite or filtered)
        sql = "SELECT r.id, {body} FROM registrations r"
        if status or products is not None:
            sql += " JOIN orders o ON o.id = r.order_id"
        sql += "{documents}"
        sql += f" WHERE {current} AND r.ended_at IS NULL AND r.id > :after"
        if users is not None:
            sql += f" AND r.user_id IN ({', '.join(f':user{i}' for i in range(users))})"
        if status:
            sql += " AND o.status = :status"
        if products is not None:
            sql += f" AND o.product_id IN ({', '.join(f':product{i}' for i in range(products))})"
        return f"{sql} ORDER BY {order} LIMIT :limit"

    return DOCUMENT.page(form(False), "r.id", plan_once=not filtered, sqlite=form(True))


def _storable(ids: tuple[int, ...]) -> list[int]:
    """The ids a record can have (PostgreSQL could not compare the others), each once."""
    return sorted({id_ for id_ in ids if 0 < id_ <= ID_MAX})


async def registration_page(
    reads: LoopReads, filters: RegistrationFilters, after_id: int, limit: int
) -> tuple[bytes, int | None]:
    """The JSON records of the current event's live registrations after `after_id` that match
    every filter, in id order, joined by commas, and the id to continue after when more
    follow."""
    parameters: dict[str, object] = {"after": after_id}
    users = products = None
    if filters.user_ids is not None:
        wanted = _storable(filters.user_ids)
        parameters.update((f"user{i}", id_) for i, id_ in enumerate(wanted))
        users = len(wanted)
    if filters.product_ids is not None:
        wanted = _storable(filters.product_ids)
        parameters.update((f"product{i}", id_) for i, id_ in enumerate(wanted))
        products = len(wanted)
    if users == 0 or products == 0:
        return b"", None  # no such record: `IN ()` is no SQL
    if filters.status is not None:
        parameters["status"] = filters.status
    query = _search_query(users, filters.status is not None, products)
    return await read_page(reads, query, DOCUMENT, limit, **parameters)


async def registration_of_user(reads: LoopReads, user_id: int) -> str | None:
    """The JSON record of the user's live registration for the current event, if any."""
    row = await reads.first(OF_USER, user_id=user_id)
    found = complete(reads, [(row[0], row[1])], DOCUMENT) if row is not None else []
    return found[0] if found else None
