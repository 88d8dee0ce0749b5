"""Synthetic data for `regdesk demo` (operator.md): a convention with its people.

Realistic and varied: names from many cultures in their own spelling, addresses and phones
that fit their country, departments with leads, volunteer applications with contact methods,
department states and answers to the event's options, products and most users registered with
an order, most of them paid. Reproducible: the same seed on the same day gives the same rows,
except the passwords of the demo logins and the applications' secrets, which are random and
shown once, and the registrations' ticket codes.

Fast on purpose (100,000 users well under a minute): the database is empty, so ids are given
here; rows are built as plain dicts and written by the driver's bulk path (COPY on PostgreSQL,
executemany on SQLite), with what would make each row cost more set aside meanwhile
(demo.loading); and only the three demo logins get a (deliberately slow) argon2 password hash,
made beside the rows.

In bounded memory (a million users in a few hundred MB): rows are written as they are made, a
chunk at a time, all in one transaction, so a failure leaves the database empty. What later
rows need of earlier ones stays in memory only in compact form (sign-up times; the usernames
and e-mail addresses already taken); the contact details of the few users who volunteer are
read back from the rows written.
"""

from __future__ import annotations

import datetime as dt
import random
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import refresh_statistics, sync_sequences, write_session
from regdesk.demo import data
from regdesk.demo.convention import Convention
from regdesk.demo.generator import ROLES
from regdesk.demo.loading import bulk_load
from regdesk.demo.logins import ATTENDEE, DEMO_APPLICATIONS, LOGINS
from regdesk.demo.registering import PRODUCTS, REGISTERED_SHARE
from regdesk.demo.writer import CHUNK_ROWS, TABLES, TABLES_WITH_IDS, Writer
from regdesk.departments.models import Department
from regdesk.events.models import Event
from regdesk.oauth.applications import create_application
from regdesk.roles.models import Role
from regdesk.security import hash_password
from regdesk.users.models import User

# --- what the organizer gets back ----------------------------------------------------------


@dataclass(frozen=True)
class DemoLogin:
    username: str
    password: str
    purpose: str


@dataclass(frozen=True)
class DemoApplication:
    client_id: int
    client_secret: str
    name: str
    kind: str  # "service integration" or "OBO"
    scopes: str
    redirect_uris: tuple[str, ...] = ()


@dataclass
class DemoResult:
    logins: list[DemoLogin]
    applications: list[DemoApplication]
    seed: int
    event: str  # the current event, which the volunteers applied to
    past_event: str
    users: int
    volunteers: int
    past_volunteers: int
    departments: int
    roles: int
    elapsed_seconds: float
    products: int = 0
    registrations: int = 0  # for the current event, ended ones included
    paid_registrations: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "users": self.users,
            "volunteers": self.volunteers,
            "past_volunteers": self.past_volunteers,
            "departments": self.departments,
            "roles": self.roles,
            "products": self.products,
            "registrations": self.registrations,
            "paid_registrations": self.paid_registrations,
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "event": self.event,
            "past_event": self.past_event,
            **self.counts(),
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "logins": [
                {"username": login.username, "password": login.password, "purpose": login.purpose}
                for login in self.logins
            ],
            "applications": [
                {
                    "client_id": str(app.client_id),
                    "client_secret": app.client_secret,
                    "name": app.name,
                    "kind": app.kind,
                    "scopes": app.scopes,
                    "redirect_uris": list(app.redirect_uris),
                }
                for app in self.applications
            ],
        }

    def summary(self) -> str:
        lines = [
            f"Demo data loaded in {self.elapsed_seconds:.1f} s (seed {self.seed}):",
            f"  {self.users:,} users, {self.departments} departments, {self.roles} roles;",
            f"  {self.volunteers:,} volunteers for {self.event}"
            f" and {self.past_volunteers:,} for {self.past_event};",
            f"  {self.registrations:,} registrations for {self.event}"
            f" ({self.paid_registrations:,} paid), {self.products} products.",
            "",
            "Demo logins (the passwords are shown this once):",
        ]
        width = max((len(login.username) for login in self.logins), default=0)
        for login in self.logins:
            lines.append(f"  {login.username:<{width}}  {login.password}  {login.purpose}")
        lines += ["", "Applications (the client secrets are shown this once):"]
        for app in self.applications:
            lines += [
                f"  {app.name} ({app.kind}: {app.scopes})",
                f"    client_id:     {app.client_id}",
                f"    client_secret: {app.client_secret}",
            ]
            if app.redirect_uris:
                lines.append(f"    redirect URIs: {' '.join(app.redirect_uris)}")
        return "\n".join(lines)


class DemoNotEmpty(Exception):
    """The demo only fills an empty database."""


# --- entry point ---------------------------------------------------------------------------


def load_demo(
    engine: Engine,
    *,
    users: int = 1000,
    volunteers: int = 200,
    registrations: int | None = None,
    seed: int = 1,
    currency: str = "USD",
    actor: Actor,
) -> DemoResult:
    """Fill an empty database with a convention's worth of synthetic data, in one transaction.
    `registrations`: how many users registered for the current event (default: most of
    them); `currency`: their orders' (settings.currency)."""
    if registrations is None:
        registrations = round(users * REGISTERED_SHARE)
    if users < 0 or volunteers < 0 or registrations < 0:
        raise ValueError("the numbers of users, volunteers and registrations may not be negative")
    if users < len(LOGINS):
        raise ValueError(f"the demo needs at least {len(LOGINS)} users (its demo logins)")
    if volunteers > users:
        raise ValueError(f"cannot make {volunteers} volunteers out of {users} users")
    if registrations > users:
        raise ValueError(f"cannot make {registrations} registrations out of {users} users")
    started = time.perf_counter()
    with write_session(engine) as session, ThreadPoolExecutor(max_workers=1) as hasher:
        _check_empty(session)
        passwords = {login.user_id: secrets.token_urlsafe(12) for login in LOGINS.values()}
        # argon2 lets go of the GIL: the logins' (deliberately slow) hashes, half a second, are
        # made beside the rows, on another core when there is one.
        hashes = hasher.map(hash_password, passwords.values())
        out = Writer(session, CHUNK_ROWS)
        convention = Convention(
            random.Random(seed),
            _today(),
            users,
            volunteers,
            out,
            registration_count=registrations,
            currency=currency,
        )
        with bulk_load(session, TABLES):
            convention.build()
            out.flush()
            for user_id, password_hash in zip(passwords, hashes, strict=True):
                session.execute(
                    update(User).where(User.id == user_id).values(password_hash=password_hash)
                )
        logins = _logins(convention, passwords)
        sync_sequences(session, *TABLES_WITH_IDS)
        applications = _create_applications(session, actor)
        result = DemoResult(
            logins=logins,
            applications=applications,
            seed=seed,
            event=convention.event_name,
            past_event=convention.past_event_name,
            users=users,
            volunteers=volunteers,
            past_volunteers=convention.past_volunteer_count,
            departments=len(data.DEPARTMENTS),
            roles=len(ROLES),
            elapsed_seconds=0.0,
            products=len(PRODUCTS),
            registrations=convention.registration_count,
            paid_registrations=convention.paid_count,
        )
        record_event(session, actor, "demo.loaded", details={"seed": seed, **result.counts()})
    refresh_statistics(engine)
    result.elapsed_seconds = time.perf_counter() - started
    return result


def _today() -> dt.date:
    """The day the data is anchored to (tests pin it, to compare two runs)."""
    return dt.datetime.now(dt.UTC).date()


def _check_empty(session: Session) -> None:
    for model in (User, Role, Department, Event):
        if session.scalar(select(model.id).limit(1)) is not None:
            raise DemoNotEmpty(
                f"the database already holds {model.__tablename__}; the demo only fills an "
                "empty database (point REGDESK_DATABASE_URL at a fresh one)"
            )


def _logins(convention: Convention, passwords: dict[int, str]) -> list[DemoLogin]:
    logins = []
    for login in LOGINS.values():
        purpose = login.purpose
        if login is ATTENDEE:
            if convention.volunteer_count:
                purpose = f"{purpose} for {convention.event_name}"
            else:
                purpose = "attendee (no volunteer application: the demo made no volunteers)"
        logins.append(DemoLogin(login.username, passwords[login.user_id], purpose))
    return logins


def _create_applications(session: Session, actor: Actor) -> list[DemoApplication]:
    made = []
    for spec in DEMO_APPLICATIONS:
        application, secret = create_application(
            session,
            actor,
            name=spec.name,
            description=spec.description,
            redirect_uris=list(spec.redirect_uris),
            obo_scopes=spec.obo_scopes,
            service_scopes=spec.service_scopes,
        )
        made.append(
            DemoApplication(
                client_id=application.id,
                client_secret=secret,
                name=application.name,
                kind=spec.kind,
                scopes=spec.service_scopes or spec.obo_scopes,
                redirect_uris=spec.redirect_uris,
            )
        )
    return made
