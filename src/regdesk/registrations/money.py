"""Money: integers in the currency's minor units, shown with the currency (registrations.md).

Amounts never pass through a float: a Decimal moved by the currency's own number of minor
units (2 for USD, 0 for JPY, 3 for KWD), formatted by Babel's CLDR data.
"""

from __future__ import annotations

from decimal import Decimal

from babel.numbers import format_currency, get_currency_precision

LOCALE = "en_US"  # the pages are in English


def minor_units(currency: str) -> int:
    return int(get_currency_precision(currency))


def format_amount(amount: int, currency: str) -> str:
    """`12000, "USD"` → `$120.00`; `1500, "JPY"` → `¥1,500`; `12000, "EUR"` → `€120.00`."""
    value = Decimal(amount).scaleb(-minor_units(currency))
    return str(format_currency(value, currency, locale=LOCALE))


def parse_amount(text: str, currency: str) -> int:
    """What an organizer typed as a price ("120", "120.50", "1,500") in minor units, or
    ValueError: no more decimals than the currency has, never negative."""
    cleaned = text.strip().replace(",", "").replace(" ", "")
    places = minor_units(currency)
    whole, dot, fraction = cleaned.partition(".")
    if (
        not whole.isascii()
        or not whole.isdigit()
        or (dot and (not fraction.isascii() or not fraction.isdigit()))
        or len(fraction) > places
        or len(whole) > 9
    ):
        example = "120" if places == 0 else "120." + "0" * places
        raise ValueError(f"must be an amount such as {example}, with at most {places} decimals")
    minor = int(fraction.ljust(places, "0")) if places else 0
    return int(whole) * int(10**places) + minor
