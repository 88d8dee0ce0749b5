"""Audit tests sign in through the login form: argon2 at its smallest cost keeps them quick.
The checks are the same real argon2id verification; the service's own cost is untouched."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher

from regdesk import security


@pytest.fixture(autouse=True)
def cheap_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        security, "_password_hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    )
