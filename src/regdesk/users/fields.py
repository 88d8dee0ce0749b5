"""Normalisation of the fields people type: e-mail addresses, phone numbers, countries.

Each function returns the canonical form or raises ValueError with a message fit to show
next to the field's name.
"""

from __future__ import annotations

import phonenumbers
from email_validator import EmailNotValidError, validate_email

USERNAME_MAX = 64


def normalize_email(value: str) -> str:
    try:
        return str(validate_email(value, check_deliverability=False).normalized)
    except EmailNotValidError as exc:
        raise ValueError(f"{value!r} is not a valid e-mail address: {exc}") from None


def normalize_phone(value: str, region: str) -> str:
    """E.164 form of a phone number; `region` reads numbers written without '+country'.

    The check is 'possible' (right length for its country), not 'valid' (an assigned range):
    the fictional +1 555 numbers of api.md's own examples are not assigned, yet are phones.
    """
    try:
        number = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException as exc:
        raise ValueError(f"{value!r} is not a phone number: {exc}") from None
    if not phonenumbers.is_possible_number(number):
        raise ValueError(f"{value!r} is not a possible phone number")
    return str(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164))


def normalize_country(value: str) -> str:
    """ISO 3166-1 alpha-2, upper case (decisions.md: addressCountry)."""
    code = value.strip().upper()
    if len(code) != 2 or not code.isalpha() or not phonenumbers.country_code_for_region(code):
        raise ValueError(f"{value!r} is not an ISO 3166-1 alpha-2 country code")
    return code


def check_username(value: str) -> str:
    if not value or len(value) > USERNAME_MAX:
        raise ValueError(f"must be 1 to {USERNAME_MAX} characters")
    if any(c.isspace() for c in value) or "@" in value:
        raise ValueError("may not contain spaces or '@'")
    return value
