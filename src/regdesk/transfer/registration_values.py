"""The values of registrations.md's import sections that no other section has: amounts in
minor units, order numbers, ticket codes."""

from __future__ import annotations

from typing import Any

from regdesk.fields import describe, max_length
from regdesk.registrations.products import (
    CAPACITY_MAX,
    DESCRIPTION_MAX,
    POSITION_MAX,
    PRICE_MAX,
)
from regdesk.transfer.existing import orders, registrations


def amount(value: Any) -> int:
    """Money in the currency's minor units: an integer, never a float (registrations.md)."""
    if isinstance(value, float):
        raise ValueError(
            f"must be an integer number of the currency's minor units (12050 for 120.50), "
            f"not {value!r}"
        )
    return _whole(value, "an amount in the currency's minor units", PRICE_MAX)


def _whole(value: Any, what: str, most: int) -> int:
    """The limits are the admin pages' (registrations/products.py)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be {what}, a whole number, not {describe(value)}")
    if not 0 <= value <= most:
        raise ValueError(f"must be {what} from 0 to {most}")
    return value


def places(value: Any) -> int:
    return _whole(value, "a number of places", CAPACITY_MAX)


def position(value: Any) -> int:
    return _whole(value, "a position", POSITION_MAX)


def description(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, not {describe(value)}")
    if len(value) > DESCRIPTION_MAX:
        raise ValueError(f"is longer than {DESCRIPTION_MAX} characters")
    return value


def order_number(value: Any) -> str:
    """registrations.md: decimal digits, read by clients as int(orderId), so no leading 0."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    limit = max_length(orders.c.number)
    if (
        not isinstance(value, str)
        or not (value.isascii() and value.isdigit())
        or value.startswith("0")
        or len(value) > limit
    ):
        raise ValueError(
            f"must be decimal digits without a leading zero (such as '10482'), at most {limit}, "
            f"not {value!r}"
        )
    return value


def ticket_code(value: Any) -> str:
    """What a scanner types: letters and digits only."""
    limit = max_length(registrations.c.ticket_code)
    if not isinstance(value, str) or not (value.isascii() and value.isalnum()):
        raise ValueError(f"must be letters and digits, not {value!r}")
    if len(value) > limit:
        raise ValueError(f"is longer than {limit} characters")
    return value
