"""Checking registrations.md's sections of an import document: the event's `products`,
`registrationFlags`, `registrationOptions` and `registrations` (importer.py describes the rest).

They belong to the event the document's volunteers belong to: the document's `event`, else
the current one (made if there is none). Products match by `name`, flags by `shortName`,
registration options by `name`, registrations by `orderId`; a registration without `orderId`
is its user's live registration when they hold one, else a new order numbered at import.

- A product: `name`, `displayName`, `description`, `price`, `capacity` (null: no limit),
  `opensAt`, `closesAt`, `public`, `position`, and `id` as users' ids (kept when new). A flag:
  `shortName` (and `id`); a registration option: `name`, `type`, `choices`, as event options.
- A registration: `user` (a username or an e-mail address of a user in the database or the
  document), `product` (a name), `orderId` (decimal digits; an integer is read too), `status`
  (`unpaid` when new and not given), `amount` (default: the product's price), `paymentMethod`,
  `paymentReference`, `paidAt` (default: the import's time, for a paid order), `badgeName`,
  `ticketCode` (made when new and not given), `checkedInAt`, `checkedInBy` (a user, like
  `user`), `options` (answers like a volunteer's: an option the event does not ask yet is
  added to it), `flags` (short names), `createdAt`, `updatedAt`, and `id`. An order keeps its
  user; it takes another product (and, unless given, that product's price).
- Amounts are integers in the instance currency's minor units, never a fraction. A paid or
  refunded order names its `paymentMethod`; an unpaid or cancelled one has none, nor a
  `paymentReference` or `paidAt`.

The rules of registrations.md hold for an import as for a sale: no product sold past its
capacity, and at most one live (unpaid or paid) registration per user and event, counting the
database's orders and the document's together; a row that would break one is named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from regdesk.fields import boolean, text, timestamp
from regdesk.transfer.document import (
    PRODUCT_KEYS,
    REGISTRATION_FLAG_KEYS,
    REGISTRATION_OPTION_KEYS,
    SALES_SECTIONS,
    Errors,
)
from regdesk.transfer.existing import (
    Existing,
    ExistingSales,
    Row,
    products,
    registration_flags,
)
from regdesk.transfer.records import (
    OptionSpec,
    check_id,
    declare_option,
    once,
    records,
)
from regdesk.transfer.registration_rows import OPTION_WHAT, RegistrationRecord, Rows
from regdesk.transfer.registration_values import amount, description, places, position


@dataclass
class ProductRecord:
    label: str
    name: str
    id: int | None  # an explicit id for a new product
    values: dict[str, Any]


@dataclass
class FlagRecord:
    label: str
    short_name: str
    id: int | None


@dataclass
class Sales:
    products: list[ProductRecord]
    flags: list[FlagRecord]
    # Every registration option the event will have: the stored ones, those the document
    # declares, then those its registrations answer without a declaration.
    options: dict[str, OptionSpec]
    registrations: list[RegistrationRecord]


def wants_sales(document: Any) -> bool:
    """Whether the document has anything for registrations.md's sections."""
    return isinstance(document, dict) and any(document.get(s) for s in SALES_SECTIONS)


def check_sales(
    document: dict[str, Any],
    errors: Errors,
    existing: Existing,
    event_name: str | None,
    documented: dict[str, str | None],
    currency: str,
) -> Sales | None:
    """The sections checked (None when the document has none, or no event to hold them).
    `documented`: the document's users, lower(username) -> the e-mail it gives them, if any;
    `currency`: the instance's, which new orders are in."""
    if event_name is None or not wants_sales(document):
        return None
    people = people_of(existing, documented)
    stored_event = existing.events.get(event_name)
    event_id: int | None = stored_event["id"] if stored_event else None
    sold = existing.sales
    # A new event has none of these yet (no stored id is 0).
    stored_products = sold.products.get(event_id or 0, {})
    stored_flags = sold.flags.get(event_id or 0, {})
    product_records = _check_products(document, errors, sold, stored_products)
    flag_records = _check_flags(document, errors, sold, stored_flags)
    catalogue = _check_options(document, errors, sold.options.get(event_id or 0, {}))
    capacities = {name: row["capacity"] for name, row in stored_products.items()}
    for product in product_records:
        if "capacity" in product.values or product.name not in capacities:
            capacities[product.name] = product.values.get("capacity")
    rows = Rows(
        errors,
        existing,
        event_id,
        people,
        capacities=capacities,
        product_names={row["id"]: name for name, row in stored_products.items()},
        flags={*stored_flags, *(f.short_name for f in flag_records)},
        options=catalogue,
        currency=currency,
    )
    registration_records = rows.check(document)
    return Sales(product_records, flag_records, catalogue, registration_records)


# --- products, flags and options ----------------------------------------------------------------


def _check_products(
    document: dict[str, Any], errors: Errors, sold: ExistingSales, stored: dict[str, Row]
) -> list[ProductRecord]:
    result = []
    names: dict[Any, str] = {}
    ids: dict[Any, str] = {}
    holders = sold.product_names_by_id()
    for record in records(document, "products", errors, PRODUCT_KEYS):
        record.require("name")
        record.column("name", "name", text(products.c.name, nonempty=True))
        record.column("displayName", "display_name", text(products.c.display_name), nullable=True)
        record.column("description", "description", description)
        record.column("price", "price", amount)
        record.column("capacity", "capacity", places, nullable=True)
        record.column("opensAt", "opens_at", timestamp, nullable=True)
        record.column("closesAt", "closes_at", timestamp, nullable=True)
        record.column("public", "public", boolean)
        record.column("position", "position", position)
        name = record.values.get("name")
        row = stored.get(name) if name else None
        if name and row is None:
            record.require("price")
        opens = record.values.get("opens_at", row["opens_at"] if row else None)
        closes = record.values.get("closes_at", row["closes_at"] if row else None)
        if opens and closes and closes <= opens:
            record.error("closesAt", "is not after opensAt")
        product_id = check_id(record, row, holders, ids, "product")
        if name is None:
            continue
        once(record, "name", name, names, "product")
        result.append(ProductRecord(record.label, name, product_id, record.values))
    return result


def _check_flags(
    document: dict[str, Any], errors: Errors, sold: ExistingSales, stored: dict[str, Row]
) -> list[FlagRecord]:
    result = []
    names: dict[Any, str] = {}
    ids: dict[Any, str] = {}
    holders = sold.flag_names_by_id()
    for record in records(document, "registrationFlags", errors, REGISTRATION_FLAG_KEYS):
        record.require("shortName")
        name = record.get("shortName", text(registration_flags.c.short_name, nonempty=True))
        flag_id = check_id(record, stored.get(name) if name else None, holders, ids, "flag")
        if name is None:
            continue
        once(record, "shortName", name, names, "flag")
        result.append(FlagRecord(record.label, name, flag_id))
    return result


def _check_options(
    document: dict[str, Any], errors: Errors, stored: dict[str, Row]
) -> dict[str, OptionSpec]:
    ordered = sorted(stored.values(), key=lambda row: (row["position"], row["id"]))
    catalogue = {
        row["name"]: OptionSpec(row["name"], row["type"], row["choices"]) for row in ordered
    }
    declared: dict[Any, str] = {}
    for record in records(document, "registrationOptions", errors, REGISTRATION_OPTION_KEYS):
        declare_option(record, catalogue, declared, OPTION_WHAT)
    return catalogue


def people_of(existing: Existing, documented: dict[str, str | None]) -> dict[str, str]:
    """lower(username) and lower(e-mail) -> lower(username), for the database's users and the
    document's (`documented`: lower(username) -> the e-mail the document gives, if any)."""
    people = {key: key for key in existing.users}
    people.update(
        {email: existing.user_names_by_id[i].lower() for email, i in existing.user_emails.items()}
    )
    for key, email in documented.items():
        people[key] = key
        if email is not None:
            people[email.lower()] = key
    return people
