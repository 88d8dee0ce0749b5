"""The desk's statistics (desk/stats.py), on both databases, against registrations made by
hand with known check-in times: per UTC hour of each day with check-ins (the hours between
filled in), per product (checked in, sold, still to come), and the totals."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from regdesk.db import write_session
from regdesk.desk.stats import DeskStats, Hour, ProductCount, desk_stats
from regdesk.registrations.models import OrderStatus, Registration
from tests.admin.registering import Held, ended, make_product, paid, registered
from tests.web.support import make_user

DAY_1 = dt.date(2026, 7, 3)
DAY_2 = dt.date(2026, 7, 4)


def at(day: dt.date, hour: int, minute: int) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=dt.UTC)


def checked_in_at(engine: Engine, held: Held, moment: dt.datetime) -> None:
    with write_session(engine) as session:
        session.get_one(Registration, held.registration_id).checked_in_at = moment


def stats(engine: Engine) -> DeskStats:
    with Session(engine) as session:
        return desk_stats(session)


def test_check_ins_per_hour_and_product_and_those_still_to_come(engine: Engine) -> None:
    attendee = make_product(engine, "attendee", display_name="Attendee")
    sponsor = make_product(engine, "sponsor", display_name="Sponsor")
    make_product(engine, "crew", public=False)  # nothing sold
    people = {}
    for name, product in (
        ("fox", attendee),
        ("elk", attendee),
        ("ram", attendee),
        ("yak", attendee),
        ("owl", attendee),
        ("cat", sponsor),
        ("bee", sponsor),
    ):
        people[name] = registered(engine, make_user(engine, name), product)
    for name in ("fox", "elk", "ram", "yak", "cat", "bee"):
        paid(engine, people[name])  # owl stays unpaid
    ended(engine, people["bee"], OrderStatus.REFUNDED)  # no longer sold
    checked_in_at(engine, people["fox"], at(DAY_1, 9, 15))
    checked_in_at(engine, people["elk"], at(DAY_1, 9, 59))
    checked_in_at(engine, people["ram"], at(DAY_1, 11, 0))
    checked_in_at(engine, people["cat"], at(DAY_2, 23, 30))

    found = stats(engine)
    assert [(day.date, day.checked_in) for day in found.days] == [(DAY_1, 3), (DAY_2, 1)]
    assert found.days[0].hours == [
        Hour(at(DAY_1, 9, 0), 2),
        Hour(at(DAY_1, 10, 0), 0),  # an hour between, with none
        Hour(at(DAY_1, 11, 0), 1),
    ]
    assert found.days[1].hours == [Hour(at(DAY_2, 23, 0), 1)]
    assert found.products == [
        ProductCount("Attendee", sold=4, checked_in=3, to_come=1),  # yak to come; owl unpaid
        ProductCount("Sponsor", sold=1, checked_in=1, to_come=0),  # bee refunded
        ProductCount("crew", sold=0, checked_in=0, to_come=0),
    ]
    assert (found.sold, found.checked_in, found.to_come, found.busiest_hour) == (5, 4, 1, 2)


def test_before_anyone_comes_there_are_no_hours(engine: Engine) -> None:
    attendee = make_product(engine, "attendee")
    paid(engine, registered(engine, make_user(engine, "fox"), attendee))
    found = stats(engine)
    assert (found.days, found.busiest_hour) == ([], 0)
    assert (found.sold, found.checked_in, found.to_come) == (1, 0, 1)
