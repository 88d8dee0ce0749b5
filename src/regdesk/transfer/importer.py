"""`regdesk import`: the organizer's document into the database, all or nothing (operator.md).

The document is operator.md's "Import document", extended (operator.md: keep the names,
extend them); the exporter writes the same shape.

- Top level: `roles`, `users`, `departments`, `volunteers`, and an optional `event`:
  `{"name", "startsOn", "endsOn", "current": bool, "options": [{"name", "type",
  "choices": [...] or null}]}`. Volunteers belong to that event (matched by name, created
  if new); it becomes current when `current` is true or when no event is current. Without
  an `event` section volunteers belong to the current event, and when there is none an
  event named "Current event" is made current. A volunteer's option that the event does not
  define yet is added to it (with that type, any value allowed); a type differing from the
  event's is an error.
- Users, roles and departments may carry `id`: a new record gets it (an error when another
  record holds it), a matched record must already have it. Ids are numbers; the API's
  decimal strings ("17") are read too.
- Users and volunteers may carry `createdAt` and `updatedAt`, users `profilePictureUrl` and
  `passwordHash` (an argon2 hash, as export writes it) instead of `password`. A plaintext
  `password` meets the one rule of a password a person chooses (accounts/password_rule.py,
  against the user's own username and e-mail); a hash is taken as it is.
- A user's `roles` entry is a role name (scope convention) or `{"name", "scope"}`.
  `permissions` hold `admin` or names of sensitive scopes.
- Records match by natural key: users by username whatever its case, roles, departments and
  events by name, volunteers by (event, user), event options by (event, name). A matched
  record takes the fields the document gives and keeps the others; a list the document gives
  (a user's roles and permissions, a department's leads, a volunteer's contactMethods,
  departments and options) replaces the stored one. Nothing absent is deleted.
- registrations.md's `products`, `registrationFlags`, `registrationOptions` and
  `registrations` belong to the same event as the volunteers, and are held to its rules:
  capacity, one live registration per user (transfer/registrations.py describes them). New
  orders are in the instance's currency; with `--json` the import also prints the document's
  products' ids by name and its registrations' ids by order number.
- An `address` is one value: the object replaces all six fields (absent ones become null).
- E-mail addresses are normalised and unique whatever their case, counting every user the
  database already has under its stored address (an address may not move between users in
  one import). Phones are read in the address's country (else the stored one, else the
  default region) and stored in E.164.

The whole document is checked before anything is written; then one transaction writes only
what differs, with one audit event (`data.imported`, counts only), and one for each order
and registration made or changed (registrations.md: what changed, before and after).
Re-importing a document, or an export, writes nothing but the `data.imported` event.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_all, record_event
from regdesk.db import refresh_statistics, utcnow, write_session
from regdesk.security import hash_password, verify_password
from regdesk.transfer.bulk import Tally
from regdesk.transfer.csv_users import parse_users_csv, read_users_csv
from regdesk.transfer.document import ImportRejected
from regdesk.transfer.existing import Existing, load_existing
from regdesk.transfer.registrations import wants_sales
from regdesk.transfer.validation import Plan, UserRecord, validate
from regdesk.transfer.writer import Outcome, write_plan

__all__ = [
    "ImportRejected",
    "ImportResult",
    "import_document",
    "import_into",
    "read_document",
    "read_uploaded_document",
]

# registrations.md: one currency per instance, REGDESK_CURRENCY's (config.py), USD by default.
DEFAULT_CURRENCY = "USD"
# argon2 is slow by design and releases the GIL: hash a few passwords at a time.
HASHING_THREADS = 4


@dataclass(frozen=True)
class ImportResult:
    roles: dict[str, int]  # the document's roles, by name
    users: dict[str, int]  # the document's users, by username as the document spells it
    departments: dict[str, int]
    volunteers: int  # volunteer records in the document
    tallies: dict[str, Tally]
    products: dict[str, int]  # the document's products, by name
    registrations: dict[str, int]  # the document's registrations' ids, by order number

    def as_json(self) -> dict[str, Any]:
        """operator.md: ids as the API renders them (users and departments as strings)."""
        return {
            "roles": dict(self.roles),
            "users": {name: str(user_id) for name, user_id in self.users.items()},
            "departments": {name: str(d) for name, d in self.departments.items()},
            "volunteers": self.volunteers,
            "products": {name: str(p) for name, p in self.products.items()},
            "registrations": dict(self.registrations),
        }

    def summary(self) -> str:
        return "; ".join(
            f"{kind}: {t.created} created, {t.updated} updated, {t.unchanged} unchanged"
            for kind, t in self.tallies.items()
        )


def read_document(path: Path) -> dict[str, Any]:
    """A JSON document, or a `.csv` of users read into the same shape."""
    if path.suffix.lower() == ".csv":
        return read_users_csv(path)
    try:
        content = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportRejected([(str(path), f"cannot be read: {exc}")]) from None
    return parse_json_document(content)


def read_uploaded_document(data: bytes, filename: str) -> dict[str, Any]:
    """A file sent from the admin page: a `.csv` of users by its name, else a JSON document."""
    try:
        content = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportRejected([(filename, "is not UTF-8 text")]) from None
    if filename.lower().endswith(".csv"):
        return parse_users_csv(content)
    return parse_json_document(content)


def parse_json_document(content: str) -> dict[str, Any]:
    try:
        document = json.loads(content, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        position = f"line {exc.lineno} column {exc.colno}"
        raise ImportRejected([(position, f"not valid JSON: {exc.msg}")]) from None
    except ValueError as exc:
        raise ImportRejected([("document", str(exc))]) from None
    if not isinstance(document, dict):
        raise ImportRejected([("document", "must be a JSON object with the sections")])
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def import_document(
    engine: Engine,
    document: dict[str, Any],
    *,
    actor: Actor,
    phone_region: str,
    currency: str = DEFAULT_CURRENCY,
) -> ImportResult:
    """Checks the whole document, then writes it in one transaction (or raises ImportRejected).
    `currency`: the instance's (settings.currency), which new orders are in."""
    try:
        with write_session(engine) as session:
            result = import_into(
                session, document, actor=actor, phone_region=phone_region, currency=currency
            )
    except IntegrityError as exc:
        raise ImportRejected([("document", _raced(exc))]) from None
    refresh_statistics(engine)
    return result


def import_into(
    session: Session,
    document: dict[str, Any],
    *,
    actor: Actor,
    phone_region: str,
    currency: str = DEFAULT_CURRENCY,
) -> ImportResult:
    """The same in the caller's transaction (an admin page's), within a savepoint: a refused
    document leaves that transaction as it found it. Then call `refresh_statistics`."""
    try:
        with session.begin_nested():
            existing = load_existing(session.connection(), sales=wants_sales(document))
            plan = validate(document, existing, phone_region, currency)
            _hash_passwords(plan, existing)
            outcome = write_plan(session, plan, existing, utcnow(), currency=currency)
            record_event(session, actor, "data.imported", details=_counts(outcome))
            record_all(session, actor, outcome.changes)
    except IntegrityError as exc:
        raise ImportRejected([("document", _raced(exc))]) from None
    return _result(plan, outcome)


def _raced(error: IntegrityError) -> str:
    # Only a write racing this import gets here: validation saw the rows it loaded.
    return f"conflicts with a change made during the import, try again ({error.orig})"


def _hash_passwords(plan: Plan, existing: Existing) -> None:
    """A plaintext password becomes a hash, unless the stored hash already verifies it."""
    pending = [user for user in plan.users if user.password is not None]
    if not pending:
        return

    def new_hash(user: UserRecord) -> str | None:
        assert user.password is not None
        stored = existing.users.get(user.key)
        if stored is not None and verify_password(stored["password_hash"], user.password):
            return None
        return hash_password(user.password)

    with ThreadPoolExecutor(max_workers=HASHING_THREADS) as pool:
        for user, hashed in zip(pending, pool.map(new_hash, pending), strict=True):
            if hashed is not None:
                user.values["password_hash"] = hashed


def _counts(outcome: Outcome) -> dict[str, Any]:
    """The audit event's details: counts only, never a value (no password, no hash)."""
    return {
        kind: {"created": t.created, "updated": t.updated, "unchanged": t.unchanged}
        for kind, t in outcome.tallies.items()
    }


def _result(plan: Plan, outcome: Outcome) -> ImportResult:
    return ImportResult(
        roles={r.name: outcome.role_ids[r.name] for r in plan.roles},
        users={u.username: outcome.user_ids[u.key] for u in plan.users},
        departments={d.name: outcome.department_ids[d.name] for d in plan.departments},
        volunteers=len(plan.volunteers),
        tallies=outcome.tallies,
        products={p.name: outcome.product_ids[p.name] for p in plan.sales.products}
        if plan.sales
        else {},
        registrations=dict(outcome.registration_ids),
    )
