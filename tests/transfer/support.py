"""What the transfer tests share: a rich document, and ways to look at a whole database."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url

from regdesk.audit.service import Actor
from regdesk.db import make_engine
from regdesk.models import metadata
from regdesk.security import hash_password
from regdesk.transfer.importer import ImportResult, import_document
from tests.conftest import scratch_database_url

ACTOR = Actor(label="test:transfer")
FOX_PASSWORD = "correct horse battery staple"
ZOE_PASSWORD = "Zoë's own passphrase"


@cache
def zoe_password_hash() -> str:
    return hash_password(ZOE_PASSWORD)


def import_(engine: Engine, document: dict[str, Any], region: str = "US") -> ImportResult:
    return import_document(engine, document, actor=ACTOR, phone_region=region)


def table_rows(engine: Engine) -> dict[str, list[str]]:
    """Every row of every table, in a stable order: equal exactly when nothing was written."""
    with engine.connect() as connection:
        return {
            table.name: sorted(repr(tuple(row)) for row in connection.execute(select(table)))
            for table in metadata.sorted_tables
        }


def backend_of(database_url: str) -> str:
    return make_url(database_url).get_backend_name()


@contextmanager
def empty_database(backend: str, directory: Path) -> Iterator[Engine]:
    """A migrated database of its own on `backend` (sqlite or postgresql), dropped afterwards."""
    with scratch_database_url(backend, directory, migrated=True) as url:
        engine = make_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


def rich_document() -> dict[str, Any]:
    """Every kind of record and field, written the loose ways an organizer may write them."""
    document = copy.deepcopy(_RICH)
    document["users"][1]["passwordHash"] = zoe_password_hash()
    return document


_RICH: dict[str, Any] = {
    "event": {
        "name": "Fur Con 2026",
        "startsOn": "2026-07-02",
        "endsOn": "2026-07-05",
        "current": True,
        "options": [
            {"name": "Shirt size", "type": "select", "choices": ["S", "M", "L", "XL"]},
            {"name": "Skills", "type": "multi", "choices": ["First aid", "Driving", "ASL"]},
            {"name": "Notes", "type": "text", "choices": None},
            {"name": "Hours", "type": "number"},
        ],
    },
    "roles": [
        {"name": "Staff", "staff": True},
        {"name": "Dealer"},
        {"name": "Board", "staff": True},
    ],
    "users": [
        {
            "username": "fox",
            "email": "fox@example.org",
            "firstName": "Fae",
            "lastName": "Fox",
            "preferredName": None,
            "phone": "(775) 555-0123",
            "verified": True,
            "password": FOX_PASSWORD,
            "bornAt": "1990-01-01",
            "newsletter": False,
            "identityVerified": True,
            "address": {
                "addressLine1": "1 Main St",
                "addressLine2": None,
                "addressCity": "Reno",
                "addressState": "NV",
                "addressZipcode": "89501",
                "addressCountry": "us",
            },
            "roles": ["Staff", {"name": "Board", "scope": "global"}],
            "permissions": ["volunteer:read", "admin"],
        },
        {
            "username": "Zoë",
            "email": "zoe@Example.ORG",
            "firstName": "Zoë",
            "lastName": "Łukasiewicz",
            "preferredName": "Zo",
            "phone": "030 1234567",
            "verified": False,
            "bornAt": "1985-03-04T00:00:00.000Z",
            "newsletter": True,
            "identityVerified": False,
            "profilePictureUrl": "https://example.org/zoe.png",
            "address": {
                "addressLine1": "Hauptstraße 5",
                "addressLine2": "Hinterhaus, 3. OG",
                "addressCity": "Berlin",
                "addressState": "BE",
                "addressZipcode": "10115",
                "addressCountry": "DE",
            },
            "roles": [{"name": "Dealer", "scope": "convention"}],
            "permissions": ["user:read"],
        },
        {
            "username": "miyazaki",
            "email": "Hayao.Miyazaki@example.org",
            "firstName": "駿",
            "lastName": "宮崎",
            "phone": "+81 3-1234-5678",
            "address": None,
            "createdAt": "2025-01-02T03:04:05.678Z",
            "updatedAt": "2025-02-03T04:05:06.789+00:00",
        },
        {
            "username": "otter",
            "email": "otter@example.org",
            "firstName": "Oli",
            "lastName": "Otter",
        },
    ],
    "departments": [
        {
            "name": "Security",
            "email": "security@example.org",
            "publiclyVisible": True,
            "leads": ["zoë", "fox"],
        },
        {
            "name": "Registration",
            "email": "reg@example.org",
            "publiclyVisible": False,
            "leads": ["miyazaki"],
        },
        {"name": "Art Show", "email": "art@example.org"},
    ],
    "volunteers": [
        {
            "user": "fox",
            "contactMethods": [
                {"name": "Discord", "isPrimary": True, "value": "fox#1234"},
                {"name": "Telegram", "isPrimary": False, "value": "@fae_fox"},
            ],
            "departments": [
                {"name": "Security", "states": ["interest", "experience"]},
                {"name": "Registration", "states": ["assignment"]},
            ],
            "options": [
                {"name": "Hours", "type": "number", "value": 12},
                {"name": "Shirt size", "type": "select", "value": "L"},
                {"name": "Skills", "type": "multi", "value": ["First aid", "Driving"]},
                {"name": "Notes", "type": "text", "value": "Can lift 20 kg"},
            ],
        },
        {
            "user": "ZOË",
            "contactMethods": [{"name": "E-mail", "value": "zoe@example.org"}],
            "departments": [{"name": "Art Show", "states": ["request", "avoid"]}],
            "options": [
                {"name": "Shirt size", "type": "select", "value": "M"},
                {"name": "Hours", "type": "number", "value": 7.5},
                {"name": "Pronouns", "type": "text", "value": "she/her"},
            ],
            "createdAt": "2026-05-01T10:00:00.000Z",
            "updatedAt": "2026-05-02T11:30:00.250Z",
        },
        {"user": "miyazaki", "contactMethods": [], "departments": []},
    ],
}
