"""Normalisation of the fields people type: e-mail addresses, phone numbers, countries, the
profile picture's URL.

Each function returns the canonical form or raises ValueError with a message fit to show
next to the field's name.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

import phonenumbers
from email_validator import EmailNotValidError, validate_email
from sqlalchemy import String

from regdesk.db import table_of
from regdesk.fields import text
from regdesk.transport import is_loopback
from regdesk.users.models import User

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


def _column_length(column: object) -> int:
    """The models are the one source of truth for how long a string may be."""
    column_type = getattr(column, "type", None)
    assert isinstance(column_type, String)
    assert column_type.length
    return column_type.length


PICTURE_URL_MAX = _column_length(User.__table__.c.profile_picture_url)


def check_picture_url(value: str) -> str:
    """profilePictureUrl: OBO clients put it in an `<img src>` (decisions.md, Resources), so only
    an absolute https URL with a host, or http on a loopback host (a tool under development);
    never `javascript:`, `data:` or a scheme-relative `//host` (ASVS V5.1.3, CWE-79).

    The scheme is compared without case (RFC 3986 3.1), the value kept as it was given."""
    if len(value) > PICTURE_URL_MAX:
        raise ValueError(f"is longer than {PICTURE_URL_MAX} characters")
    # A browser drops or rewrites these (WHATWG URL: tabs and line breaks removed, `\` read as
    # `/`), so what it would fetch is not what was checked.
    if any(c.isspace() or c == "\\" or unicodedata.category(c).startswith("C") for c in value):
        raise ValueError(f"{value!r} may not contain spaces, control characters or backslashes")
    try:
        parts = urlsplit(value)
        _ = parts.port  # a port out of range, or not a number, raises here
    except ValueError:
        raise ValueError(f"{value!r} is not a URL") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{value!r} is not an absolute https URL with a host")
    if "@" in parts.netloc:
        raise ValueError(f"{value!r} may not hold a user name or password")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError(
            f"{value!r}: plain http is allowed only on a loopback host (127.0.0.1, ::1, localhost)"
        )
    return value


def shown_picture_url(stored: str | None) -> str | None:
    """A stored profile picture URL as a record may show it: null when it breaks the rule above
    (written before the rule, or by SQL typed by hand)."""
    if stored is None:
        return None
    try:
        return check_picture_url(stored)
    except ValueError:
        return None


# --- the parsers every writer of users uses (import, admin pages, command line) ----------------

_USERS = table_of(User)
USERNAME = text(_USERS.c.username, normalize=check_username)
EMAIL = text(_USERS.c.email, normalize=normalize_email)
# A person's names lose the spaces around them, whoever writes them (one rule for all).
FIRST_NAME = text(_USERS.c.first_name, normalize=str.strip, nonempty=True)
LAST_NAME = text(_USERS.c.last_name, normalize=str.strip, nonempty=True)
PREFERRED_NAME = text(_USERS.c.preferred_name, normalize=str.strip)
