"""Writing registrations.md's sections of a checked Plan in bulk: products, flags and
registration options, then the orders and registrations (a few statements per kind, whatever
the number of rows), writing only what differs from the stored rows.

Checking already held the rules (transfer/registration_rows.py): places within each product's
capacity, one live registration per user, counted under the products' lock; the database's
unique index on live registrations is the last guard against a sale made meanwhile.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Change
from regdesk.formats import format_timestamp
from regdesk.registrations.models import OrderStatus
from regdesk.registrations.numbers import new_order_numbers, new_ticket_codes
from regdesk.registrations.products import POSITION_MAX, POSITION_STEP
from regdesk.transfer.bulk import Links, Tally, changed_columns, insert_rows, update_rows
from regdesk.transfer.existing import (
    Existing,
    Row,
    flag_links,
    orders,
    products,
    registration_answers,
    registration_flags,
    registration_options,
    registrations,
)
from regdesk.transfer.registration_rows import PAID_STATUSES, RegistrationRecord
from regdesk.transfer.registrations import Sales

SALES_KINDS = ("products", "registrationFlags", "registrationOptions", "registrations")

PRODUCT_DEFAULTS: dict[str, Any] = {
    "display_name": None,
    "description": "",
    "capacity": None,
    "opens_at": None,
    "closes_at": None,
    "public": True,
}


# Columns whose values an audit event never shows, only their names: a ticket code is what
# gets a badge at the desk.
UNSHOWN = frozenset({"ticket_code"})


@dataclass
class SalesOutcome:
    tallies: dict[str, Tally] = field(default_factory=lambda: {k: Tally() for k in SALES_KINDS})
    product_ids: dict[str, int] = field(default_factory=dict)  # every product of the event
    registration_ids: dict[str, int] = field(default_factory=dict)  # the document's, by order
    # Every order and registration made or changed, as audit events (registrations.md: who,
    # what, before and after), written with the import's actor.
    changes: list[Change] = field(default_factory=list)


def write_sales(
    session: Session,
    sales: Sales,
    existing: Existing,
    *,
    event_id: int,
    user_ids: dict[str, int],  # every user, by lower(username)
    currency: str,
    now: dt.datetime,
) -> SalesOutcome:
    writer = _SalesWriter(session, existing, event_id, now)
    writer.products(sales)
    flag_ids = writer.flags(sales)
    option_ids = writer.options(sales)
    writer.registrations(sales, user_ids, flag_ids, option_ids, currency)
    return writer.outcome


class _SalesWriter:
    def __init__(
        self, session: Session, existing: Existing, event_id: int, now: dt.datetime
    ) -> None:
        self.session, self.conn = session, session.connection()
        self.sold = existing.sales
        self.event_id, self.now = event_id, now
        self.outcome = SalesOutcome()
        self.prices: dict[str, int] = {}  # product name -> price, as the import leaves it

    def products(self, sales: Sales) -> None:
        stored = self.sold.products.get(self.event_id, {})
        last = max((row["position"] for row in stored.values()), default=0)
        new: list[dict[str, Any]] = []
        changes: list[tuple[int, dict[str, Any]]] = []
        for record in sales.products:
            row = stored.get(record.name)
            if row is None:
                # After the last, as the admin pages place a new product.
                position = min(last // POSITION_STEP * POSITION_STEP + POSITION_STEP, POSITION_MAX)
                last = max(last, record.values.get("position", position))
                new.append(
                    {
                        **PRODUCT_DEFAULTS,
                        "id": record.id,
                        "event_id": self.event_id,
                        "position": position,
                        **record.values,
                        "created_at": self.now,
                        "updated_at": self.now,
                    }
                )
                columns: dict[str, Any] = {}
            else:
                columns = changed_columns(row, record.values)
                if columns:
                    changes.append((row["id"], {**columns, "updated_at": self.now}))
            self.outcome.tallies["products"].count(row, bool(columns))
        ids = self.outcome.product_ids
        ids.update({name: row["id"] for name, row in stored.items()})
        ids.update(insert_rows(self.session, products, new, "name"))
        update_rows(self.conn, products, changes)
        self.prices = {name: row["price"] for name, row in stored.items()}
        self.prices.update(
            {r.name: r.values["price"] for r in sales.products if "price" in r.values}
        )

    def flags(self, sales: Sales) -> dict[str, int]:
        stored = self.sold.flags.get(self.event_id, {})
        new = [
            {"id": f.id, "event_id": self.event_id, "short_name": f.short_name}
            for f in sales.flags
            if f.short_name not in stored
        ]
        for flag in sales.flags:
            self.outcome.tallies["registrationFlags"].count(stored.get(flag.short_name), False)
        ids = {name: row["id"] for name, row in stored.items()}
        ids.update(insert_rows(self.session, registration_flags, new, "short_name"))
        return ids

    def options(self, sales: Sales) -> dict[str, int]:
        stored = self.sold.options.get(self.event_id, {})
        position = max((row["position"] for row in stored.values()), default=-1)
        new: list[dict[str, Any]] = []
        changes: list[tuple[int, dict[str, Any]]] = []
        for spec in sales.options.values():
            row = stored.get(spec.name)
            if row is None:
                position += 1
                new.append(
                    {
                        "event_id": self.event_id,
                        "name": spec.name,
                        "type": spec.type,
                        "choices": spec.choices,
                        "position": position,
                    }
                )
            elif row["choices"] != spec.choices:
                changes.append((row["id"], {"choices": spec.choices}))
        tally = self.outcome.tallies["registrationOptions"]
        tally.created, tally.updated = len(new), len(changes)
        tally.unchanged = len(sales.options) - len(new) - len(changes)
        ids = {name: row["id"] for name, row in stored.items()}
        ids.update(insert_rows(self.session, registration_options, new, "name"))
        update_rows(self.conn, registration_options, changes)
        return ids

    def registrations(
        self,
        sales: Sales,
        user_ids: dict[str, int],
        flag_ids: dict[str, int],
        option_ids: dict[str, int],
        currency: str,
    ) -> None:
        """The matched rows' changes first, those that end a registration before the others,
        then the new rows: a user's registration ended and another made in one document never
        has two live at once (the one-live-registration index checks every statement)."""
        rows = sales.registrations
        matched = [row for row in rows if row.stored is not None]
        fresh = [row for row in rows if row.stored is None]
        links = Links(flag_links, "registration_id", ("flag_id",))
        answers = Links(registration_answers, "registration_id", ("option_id",), ("value",))

        def children_changed(row: RegistrationRecord, registration_id: int) -> list[str]:
            """Which of the registration's flags and options the row changes."""
            self.outcome.registration_ids[str(row.number)] = registration_id
            changed = []
            if row.flags is not None:
                before = {(f,): () for f in held.flags.get(registration_id, ())}
                after = {(flag_ids[name],): () for name in row.flags}
                if links.compare(registration_id, before, after):
                    changed.append("flags")
            if row.options is not None and answers.compare(
                registration_id,
                {(o,): (v,) for o, v in held.answers.get(registration_id, {}).items()},
                {(option_ids[n],): (v,) for n, v in row.options.items()},
            ):
                changed.append("options")
            return changed

        held = _held(self.conn, self.event_id) if matched else _Held()
        order_changes: list[tuple[int, dict[str, Any]]] = []
        changes: list[tuple[int, dict[str, Any]]] = []
        for row in matched:
            assert row.stored is not None
            registration = self.sold.registrations[row.stored["id"]]
            children = children_changed(row, registration["id"])
            # An order's change alone leaves its registration's updatedAt, as ordering's do.
            changed = self._changed_registration(row, user_ids, children, changes)
            changed |= self._changed_order(row, order_changes)
            self.outcome.tallies["registrations"].count(row.stored, changed)
        update_rows(self.conn, orders, order_changes)
        ending = [change[1].get("ended_at") is not None for change in changes]
        update_rows(self.conn, registrations, compress(changes, ending))
        update_rows(self.conn, registrations, compress(changes, [not e for e in ending]))

        taken = {*self.sold.orders, *(row.number for row in rows if row.number is not None)}
        numbers = iter(new_order_numbers(sum(row.number is None for row in fresh), taken))
        for row in fresh:
            row.number = row.number or next(numbers)
        order_rows = [self._new_order(row, user_ids, currency) for row in fresh]
        number_ids = insert_rows(self.session, orders, order_rows, "number")
        codes = iter(new_ticket_codes(sum("ticket_code" not in row.values for row in fresh)))
        new = [self._new_registration(row, number_ids, user_ids, codes) for row in fresh]
        ids = insert_rows(self.session, registrations, new, "order_id")
        for row, order in zip(fresh, order_rows, strict=True):
            registration_id = ids[number_ids[row.number]]
            children_changed(row, registration_id)
            self.outcome.tallies["registrations"].count(None, True)
            self._audit_new(row, order, registration_id)
        links.write(self.conn)
        answers.write(self.conn)

    def _audit_new(
        self, row: RegistrationRecord, order: dict[str, Any], registration_id: int
    ) -> None:
        shown = {"user_id": order["user_id"], "product": row.product, "amount": order["amount"]}
        self.outcome.changes += [
            Change("order.created", "order", row.number, {**shown, "status": order["status"]}),
            Change(
                "registration.created",
                "registration",
                registration_id,
                {"order": row.number, "user_id": order["user_id"]},
            ),
        ]

    def _new_order(
        self, row: RegistrationRecord, user_ids: dict[str, int], currency: str
    ) -> dict[str, Any]:
        created = row.values.get("created_at", self.now)
        order = {
            "number": row.number,
            "event_id": self.event_id,
            "user_id": user_ids[row.user],
            "product_id": self.outcome.product_ids[row.product],
            "status": OrderStatus.UNPAID.value,
            "amount": self.prices[row.product],
            "currency": currency,
            "payment_method": None,
            "payment_reference": None,
            "paid_at": None,
            "created_at": created,
            "updated_at": row.values.get("updated_at", created),
            **row.order,
        }
        if order["status"] in PAID_STATUSES and order["paid_at"] is None:
            order["paid_at"] = self.now
        return order

    def _new_registration(
        self,
        row: RegistrationRecord,
        number_ids: dict[str, int],
        user_ids: dict[str, int],
        codes: Iterator[str],
    ) -> dict[str, Any]:
        assert row.number is not None
        created = row.values.get("created_at", self.now)
        updated = row.values.get("updated_at", created)
        registration = {
            "id": row.id,
            "event_id": self.event_id,
            "user_id": user_ids[row.user],
            "order_id": number_ids[row.number],
            "badge_name": None,
            "checked_in_at": None,
            "checked_in_by": None,
            "created_at": created,
            "updated_at": updated,
            **self._values(row, user_ids),
            "ended_at": None if row.live else updated,
        }
        if "ticket_code" not in registration:
            registration["ticket_code"] = next(codes)
        return registration

    def _values(self, row: RegistrationRecord, user_ids: dict[str, int]) -> dict[str, Any]:
        """The registration columns the document sets, its checker's username as an id."""
        values = dict(row.values)
        if values.get("checked_in_by") is not None:
            values["checked_in_by"] = user_ids[values["checked_in_by"]]
        return values

    def _changed_order(
        self, row: RegistrationRecord, changes: list[tuple[int, dict[str, Any]]]
    ) -> bool:
        stored = row.stored
        assert stored is not None
        wanted = dict(row.order)
        product_id = self.outcome.product_ids[row.product]
        if product_id != stored["product_id"]:
            wanted["product_id"] = product_id
            wanted.setdefault("amount", self.prices[row.product])  # ordering.change_product
        status = wanted.get("status", stored["status"])
        if status in PAID_STATUSES and wanted.get("paid_at", stored["paid_at"]) is None:
            wanted["paid_at"] = self.now
        columns = changed_columns(stored, wanted)
        if columns:
            changes.append((stored["id"], {**columns, "updated_at": self.now}))
            self.outcome.changes.append(
                Change("order.updated", "order", stored["number"], _before_after(stored, columns))
            )
        return bool(columns)

    def _changed_registration(
        self,
        row: RegistrationRecord,
        user_ids: dict[str, int],
        children_changed: list[str],
        changes: list[tuple[int, dict[str, Any]]],
    ) -> bool:
        """Its columns' changes queued; `updated_at` moves to now when anything of the
        registration changed, unless the document gives one."""
        assert row.stored is not None
        stored: Row = self.sold.registrations[row.stored["id"]]
        wanted = self._values(row, user_ids)
        if row.live and stored["ended_at"] is not None:
            wanted["ended_at"] = None  # live again
        elif not row.live and stored["ended_at"] is None:
            wanted["ended_at"] = self.now
        columns = changed_columns(stored, wanted)
        if (columns or children_changed) and "updated_at" not in wanted:
            columns["updated_at"] = self.now
        if columns:
            changes.append((stored["id"], columns))
        if not (columns or children_changed):
            return False
        details = _before_after(stored, columns)
        details["fields"] = [*details["fields"], *children_changed]
        self.outcome.changes.append(
            Change("registration.updated", "registration", stored["id"], details)
        )
        return True


def _before_after(stored: Row, columns: dict[str, Any]) -> dict[str, Any]:
    """An audit event's details of a row's change: the columns, and their values before and
    after (a ticket code's by name only)."""
    fields = sorted(column for column in columns if column != "updated_at")
    shown = [column for column in fields if column not in UNSHOWN]
    return {
        "fields": fields,
        "before": {column: _shown(stored[column]) for column in shown},
        "after": {column: _shown(columns[column]) for column in shown},
    }


def _shown(value: Any) -> Any:
    return format_timestamp(value) if isinstance(value, dt.datetime) else value


@dataclass
class _Held:
    flags: dict[int, set[int]] = field(default_factory=dict)  # registration id -> flag ids
    answers: dict[int, dict[int, Any]] = field(default_factory=dict)  # -> option id -> value


def _held(conn: Connection, event_id: int) -> _Held:
    """The flags and answers of the event's registrations, for the rows an import matches."""
    of_event = select(registrations.c.id).where(registrations.c.event_id == event_id)
    held = _Held(defaultdict(set), defaultdict(dict))
    for registration_id, flag_id in conn.execute(
        select(flag_links.c.registration_id, flag_links.c.flag_id).where(
            flag_links.c.registration_id.in_(of_event)
        )
    ):
        held.flags[registration_id].add(flag_id)
    for registration_id, option_id, value in conn.execute(
        select(
            registration_answers.c.registration_id,
            registration_answers.c.option_id,
            registration_answers.c.value,
        ).where(registration_answers.c.registration_id.in_(of_event))
    ):
        held.answers[registration_id][option_id] = value
    return held
