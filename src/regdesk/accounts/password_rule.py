"""The one rule for a password a person chooses (accounts.md, Sign-up and verification): at
least PASSWORD_MIN characters, at most PASSWORD_MAX, not among the common passwords, and not
the account's own username or e-mail address. Every way of choosing one asks it: the reset by
mailed link, the change on /account, an administrator's typed reset, `regdesk users create`,
a plaintext `password` in an import (transfer/validation.py). A generated password
(admin/users.py) is random and needs no rule; an imported argon2 hash cannot be checked."""

from __future__ import annotations

import functools

from regdesk.fields import PASSWORD_MAX

PASSWORD_MIN = 10


@functools.cache
def _common_passwords() -> frozenset[str]:
    # zxcvbn's list of the 30,000 passwords seen most in leaks, all lower case. Imported when
    # first asked: its module holds every list zxcvbn has, 12 MB that a serving process which
    # never sees a new password (most of them) would otherwise carry.
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(FREQUENCY_LISTS["passwords"])


def password_problem(password: str, *, username: str | None, email: str | None) -> str | None:
    """What is wrong with `password` for the account of `username` and `email`, in words that
    follow the field's name ("password: must be ..."); None when nothing is."""
    if len(password) < PASSWORD_MIN:
        return f"must be at least {PASSWORD_MIN} characters long"
    if len(password) > PASSWORD_MAX:
        return f"must be at most {PASSWORD_MAX} characters long"
    typed = password.casefold()
    if typed in _common_passwords():
        return "is one of the most common passwords, the first an attacker tries: choose another"
    if typed in {name.casefold() for name in (username, email) if name}:
        return "must not be the username or e-mail address of the account"
    return None
