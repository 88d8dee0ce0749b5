"""Checking the `registrations` section of an import document (transfer/registrations.py says
what it holds), row by row, then the places and live registrations its rows take, counted with
the database's orders: registrations.md's rules hold for an import as for a sale.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from regdesk.fields import array, describe, one_of, text, timestamp
from regdesk.registrations.models import LIVE_STATUSES, OrderStatus, PaymentMethod
from regdesk.registrations.service import badge_name
from regdesk.transfer.document import REGISTRATION_KEYS, Errors
from regdesk.transfer.existing import Existing, Row, orders, products, users
from regdesk.transfer.records import (
    OptionSpec,
    Record,
    check_id,
    check_option_answers,
    once,
    records,
)
from regdesk.transfer.registration_values import amount, order_number, ticket_code

ORDER_COLUMNS = frozenset({"status", "amount", "payment_method", "payment_reference", "paid_at"})
PAID_STATUSES = (OrderStatus.PAID, OrderStatus.REFUNDED)  # orders that were paid
OPTION_WHAT = "the event's registration option"


@dataclass
class RegistrationRecord:
    label: str
    user: str  # lower(username)
    product: str  # its product's name, as the import leaves it
    number: str | None  # the order's; None: a new order, numbered when it is written
    stored: Row | None  # the order it matches
    id: int | None  # an explicit id for a new registration
    order: dict[str, Any]  # order columns the document sets
    values: dict[str, Any]  # registration columns (checked_in_by: a lower(username))
    options: dict[str, Any] | None  # option name -> value; None leaves the stored ones
    flags: set[str] | None  # short names
    live: bool  # unpaid or paid, as the import leaves it


class Rows:
    """The `registrations` section, row by row, then the places and live registrations the
    rows take, counted with the database's."""

    def __init__(
        self,
        errors: Errors,
        existing: Existing,
        event_id: int | None,
        people: dict[str, str],
        *,
        capacities: dict[str, int | None],  # product name -> places, as the import leaves them
        product_names: dict[int, str],  # the stored products of the event, by id
        flags: set[str],
        options: dict[str, OptionSpec],
        currency: str,  # the instance's: new orders'
    ) -> None:
        self.errors, self.existing, self.event_id, self.people = errors, existing, event_id, people
        self.sold = existing.sales
        self.capacities, self.product_names = capacities, product_names
        self.flags, self.options, self.currency = flags, options, currency
        self.numbers: dict[Any, str] = {}
        self.codes: dict[Any, str] = {}
        self.ids: dict[Any, str] = {}
        self.named: set[str] = set()  # the order numbers the rows give

    def check(self, document: dict[str, Any]) -> list[RegistrationRecord]:
        self.named = _named_orders(document)
        rows = []
        for record in records(document, "registrations", self.errors, REGISTRATION_KEYS):
            row = self._row(record)
            if row is not None:
                rows.append(row)
        self._one_live_registration_each(rows)
        self._within_capacity(rows)
        return rows

    def _row(self, record: Record) -> RegistrationRecord | None:
        self._columns(record)
        user = self._person(record, "user")
        number = record.get("orderId", order_number)
        stored = self._match(record, number, user)
        if stored is None:
            record.require("user", "product")
        else:
            number = stored["number"]
            owner = self.existing.user_names_by_id[stored["user_id"]].lower()
            if user is not None and user != owner:
                record.error(
                    "user",
                    f"order {number} belongs to {owner!r}; an order cannot move to another user",
                )
            user = owner
        product = record.get("product", text(products.c.name))
        if product is not None and product not in self.capacities:
            record.error("product", f"no product is named {product!r}")
        if product is None and stored is not None:
            product = self.product_names[stored["product_id"]]
        order = {c: record.values.pop(c) for c in ORDER_COLUMNS if c in record.values}
        status = order.get("status") or (stored["status"] if stored else OrderStatus.UNPAID)
        self._currency(record, stored)
        self._payment(record, order, stored, status)
        self._check_in(record, stored)
        self._ticket_code(record, number)
        registration = self.sold.registrations.get(stored["id"]) if stored else None
        holders = self.sold.registration_numbers_by_id
        registration_id = check_id(record, registration, holders, self.ids, "registration")
        options = check_option_answers(record, self.options, OPTION_WHAT)
        flags = self._flags(record)
        if user is None or product is None:
            return None
        return RegistrationRecord(
            record.label,
            user,
            product,
            number,
            stored,
            registration_id,
            order,
            record.values,
            options,
            flags,
            live=status in LIVE_STATUSES,
        )

    def _columns(self, record: Record) -> None:
        record.column("status", "status", one_of(OrderStatus))
        record.column("amount", "amount", amount)
        record.column("paymentMethod", "payment_method", one_of(PaymentMethod), nullable=True)
        reference = text(orders.c.payment_reference)
        record.column("paymentReference", "payment_reference", reference, nullable=True)
        record.column("paidAt", "paid_at", timestamp, nullable=True)
        record.column("badgeName", "badge_name", badge_name, nullable=True)
        record.column("ticketCode", "ticket_code", ticket_code)
        record.column("checkedInAt", "checked_in_at", timestamp, nullable=True)
        record.column("createdAt", "created_at", timestamp)
        record.column("updatedAt", "updated_at", timestamp)

    def _person(self, record: Record, key: str) -> str | None:
        """A username or an e-mail address, as the lower(username) of its user."""
        given = record.get(key, text(users.c.email, nonempty=True))
        if given is None:
            return None
        found = self.people.get(given.lower())
        if found is None:
            record.error(key, f"no user has the username or e-mail address {given!r}")
        return found

    def _match(self, record: Record, number: str | None, user: str | None) -> Row | None:
        """The stored order a row stands for: its orderId's, else its user's live one."""
        if number is not None:
            stored = self.sold.orders.get(number)
            key = "orderId"
        elif user is not None and user in self.existing.users:
            user_id = self.existing.users[user]["id"]
            live = self.sold.live.get((self.event_id, user_id)) if self.event_id else None
            # Unless a row names that order (to end it, say): then this row is a new order.
            stored = self.sold.orders[live] if live and live not in self.named else None
            key = "user"
        else:
            return None
        if stored is not None and stored["event_id"] != self.event_id:
            record.error(key, f"order {number} belongs to another event")
            return None
        if stored is not None or number is not None:
            once(record, key, stored["number"] if stored else number, self.numbers, "order")
        return stored

    def _payment(
        self, record: Record, order: dict[str, Any], stored: Row | None, status: str
    ) -> None:
        if status in PAID_STATUSES:
            method = order.get("payment_method", stored["payment_method"] if stored else None)
            if method is None:
                methods = ", ".join(PaymentMethod)
                record.error(
                    "paymentMethod", f"is required for a {status} order (one of {methods})"
                )
            return
        for key, column in (
            ("paymentMethod", "payment_method"),
            ("paymentReference", "payment_reference"),
            ("paidAt", "paid_at"),
        ):
            if record.raw.get(key) is not None:
                record.error(key, f"is only for a paid or refunded order; this one is {status}")
            order[column] = None  # an order that was never paid keeps no payment

    def _currency(self, record: Record, stored: Row | None) -> None:
        """An export's `currency` says what its amounts are in: the order's own (a new one's,
        the instance's). Amounts are never converted, so another is refused."""
        given = record.get("currency", text(orders.c.currency, nonempty=True))
        held = stored["currency"] if stored is not None else self.currency
        if given is not None and given != held:
            whose = "the order's" if stored is not None else "this instance's (REGDESK_CURRENCY)"
            record.error(
                "currency",
                f"is {given!r}, but {whose} currency is {held!r}; amounts are never converted",
            )

    def _check_in(self, record: Record, stored: Row | None) -> None:
        if "checkedInBy" not in record.raw:
            return
        if record.raw["checkedInBy"] is None:
            record.values["checked_in_by"] = None
            return
        record.values["checked_in_by"] = self._person(record, "checkedInBy")
        registration = self.sold.registrations.get(stored["id"]) if stored else None
        stored_at = registration["checked_in_at"] if registration else None
        if record.values.get("checked_in_at", stored_at) is None:
            record.error("checkedInBy", "is only for a registration with checkedInAt")

    def _ticket_code(self, record: Record, number: str | None) -> None:
        code = record.values.get("ticket_code")
        if code is None:
            return
        once(record, "ticketCode", code, self.codes, "ticket code")
        holder = self.sold.ticket_codes.get(code)
        if holder is not None and holder != number:
            record.error("ticketCode", f"is the ticket code of order {holder}")

    def _flags(self, record: Record) -> set[str] | None:
        items = record.get("flags", array)
        if items is None:
            return None
        found: set[str] = set()
        for index, item in enumerate(items):
            position = f"flags[{index}]"
            if not isinstance(item, str):
                record.error(position, f"must be a flag's shortName, not {describe(item)}")
            elif item not in self.flags:
                record.error(position, f"no flag is named {item!r}")
            elif item in found:
                record.error(position, f"{item!r} is listed twice")
            else:
                found.add(item)
        return found

    # --- the rules of registrations.md, for the document and the database together ---

    def _one_live_registration_each(self, rows: list[RegistrationRecord]) -> None:
        matched = {row.number for row in rows if row.stored is not None}
        first: dict[str, str] = {}
        for row in rows:
            if not row.live:
                continue
            stored_user = self.existing.users.get(row.user)
            held = None
            if stored_user is not None and self.event_id is not None:
                held = self.sold.live.get((self.event_id, stored_user["id"]))
            if held is not None and held not in matched:
                self._error(
                    row, "user", f"{row.user!r} already has a live registration (order {held})"
                )
            elif row.user in first:
                self._error(
                    row, "user", f"{row.user!r} has a live registration in {first[row.user]} too"
                )
            else:
                first[row.user] = row.label

    def _within_capacity(self, rows: list[RegistrationRecord]) -> None:
        """Rows that keep the place their order holds count first; then each row that takes a
        new place, in document order, gets one while the product has one left."""
        matched = {row.number for row in rows if row.stored is not None}
        taken: Counter[str] = Counter()
        for number, order in self.sold.orders.items():
            held_here = order["event_id"] == self.event_id and order["status"] in LIVE_STATUSES
            if held_here and number not in matched:
                taken[self.product_names[order["product_id"]]] += 1
        newcomers = []
        for row in rows:
            if not row.live:
                continue
            kept = (
                row.stored is not None
                and row.stored["status"] in LIVE_STATUSES
                and self.product_names[row.stored["product_id"]] == row.product
            )
            if kept:
                taken[row.product] += 1
            else:
                newcomers.append(row)
        for row in newcomers:
            capacity = self.capacities.get(row.product)
            if capacity is not None and taken[row.product] >= capacity:
                message = (
                    f"{row.product!r} is sold out: {capacity} places, {taken[row.product]} taken"
                )
                self._error(row, "product", message)
            else:
                taken[row.product] += 1

    def _error(self, row: RegistrationRecord, key: str, message: str) -> None:
        self.errors.add(f"{row.label}.{key}", message)


def _named_orders(document: dict[str, Any]) -> set[str]:
    """The good orderIds of the section, before its rows are read one by one."""
    named = set()
    rows = document.get("registrations")
    for row in rows if isinstance(rows, list) else []:
        try:
            named.add(order_number(row["orderId"]))
        except (TypeError, KeyError, ValueError):
            continue  # not an object, no orderId, or a bad one (noted with its row)
    return named
