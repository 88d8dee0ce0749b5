"""Money (registrations/money.py): integers in the currency's minor units, shown with the
currency, read from what an organizer types; never through a float (registrations.md)."""

from __future__ import annotations

from typing import Any

import pytest

from regdesk.registrations.money import format_amount, minor_units, parse_amount


@pytest.mark.parametrize(
    ("currency", "places"), [("USD", 2), ("EUR", 2), ("JPY", 0), ("KWD", 3), ("BHD", 3)]
)
def test_each_currency_has_its_own_minor_units(currency: str, places: int) -> None:
    assert minor_units(currency) == places


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        (12000, "USD", "$120.00"),
        (5, "USD", "$0.05"),
        (0, "USD", "$0.00"),
        (123456789, "USD", "$1,234,567.89"),
        (1500, "JPY", "¥1,500"),
        (0, "JPY", "¥0"),
        (12345, "KWD", "KWD12.345"),
        (1, "KWD", "KWD0.001"),
        (12000, "EUR", "€120.00"),
        # Past a float's 53 bits, every digit still exact.
        (2**53 + 1, "USD", "$90,071,992,547,409.93"),
    ],
)
def test_an_amount_is_shown_with_its_currency(amount: int, currency: str, shown: str) -> None:
    assert format_amount(amount, currency) == shown


@pytest.mark.parametrize("amount", [120.0, 12.5, True, "12000", None])
def test_an_amount_that_is_not_an_integer_is_refused(amount: Any) -> None:
    with pytest.raises(TypeError, match="an amount is an integer of minor units"):
        format_amount(amount, "USD")


@pytest.mark.parametrize(
    ("typed", "currency", "amount"),
    [
        ("120", "USD", 12000),
        ("120.5", "USD", 12050),
        ("120.50", "USD", 12050),
        (" 120.05 ", "USD", 12005),
        ("0.29", "USD", 29),  # 0.29 * 100 is 28.999999999999996 in floats
        ("1,500", "USD", 150000),
        ("1,500,000.01", "USD", 150000001),
        ("1 500", "USD", 150000),
        ("0", "USD", 0),
        ("1500", "JPY", 1500),
        ("1,500", "JPY", 1500),
        ("12.345", "KWD", 12345),
        ("0.001", "KWD", 1),
        ("12.3", "KWD", 12300),
        ("999999999.999", "KWD", 999999999999),
    ],
)
def test_a_typed_amount_is_read_in_minor_units(typed: str, currency: str, amount: int) -> None:
    parsed = parse_amount(typed, currency)
    assert parsed == amount
    assert type(parsed) is int


@pytest.mark.parametrize(
    ("typed", "currency", "message"),
    [
        ("120.505", "USD", "must be an amount such as 120.00 or 1,500, with at most 2 decimals"),
        ("1500.0", "JPY", "must be an amount such as 120 or 1,500, with no decimals"),
        ("1.2345", "KWD", "must be an amount such as 120.000 or 1,500, with at most 3 decimals"),
        ("12,34", "EUR", None),  # a decimal comma, not 1,234
        ("1,50", "USD", None),
        ("1,5000", "USD", None),
        ("1, 500", "USD", None),
        ("-5", "USD", None),
        ("+5", "USD", None),
        ("", "USD", None),
        ("120.", "USD", None),
        (".5", "USD", None),
        ("1e3", "USD", None),
        ("NaN", "USD", None),
        ("$120", "USD", None),
        ("１２０", "USD", None),  # full-width digits
        ("١٢٠", "USD", None),  # Arabic-Indic digits
        ("1" * 10, "USD", None),  # more than nine whole digits
    ],
)
def test_anything_else_typed_is_refused(typed: str, currency: str, message: str | None) -> None:
    with pytest.raises(ValueError, match=r"^must be an amount such as ") as raised:
        parse_amount(typed, currency)
    if message is not None:
        assert str(raised.value) == message


@pytest.mark.parametrize("currency", ["USD", "JPY", "KWD"])
def test_what_is_shown_reads_back_as_the_same_amount(currency: str) -> None:
    for amount in (0, 1, 99, 100, 12345, 150000001, 999999999):
        shown = format_amount(amount, currency)
        typed = shown.lstrip("$¥").removeprefix("KWD")
        assert parse_amount(typed, currency) == amount, shown
