"""Money: integers in the currency's minor units, shown with the currency (registrations.md).

Amounts never pass through a float: a Decimal moved by the currency's own number of minor
units (2 for USD, 0 for JPY, 3 for KWD), formatted by Babel's CLDR data.
"""

from __future__ import annotations

import re
from decimal import Decimal

from babel.numbers import format_currency, get_currency_precision

LOCALE = "en_US"  # the pages are in English

# Digits, grouped by thousands with commas (or spaces) or not at all, then the decimals:
# "1500", "1,500", "1 500.50"; never "12,34", a decimal comma that would be read as 1,234.
_AMOUNT = re.compile(r"(\d{1,3}(?:,\d{3})+|\d{1,3}(?: \d{3})+|\d+)(?:\.(\d+))?", re.ASCII)
_WHOLE_DIGITS = 9


def minor_units(currency: str) -> int:
    return int(get_currency_precision(currency))


def format_amount(amount: int, currency: str) -> str:
    """`12000, "USD"` → `$120.00`; `1500, "JPY"` → `¥1,500`; `12000, "EUR"` → `€120.00`.
    Only an integer: a float here would be money already rounded wrong."""
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise TypeError(f"an amount is an integer of minor units, not {type(amount).__name__}")
    value = Decimal(amount).scaleb(-minor_units(currency))
    return str(format_currency(value, currency, locale=LOCALE))


def parse_amount(text: str, currency: str) -> int:
    """What an organizer typed as a price ("120", "120.50", "1,500") in minor units, or
    ValueError: no more decimals than the currency has, never negative."""
    places = minor_units(currency)
    typed = _AMOUNT.fullmatch(text.strip())
    whole = typed.group(1).replace(",", "").replace(" ", "") if typed else ""
    fraction = (typed.group(2) or "") if typed else ""
    if typed is None or len(fraction) > places or len(whole) > _WHOLE_DIGITS:
        example = "120" if places == 0 else "120." + "0" * places
        decimals = "no decimals" if places == 0 else f"at most {places} decimals"
        raise ValueError(f"must be an amount such as {example} or 1,500, with {decimals}")
    minor = int(fraction.ljust(places, "0")) if places else 0
    return int(whole) * int(10**places) + minor
