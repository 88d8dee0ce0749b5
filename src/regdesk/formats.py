"""How values are written out and read back, in one place (decisions.md, Identifiers and
formats)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def format_timestamp(value: dt.datetime) -> str:
    """UTC, ISO-8601 with milliseconds and Z: `2026-07-04T18:30:00.000Z`."""
    utc = value.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def format_date_as_timestamp(value: dt.date) -> str:
    """A date as the timestamp of its midnight UTC (`bornAt`: `1990-01-01T00:00:00.000Z`)."""
    return value.isoformat() + "T00:00:00.000Z"


def as_json(record: object) -> str:
    """A record as the exact text Starlette's JSONResponse sends (compact, UTF-8 as is)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def format_date(value: dt.date | None) -> str | None:
    return None if value is None else value.isoformat()


def parse_timestamp(value: str) -> dt.datetime:
    """An ISO-8601 timestamp with its zone, to the millisecond (what an export can carry)."""
    parsed = _parse_iso(value, dt.datetime.fromisoformat, "a timestamp like 2026-07-04T18:30:00Z")
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone (write it in UTC, ending in Z)")
    return truncate_to_ms(parsed.astimezone(dt.UTC))


def truncate_to_ms(value: dt.datetime) -> dt.datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def parse_date(value: str) -> dt.date:
    """`YYYY-MM-DD`, or a timestamp at midnight UTC as the API renders `bornAt`."""
    if len(value) == len("YYYY-MM-DD"):
        return _parse_iso(value, dt.date.fromisoformat, "a date such as 1990-01-01")
    parsed = _parse_iso(value, dt.datetime.fromisoformat, "a date such as 1990-01-01")
    if parsed.tzinfo is None or parsed.utcoffset() or parsed.time() != dt.time():
        raise ValueError(f"{value!r} is neither YYYY-MM-DD nor a timestamp at midnight UTC")
    return parsed.date()


def _parse_iso(value: str, parse: Callable[[str], T], expected: str) -> T:
    try:
        return parse(value)
    except ValueError:
        raise ValueError(f"{value!r} is not {expected}") from None
