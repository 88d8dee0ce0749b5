"""registrations.md's sections of `regdesk export`: the current event's products, flags,
registration options and registrations (with their orders), as the import reads them.

Products are in display order, flags and registrations by id, options in the order the form
asks them; every registration, ended ones too, with its order's number, status, amount and
payment, its answers, flags, ticket code and check-in.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, select

from regdesk.formats import format_timestamp
from regdesk.transfer.document import SALES_SECTIONS
from regdesk.transfer.existing import (
    flag_links,
    orders,
    products,
    registration_answers,
    registration_flags,
    registration_options,
    registrations,
    users,
)


def sales_sections(conn: Connection, event_id: int | None) -> dict[str, list[dict[str, Any]]]:
    if event_id is None:
        return {name: [] for name in SALES_SECTIONS}
    return {
        "products": _products(conn, event_id),
        "registrationFlags": [
            {"id": row.id, "shortName": row.short_name}
            for row in conn.execute(
                select(registration_flags)
                .where(registration_flags.c.event_id == event_id)
                .order_by(registration_flags.c.id)
            )
        ],
        "registrationOptions": [
            {"name": row.name, "type": row.type, "choices": row.choices}
            for row in conn.execute(
                select(registration_options)
                .where(registration_options.c.event_id == event_id)
                .order_by(registration_options.c.position, registration_options.c.id)
            )
        ],
        "registrations": _registrations(conn, event_id),
    }


def _products(conn: Connection, event_id: int) -> list[dict[str, Any]]:
    return [
        {
            "id": row.id,
            "name": row.name,
            "displayName": row.display_name,
            "description": row.description,
            "price": row.price,
            "capacity": row.capacity,
            "opensAt": _timestamp(row.opens_at),
            "closesAt": _timestamp(row.closes_at),
            "public": row.public,
            "position": row.position,
        }
        for row in conn.execute(
            select(products)
            .where(products.c.event_id == event_id)
            .order_by(products.c.position, products.c.id)
        )
    ]


def _registrations(conn: Connection, event_id: int) -> list[dict[str, Any]]:
    of_event = select(registrations.c.id).where(registrations.c.event_id == event_id)
    flags: defaultdict[int, list[str]] = defaultdict(list)
    for row in conn.execute(
        select(flag_links.c.registration_id, registration_flags.c.short_name)
        .join(registration_flags, registration_flags.c.id == flag_links.c.flag_id)
        .where(flag_links.c.registration_id.in_(of_event))
        .order_by(flag_links.c.registration_id, registration_flags.c.id)
    ):
        flags[row.registration_id].append(row.short_name)
    answers: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for answer in conn.execute(
        select(
            registration_answers.c.registration_id,
            registration_options.c.name,
            registration_options.c.type,
            registration_answers.c.value,
        )
        .join(registration_options, registration_options.c.id == registration_answers.c.option_id)
        .where(registration_answers.c.registration_id.in_(of_event))
        .order_by(registration_options.c.position, registration_options.c.id)
    ):
        answers[answer.registration_id].append(
            {"name": answer.name, "type": answer.type, "value": answer.value}
        )
    checkers = users.alias("checkers")
    query = (
        select(
            registrations,
            orders.c.number,
            orders.c.status,
            orders.c.amount,
            orders.c.currency,
            orders.c.payment_method,
            orders.c.payment_reference,
            orders.c.paid_at,
            users.c.username,
            products.c.name.label("product"),
            checkers.c.username.label("checker"),
        )
        .join(orders, orders.c.id == registrations.c.order_id)
        .join(users, users.c.id == registrations.c.user_id)
        .join(products, products.c.id == orders.c.product_id)
        .outerjoin(checkers, checkers.c.id == registrations.c.checked_in_by)
        .where(registrations.c.event_id == event_id)
        .order_by(registrations.c.id)
    )
    return [
        {
            "id": row.id,
            "orderId": row.number,
            "user": row.username,
            "product": row.product,
            "status": row.status,
            "amount": row.amount,
            "currency": row.currency,
            "paymentMethod": row.payment_method,
            "paymentReference": row.payment_reference,
            "paidAt": _timestamp(row.paid_at),
            "badgeName": row.badge_name,
            "ticketCode": row.ticket_code,
            "checkedInAt": _timestamp(row.checked_in_at),
            "checkedInBy": row.checker,
            "options": answers[row.id],
            "flags": flags[row.id],
            "createdAt": format_timestamp(row.created_at),
            "updatedAt": format_timestamp(row.updated_at),
        }
        for row in conn.execute(query)
    ]


def _timestamp(value: Any) -> str | None:
    return None if value is None else format_timestamp(value)
