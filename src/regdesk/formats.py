"""How values are written out, in one place (decisions.md, Identifiers and formats)."""

from __future__ import annotations

import datetime as dt
import json


def format_timestamp(value: dt.datetime) -> str:
    """UTC, ISO-8601 with milliseconds and Z: `2026-07-04T18:30:00.000Z`."""
    utc = value.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def format_date_as_timestamp(value: dt.date) -> str:
    """A date as the timestamp of its midnight UTC (`bornAt`: `1990-01-01T00:00:00.000Z`)."""
    return format_timestamp(dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC))


def as_json(record: object) -> str:
    """A record as the exact text Starlette's JSONResponse sends (compact, UTF-8 as is)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
