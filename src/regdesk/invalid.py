"""A change refused because of what was typed: each bad field named, with what is wrong.

Raised by the services' write functions (users, departments, roles) and shown by the admin
pages next to each field. The keys are the API's field names (`phone`, `addressCountry`), which
the forms use as their fields' names too.
"""

from __future__ import annotations


class Invalid(ValueError):
    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors
