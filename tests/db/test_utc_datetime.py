"""UTCDateTime on SQLite (regdesk.db): its one-step processors store and read exactly what the
general ones (process_bind_param then SQLite's DATETIME, and back) do, value for value."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.types import TypeDecorator

from regdesk.db import UTCDateTime

DIALECT = sqlite.dialect()
FAST = UTCDateTime().dialect_impl(DIALECT)
# The general path the fast one stands for: TypeDecorator's own processors around DATETIME's.
GENERAL_BIND = TypeDecorator.bind_processor(FAST, DIALECT)
GENERAL_READ = TypeDecorator.result_processor(FAST, DIALECT, None)
STORE = FAST.bind_processor(DIALECT)
READ = FAST.result_processor(DIALECT, None)

VALUES = [
    None,
    dt.datetime(2026, 7, 4, 18, 30, 0, 123456, tzinfo=dt.UTC),
    dt.datetime(2026, 7, 4, 18, 30, tzinfo=dt.UTC),  # no microseconds: still written out
    dt.datetime(2026, 7, 4, 18, 30, 0, 1000, tzinfo=dt.UTC),
    dt.datetime(1, 1, 1, tzinfo=dt.UTC),  # a four-digit year, padded
    dt.datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
    dt.datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),  # another zone
    dt.datetime(2026, 1, 1, 0, 0, 0, 500, tzinfo=dt.timezone(dt.timedelta(hours=-9, minutes=-30))),
    dt.datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC")),  # UTC, but not datetime's own
]

# What the column may hold: regdesk's own spelling, and others written by hand or by SQL
# (CURRENT_TIMESTAMP, a date alone, milliseconds, a T, nanoseconds, no padding).
STORED = [
    None,
    "2026-07-04 18:30:00.123456",
    "2026-07-04 18:30:00",
    "2026-07-04",
    "2026-07-04 18:30:00.123",
    "2026-07-04T18:30:00.5",
    "2026-07-04 18:30:00.123456789",
    "2026-7-4 1:2:3",
    "2026-07-04 18:30:00+02:00",
    "not a time",
]


def outcome(function: Any, value: Any) -> Any:
    try:
        return function(value)
    except Exception as error:  # the same refusal counts as the same outcome
        return type(error)


@pytest.mark.parametrize("value", VALUES, ids=str)
def test_a_timestamp_is_stored_as_the_general_processors_store_it(
    value: dt.datetime | None,
) -> None:
    assert STORE is not None
    assert GENERAL_BIND is not None
    assert STORE(value) == GENERAL_BIND(value)
    assert READ is not None
    if value is not None:
        assert READ(STORE(value)) == value


@pytest.mark.parametrize("text", STORED, ids=str)
def test_a_stored_timestamp_is_read_as_the_general_processors_read_it(text: str | None) -> None:
    assert READ is not None
    assert GENERAL_READ is not None
    assert outcome(READ, text) == outcome(GENERAL_READ, text)


def test_a_naive_timestamp_is_refused_on_both_paths() -> None:
    naive = dt.datetime(2026, 7, 4, 18, 30)
    assert STORE is not None
    assert GENERAL_BIND is not None
    for store in (STORE, GENERAL_BIND):
        with pytest.raises(ValueError, match="naive datetime"):
            store(naive)


def test_other_databases_keep_the_general_processors() -> None:
    dialect = postgresql.psycopg.dialect()  # type: ignore[attr-defined]
    store = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert store is not None
    value = dt.datetime(2026, 7, 4, 18, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    assert store(value) == dt.datetime(2026, 7, 4, 16, 30)  # naive UTC, for the driver
