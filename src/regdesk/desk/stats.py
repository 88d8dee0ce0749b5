"""The desk's statistics for organizers (issue 17): check-ins per hour, each product's check-ins
against its sales, and who is still to come.

Each figure is one aggregate query over the current event's registrations; nothing is read
row by row. Hours are UTC hours, as every time the desk shows. "Sold" is a paid order (a
refunded one is no longer sold); "still to come" a paid registration not checked in yet;
"checked in" counts every check-in, an administrator's override of an unpaid or cancelled
order included (the person came in).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from itertools import groupby

from sqlalchemy import ColumnElement, and_, case, func, select
from sqlalchemy.orm import Session

from regdesk.db import is_sqlite
from regdesk.events.service import current_event
from regdesk.registrations.models import Order, OrderStatus, Product, Registration

_HOUR_TEXT = "%Y-%m-%d %H"  # how both databases below spell an hour


@dataclass(frozen=True)
class Hour:
    start: dt.datetime  # UTC
    checked_in: int


@dataclass(frozen=True)
class Day:
    """A day with check-ins: every hour from its first check-in's to its last one's."""

    date: dt.date
    hours: list[Hour]
    checked_in: int


@dataclass(frozen=True)
class ProductCount:
    name: str
    sold: int
    checked_in: int
    to_come: int


@dataclass(frozen=True)
class DeskStats:
    days: list[Day]
    products: list[ProductCount]
    sold: int
    checked_in: int
    to_come: int
    busiest_hour: int  # the most check-ins in one hour (0: none yet)


def desk_stats(db: Session) -> DeskStats:
    event = current_event(db)
    if event is None:
        return DeskStats([], [], 0, 0, 0, 0)
    days = _days(db, event.id)
    products = _products(db, event.id)
    return DeskStats(
        days=days,
        products=products,
        sold=sum(p.sold for p in products),
        checked_in=sum(p.checked_in for p in products),
        to_come=sum(p.to_come for p in products),
        busiest_hour=max((h.checked_in for d in days for h in d.hours), default=0),
    )


def _hour_checked_in(db: Session) -> ColumnElement[str]:
    """The UTC hour of a check-in as text ('2026-07-04 09'): timestamps are stored naive UTC
    on both databases (db.UTCDateTime), which spell an hour each its own way."""
    if is_sqlite(db):
        return func.strftime(_HOUR_TEXT, Registration.checked_in_at)
    return func.to_char(Registration.checked_in_at, "YYYY-MM-DD HH24")


def _days(db: Session, event_id: int) -> list[Day]:
    hour = _hour_checked_in(db).label("hour")
    counted = db.execute(
        select(hour, func.count())
        .where(Registration.event_id == event_id, Registration.checked_in_at.is_not(None))
        .group_by(hour)
        .order_by(hour)
    ).all()
    hours = {
        dt.datetime.strptime(text, _HOUR_TEXT).replace(tzinfo=dt.UTC): int(n) for text, n in counted
    }
    days = []
    for date, same_day in groupby(sorted(hours), key=lambda start: start.date()):
        starts = list(same_day)
        first, last = starts[0], starts[-1]
        span = int((last - first) / dt.timedelta(hours=1)) + 1
        every = [first + dt.timedelta(hours=i) for i in range(span)]
        shown = [Hour(start, hours.get(start, 0)) for start in every]
        days.append(Day(date, shown, sum(h.checked_in for h in shown)))
    return days


def _products(db: Session, event_id: int) -> list[ProductCount]:
    paid = Order.status == OrderStatus.PAID
    checked = Registration.checked_in_at.is_not(None)
    rows = db.execute(
        select(
            Product.name,
            Product.display_name,
            func.coalesce(func.sum(case((paid, 1), else_=0)), 0),
            func.coalesce(func.sum(case((checked, 1), else_=0)), 0),
            func.coalesce(func.sum(case((and_(paid, ~checked), 1), else_=0)), 0),
        )
        .select_from(Product)
        .outerjoin(Order, Order.product_id == Product.id)
        .outerjoin(Registration, Registration.order_id == Order.id)
        .where(Product.event_id == event_id)
        .group_by(Product.id, Product.name, Product.display_name, Product.position)
        .order_by(Product.position, Product.id)
    ).all()
    return [
        ProductCount(display or name, int(sold), int(came), int(to_come))
        for name, display, sold, came, to_come in rows
    ]
