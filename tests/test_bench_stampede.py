"""bench/stampede.py at a tiny size on SQLite (issue 20): what it reports is what happened, as
the database tells it. The attendees think for at most a twentieth of a second, and their
password hash is this test process's (cheap) one, so the server checks it quickly."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from bench.stampede import Sizes, run_stampede
from sqlalchemy import func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from regdesk.db import make_engine
from regdesk.registrations.models import Order, Registration
from tests.conftest import scratch_database_url

SIZES = Sizes(attendees=40, places=25, concurrency=8, think=(0.0, 0.05))
SOLD = min(SIZES.attendees, SIZES.places)


@dataclass(frozen=True)
class Stampede:
    reported: dict[str, object]
    orders: int  # every order in the database, whatever its status
    registrations: int
    most_orders_of_one_user: int
    most_registrations_of_one_user: int


def _most_of_one_user(session: Session, user_id: InstrumentedAttribute[int]) -> int:
    per_user = select(user_id, func.count().label("n")).group_by(user_id).subquery()
    return int(session.scalar(select(func.max(per_user.c.n))) or 0)


@pytest.fixture(scope="module")
def stampede(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stampede]:
    folder: Path = tmp_path_factory.mktemp("stampede")
    with scratch_database_url("sqlite", folder, migrated=True) as url:
        reported = run_stampede(url, "sqlite", SIZES)
        engine = make_engine(url)
        with Session(engine) as session:
            yield Stampede(
                reported,
                orders=session.scalar(select(func.count()).select_from(Order)) or 0,
                registrations=session.scalar(select(func.count()).select_from(Registration)) or 0,
                most_orders_of_one_user=_most_of_one_user(session, Order.user_id),
                most_registrations_of_one_user=_most_of_one_user(session, Registration.user_id),
            )
        engine.dispose()


def test_places_sold_are_the_fewer_of_attendees_and_places(stampede: Stampede) -> None:
    reported = stampede.reported
    assert stampede.orders == stampede.registrations == SOLD
    assert reported["places_sold"] == reported["registrations"] == SOLD
    assert reported["capacity"] == SIZES.places
    assert reported["oversold"] == 0
    assert reported["holders_are_the_registered"] is True


def test_the_others_are_refused_for_lack_of_places(stampede: Stampede) -> None:
    assert stampede.reported["refused_sold_out"] == SIZES.attendees - SOLD


def test_no_5xx_and_no_attendee_failed(stampede: Stampede) -> None:
    reported = stampede.reported
    assert reported["server_errors"] == 0
    assert reported["failures"] == []
    assert "failed" not in reported["outcomes"]  # type: ignore[operator]


def test_nobody_registered_twice(stampede: Stampede) -> None:
    assert stampede.most_orders_of_one_user == stampede.most_registrations_of_one_user == 1
    assert stampede.reported["registered_twice"] == 0
    assert stampede.reported["ordered_twice"] == 0


def test_every_sign_in_counted_by_the_rate_limit_and_none_refused(stampede: Stampede) -> None:
    assert stampede.reported["sign_ins_counted_by_rate_limit"] == SIZES.attendees
    assert stampede.reported["rate_limited"] == 0
