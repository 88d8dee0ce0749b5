"""Synthetic data for `regdesk demo` (operator.md): a convention with its people.

Realistic and varied: names from many cultures in their own spelling, addresses and phones
that fit their country, departments with leads, volunteer applications with contact methods,
department states and answers to the event's options. Reproducible: the same seed on the same
day gives the same rows, except the passwords of the demo logins and the applications'
secrets, which are random and shown once.

Fast on purpose (100,000 users well under a minute): the database is empty, so ids are given
here; rows are built as plain dicts and written by the driver's bulk path (COPY on PostgreSQL,
executemany on SQLite); and only the three demo logins get a (deliberately slow) argon2
password hash.

In bounded memory (a million users in a few hundred MB): rows are written as they are made, a
chunk at a time, all in one transaction, so a failure leaves the database empty. What later
rows need of earlier ones stays in memory only in compact form (sign-up times; the usernames
and e-mail addresses already taken); the contact details of the few users who volunteer are
read back from the rows written.
"""

from __future__ import annotations

import bisect
import datetime as dt
import random
import re
import secrets
import time
import unicodedata
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import refresh_statistics, sync_sequences, write_session
from regdesk.db.bulk import bulk_insert
from regdesk.departments.models import Department
from regdesk.events.models import Event, OptionType
from regdesk.models import metadata
from regdesk.oauth.applications import create_application
from regdesk.roles.models import Role, RoleScope
from regdesk.security import hash_password
from regdesk.transfer import demo_data as data
from regdesk.users.models import User

# Tables in the order their rows are written (parents first).
TABLES = (
    "roles",
    "users",
    "user_permissions",
    "user_roles",
    "departments",
    "department_leads",
    "events",
    "event_options",
    "volunteers",
    "volunteer_contact_methods",
    "volunteer_department_states",
    "volunteer_option_values",
)
# Tables whose ids are given here: PostgreSQL's sequences must be moved past them.
TABLES_WITH_IDS = (
    "users",
    "roles",
    "departments",
    "events",
    "event_options",
    "volunteers",
    "volunteer_contact_methods",
)
# Rows held in memory before they are written (all tables together).
CHUNK_ROWS = 10_000
# Users whose contact details are read back in one query (well under SQLite's 32,766
# parameters).
LOOKUP_ROWS = 1000

CONVENTION = "RegCon"
HISTORY_DAYS = 900  # users signed up over the past two and a half years
NO_ADDRESS_SHARE = 0.15
NO_PHONE_SHARE = 0.03
PREFERRED_NAME_SHARE = 0.15
ATTENDEE_SHARE = 0.78
PAST_VOLUNTEER_SHARE = 0.35  # past-event volunteers, per volunteer of the current event
ADDRESS_FIELDS = (
    "address_line1",
    "address_line2",
    "address_city",
    "address_state",
    "address_zipcode",
    "address_country",
)

# (name, staff): whoever holds a staff role is `isStaff` on volunteer records.
ROLES = (
    ("Attendee", False),
    ("Volunteer", False),
    ("Staff", True),
    ("Department Head", True),
    ("Board", True),
    ("Dealer", False),
    ("Artist", False),
    ("Panelist", False),
    ("Guest of Honor", False),
    ("Press", False),
)
ROLE_IDS = {name: position for position, (name, _staff) in enumerate(ROLES, start=1)}
# (role, share of users holding it, share of those holding it globally)
OCCASIONAL_ROLES = (
    ("Dealer", 0.012, 0.2),
    ("Artist", 0.018, 0.15),
    ("Panelist", 0.01, 0.0),
    ("Press", 0.002, 0.0),
)
BOARD_SIZE = 5
GUESTS_OF_HONOR = 4

# (youngest, oldest, weight): fandom skews young, but not only.
AGE_BUCKETS = ((16, 17, 3), (18, 24, 25), (25, 34, 35), (35, 44, 20), (45, 54, 10), (55, 64, 5),
               (65, 75, 2))  # fmt: skip


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

    def counts(self) -> dict[str, int]:
        return {
            "users": self.users,
            "volunteers": self.volunteers,
            "past_volunteers": self.past_volunteers,
            "departments": self.departments,
            "roles": self.roles,
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
            f" and {self.past_volunteers:,} for {self.past_event}.",
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


# --- the demo logins and applications ------------------------------------------------------


@dataclass(frozen=True)
class _Login:
    user_id: int
    username: str
    first_name: str
    last_name: str
    preferred_name: str | None
    purpose: str


ADMIN = _Login(
    1, "admin", "Adaeze", "Okonkwo", "Ada", "administrator: holds the `admin` permission"
)
LEAD = _Login(
    2,
    "lead",
    "Søren",
    "Lindqvist",
    None,
    "lead of Volunteer Ops and Info Desk; holds volunteer:read and user:read",
)
ATTENDEE = _Login(3, "attendee", "Mei", "Nakamura", None, "attendee with a volunteer application")
LOGINS = {login.user_id: login for login in (ADMIN, LEAD, ATTENDEE)}
LEAD_DEPARTMENTS = ("Volunteer Ops", "Info Desk")
LOGIN_EMAIL_DOMAIN = "example.org"


def _login_email(login: _Login) -> str:
    return f"{login.username}@{LOGIN_EMAIL_DOMAIN}"


@dataclass(frozen=True)
class _AppSpec:
    name: str
    description: str
    kind: str
    obo_scopes: str = ""
    service_scopes: str = ""
    redirect_uris: tuple[str, ...] = ()


DEMO_APPLICATIONS = (
    _AppSpec(
        "Volunteer Time Clock",
        "Clocks volunteers in and out of their shifts.",
        "service integration",
        service_scopes="user:read volunteer:read registration:read",
    ),
    _AppSpec(
        "Discord Bot",
        "Gives verified attendees their roles on the convention's Discord server.",
        "OBO",
        obo_scopes="pii:basic pii:email",
        redirect_uris=("http://127.0.0.1:5000/callback",),
    ),
)


# --- entry point ---------------------------------------------------------------------------


def load_demo(
    engine: Engine,
    *,
    users: int = 1000,
    volunteers: int = 200,
    seed: int = 1,
    actor: Actor,
) -> DemoResult:
    """Fill an empty database with a convention's worth of synthetic data, in one transaction."""
    if users < 0 or volunteers < 0:
        raise ValueError("the numbers of users and volunteers may not be negative")
    if users < len(LOGINS):
        raise ValueError(f"the demo needs at least {len(LOGINS)} users (its demo logins)")
    if volunteers > users:
        raise ValueError(f"cannot make {volunteers} volunteers out of {users} users")
    started = time.perf_counter()
    with write_session(engine) as session:
        _check_empty(session)
        passwords = {login.user_id: secrets.token_urlsafe(12) for login in LOGINS.values()}
        hashes = {user_id: hash_password(password) for user_id, password in passwords.items()}
        out = _Writer(session, CHUNK_ROWS)
        convention = _Convention(random.Random(seed), _today(), users, volunteers, out, hashes)
        convention.build()
        out.flush()
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


def _logins(convention: _Convention, passwords: dict[int, str]) -> list[DemoLogin]:
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


# --- writing, a chunk at a time ------------------------------------------------------------


class _Writer:
    """The demo's rows on their way to the database, in the session's transaction.

    Rows wait per table; whenever `chunk_rows` of them wait, each table's are written, in the
    order of TABLES (parents first): a row's parent was made before it, so it was written in
    an earlier pass or comes ahead of it in this one. Within a table, rows are written in the
    order they were made.
    """

    def __init__(self, session: Session, chunk_rows: int) -> None:
        self.session, self.chunk_rows = session, chunk_rows
        self.waiting: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
        self.count = 0

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.waiting[table].append(row)
        self.count += 1
        if self.count >= self.chunk_rows:
            self.flush()

    def flush(self) -> None:
        for name, rows in self.waiting.items():
            bulk_insert(self.session, metadata.tables[name], rows)
            rows.clear()
        self.count = 0

    def contacts(self, user_ids: Iterable[int]) -> dict[int, tuple[str, str, str | None]]:
        """Username, e-mail address and phone of these users, as written."""
        self.flush()
        users = metadata.tables["users"]
        wanted = sorted(set(user_ids))
        found: dict[int, tuple[str, str, str | None]] = {}
        for start in range(0, len(wanted), LOOKUP_ROWS):
            query = select(users.c.id, users.c.username, users.c.email, users.c.phone).where(
                users.c.id.in_(wanted[start : start + LOOKUP_ROWS])
            )
            for user_id, username, email, phone in self.session.execute(query):
                found[user_id] = (username, email, phone)
        return found


# --- names and places, prepared once -------------------------------------------------------

T = TypeVar("T")


class _Weighted(Generic[T]):
    """Items drawn at random in proportion to their weights."""

    def __init__(self, pairs: Iterable[tuple[T, int]]) -> None:
        self.items: list[T] = []
        weights = []
        for item, weight in pairs:
            self.items.append(item)
            weights.append(weight)
        self.cum = list(accumulate(weights))

    def __bool__(self) -> bool:
        return bool(self.items)

    def pick(self, rng: random.Random) -> T:
        return self.items[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]


def _fold(name: str) -> str:
    """The ASCII spelling of a name: accents dropped, Ł as L, the ʻokina and such left out."""
    name = "".join(data.ASCII_LETTERS.get(c, c) for c in name)
    return "".join(c for c in unicodedata.normalize("NFKD", name) if c.isascii())


def _slug(name: str) -> str:
    """A name as it goes into a username or an e-mail address: ASCII letters and digits."""
    return "".join(c for c in _fold(name).lower() if c.isalnum())


@dataclass(frozen=True)
class _Names:
    culture: data.Culture
    given: tuple[tuple[str, ...], tuple[str, ...]]  # feminine, masculine
    family: tuple[tuple[str, ...], tuple[str, ...]]  # the same family names in those forms
    nicknames: dict[str, str]


@dataclass(frozen=True)
class _Phone:
    prefix: str
    digits: int  # random digits after the prefix


@dataclass(frozen=True)
class _Region:
    country: data.Country
    cultures: _Weighted[_Names]  # the local ones
    phones: tuple[_Phone, ...]  # one per place


@dataclass(frozen=True)
class _Tables:
    cultures: _Weighted[_Names]
    regions: _Weighted[_Region]
    folded: dict[str, str]  # name -> ASCII spelling (_fold), for every name we use
    slugs: dict[str, str]  # name -> _slug(name)


def phone_pattern(pattern: str) -> tuple[str, int]:
    """A place's phone pattern as (fixed prefix, number of random digits after it)."""
    prefix = pattern.rstrip("#")
    if "#" in prefix:
        raise ValueError(f"phone pattern {pattern!r}: random digits must come last")
    return prefix, len(pattern) - len(prefix)


@cache
def _tables() -> _Tables:
    cultures = []
    for culture in data.CULTURES:
        split = [entry.split("|") for entry in culture.family]
        family = (tuple(forms[-1] for forms in split), tuple(forms[0] for forms in split))
        cultures.append(
            _Names(culture, (culture.given_f, culture.given_m), family, dict(culture.nicknames))
        )
    regions = []
    for country in data.COUNTRIES:
        local = _Weighted(
            (names, names.culture.weight)
            for names in cultures
            if country.code in names.culture.homes
        )
        phones = tuple(_Phone(*phone_pattern(place.phone)) for place in country.places)
        regions.append(_Region(country, local, phones))
    every_name = {
        name
        for names in cultures
        for group in (*names.given, *names.family, names.culture.adopted)
        for name in group
    }
    every_name |= {
        *data.FAN_NAMES,
        *(nick for names in cultures for nick in names.nicknames.values()),
    }
    every_name |= {login.first_name for login in LOGINS.values()}
    every_name |= {login.last_name for login in LOGINS.values()}
    return _Tables(
        cultures=_Weighted((names, names.culture.weight) for names in cultures),
        regions=_Weighted((region, region.country.weight) for region in regions),
        folded={name: _fold(name) for name in every_name},
        slugs={name: _slug(name) for name in every_name},
    )


@cache
def _postcode_parts(pattern: str) -> tuple[str, ...]:
    """A postcode pattern in pieces: runs of '#' (digits), '@' (a letter), and the rest."""
    return tuple(re.findall(r"#+|@|[^#@]+", pattern))


def _years_before(day: dt.date, years: int) -> dt.date:
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # 29 February
        return day.replace(year=day.year - years, day=28)


def _timestamp(seconds: float) -> dt.datetime:
    """A POSIX time as an aware UTC datetime, to the millisecond (as the API renders it)."""
    return dt.datetime.fromtimestamp(round(seconds, 3), dt.UTC)


# --- the event's questions to its volunteers -----------------------------------------------


@dataclass(frozen=True)
class _OptionSpec:
    name: str
    type: OptionType
    choices: list[str] | None  # None: any value
    answered: float  # share of volunteers who answer it
    answer: Callable[[random.Random, bool], Any]  # (rng, volunteered before) -> value


def _shirt_size(rng: random.Random, _before: bool) -> str:
    return rng.choices(data.SHIRT_SIZES, data.SHIRT_SIZE_WEIGHTS)[0]


def _shifts(rng: random.Random, _before: bool) -> list[str]:
    picked = sorted(rng.sample(range(len(data.SHIFTS)), rng.randint(1, 5)))
    return [data.SHIFTS[i] for i in picked]


def _dietary_needs(rng: random.Random, _before: bool) -> list[str]:
    if rng.random() < 0.6:
        return []
    return rng.sample(data.DIETARY_NEEDS, rng.choice((1, 1, 1, 2)))


def _languages(rng: random.Random, _before: bool) -> list[str]:
    others = rng.sample(data.LANGUAGES[1:], rng.choice((0, 0, 1, 1, 2)))
    return others if others and rng.random() < 0.1 else ["English", *others]


def _hours(rng: random.Random, _before: bool) -> int | float:
    return rng.choice((4, 6, 7.5, 8, 10, 12, 12, 12.5, 16, 20, 24))


def _conventions_volunteered(rng: random.Random, before: bool) -> int:
    return int(before) + min(int(rng.expovariate(0.45)), 30)


def _pronouns(rng: random.Random, _before: bool) -> str:
    return rng.choices(data.PRONOUNS, data.PRONOUN_WEIGHTS)[0]


def _note(rng: random.Random, _before: bool) -> str:
    return rng.choice(data.NOTES)


CURRENT_OPTIONS = (
    _OptionSpec("Shirt size", OptionType.SELECT, data.SHIRT_SIZES, 0.93, _shirt_size),
    _OptionSpec("Preferred shifts", OptionType.MULTI, data.SHIFTS, 0.88, _shifts),
    _OptionSpec("Dietary needs", OptionType.MULTI, data.DIETARY_NEEDS, 0.8, _dietary_needs),
    _OptionSpec("Languages spoken", OptionType.MULTI, None, 0.7, _languages),
    _OptionSpec("Hours available", OptionType.NUMBER, None, 0.85, _hours),
    _OptionSpec(
        "Conventions volunteered at", OptionType.NUMBER, None, 0.75, _conventions_volunteered
    ),
    _OptionSpec("Pronouns", OptionType.TEXT, None, 0.6, _pronouns),
    _OptionSpec("Anything we should know?", OptionType.TEXT, None, 0.3, _note),
)
PAST_OPTIONS = (
    _OptionSpec("Shirt size", OptionType.SELECT, data.SHIRT_SIZES, 0.95, _shirt_size),
    _OptionSpec("Hours available", OptionType.NUMBER, None, 0.8, _hours),
)


# --- the convention ------------------------------------------------------------------------

EMAIL_DOMAINS = _Weighted(zip(data.EMAIL_DOMAINS, data.EMAIL_DOMAIN_WEIGHTS, strict=True))
CONTACT_METHODS = _Weighted(data.CONTACT_METHODS)
DEPARTMENT_IDS = {department.name: i for i, department in enumerate(data.DEPARTMENTS, start=1)}
PUBLIC_DEPARTMENTS = _Weighted(
    (DEPARTMENT_IDS[d.name], d.popularity) for d in data.DEPARTMENTS if d.publicly_visible
)
HIDDEN_DEPARTMENT_IDS = [DEPARTMENT_IDS[d.name] for d in data.DEPARTMENTS if not d.publicly_visible]
CURRENT_STATES = _Weighted(data.STATE_COMBINATIONS)
PAST_STATES = _Weighted(data.PAST_STATE_COMBINATIONS)
HIDDEN_STATES = _Weighted(data.HIDDEN_STATE_COMBINATIONS)


@dataclass
class _Application:
    """A volunteer application before it has its id (ids follow creation time)."""

    created: float
    event_id: int
    user_id: int
    leads: tuple[int, ...] = ()  # departments the volunteer leads
    volunteered_before: bool = False


@dataclass(frozen=True)
class _EventWindow:
    """An event and when its volunteer applications were open (POSIX times)."""

    event_id: int
    opened: float
    closed: float


@dataclass(frozen=True)
class _User:
    """What a volunteer's contact methods need to know about their user."""

    username: str
    email: str
    phone: str | None


class _Convention:
    """Makes every row of the demo from one seeded random generator, and hands each to `out`
    as soon as it is made."""

    def __init__(
        self,
        rng: random.Random,
        today: dt.date,
        user_count: int,
        volunteer_count: int,
        out: _Writer,
        password_hashes: dict[int, str],  # user id -> hash, for the demo logins
    ) -> None:
        self.rng, self.today = rng, today
        self.random = rng.random
        self.user_count, self.volunteer_count = user_count, volunteer_count
        self.tables = _tables()
        self.out, self.add = out, out.add
        self.password_hashes = password_hashes
        self.now = dt.datetime.combine(today, dt.time(), dt.UTC).timestamp()
        self.history_start = self.now - HISTORY_DAYS * 86400
        self.birthdays = _Weighted(  # (first, last) ordinal of the birthdays of an age group
            (
                (
                    _years_before(today, oldest + 1).toordinal() + 1,
                    _years_before(today, youngest).toordinal(),
                ),
                weight,
            )
            for youngest, oldest, weight in AGE_BUCKETS
        )
        # Filled as the build goes:
        self.event_name = self.past_event_name = ""
        self.past_event = self.current_event = _EventWindow(0, 0.0, 0.0)
        self.options: dict[int, list[tuple[int, _OptionSpec]]] = {}  # event id -> options
        self.created = array("d")  # sign-up times (POSIX); index: user id - 1
        self.taken_usernames = {login.username for login in LOGINS.values()}
        self.taken_emails = {_login_email(login) for login in LOGINS.values()}
        self.leads: dict[int, list[int]] = {}  # department id -> user ids
        self.past_volunteer_count = 0
        self.contact_method_id = 0
        self.assigned: list[int] = []  # volunteers with an assignment, for the Staff role
        self.role_pairs: set[tuple[int, int]] = set()  # (user id, role id) already given

    # Draws on the hot path: a little faster than Random's own choice() and randint().

    def _below(self, n: int) -> int:
        return int(self.random() * n)

    def _between(self, low: int, high: int) -> int:
        return low + int(self.random() * (high - low + 1))

    def _choice(self, items: Sequence[T]) -> T:
        return items[int(self.random() * len(items))]

    def build(self) -> None:
        self._events()
        self._roles()
        self._users()
        self._departments()
        self._volunteers()
        self._user_roles()
        self._permissions()

    def _after(self, start: float, end: float | None = None) -> float:
        """A time between start and end (default now), a little after start at the least."""
        end = self.now - 60 if end is None else end
        return start + self.random() * max(end - start, 1.0)

    def _updated(self, created: float) -> dt.datetime:
        """updated_at: as created for many records, some time after it for the others."""
        if self.random() < 0.45:
            return _timestamp(created)
        return _timestamp(self._after(created))

    # --- events --------------------------------------------------------------------------

    def _events(self) -> None:
        starts = self.today + dt.timedelta(days=self._between(100, 240))
        starts += dt.timedelta(days=(4 - starts.weekday()) % 7)  # a Friday
        past_starts = starts - dt.timedelta(weeks=52)
        midnight = dt.time(tzinfo=dt.UTC)
        past_created = dt.datetime.combine(past_starts - dt.timedelta(days=330), midnight)
        current_created = dt.datetime.combine(past_starts + dt.timedelta(days=16), midnight)
        self.event_name = f"{CONVENTION} {starts.year}"
        self.past_event_name = f"{CONVENTION} {starts.year - 1}"
        past_close = dt.datetime.combine(past_starts - dt.timedelta(days=3), midnight)
        self.past_event = _EventWindow(
            1, past_created.timestamp() + 30 * 86400, past_close.timestamp()
        )
        self.current_event = _EventWindow(2, current_created.timestamp() + 30 * 86400, self.now)
        for event in (
            {
                "id": 1,
                "name": self.past_event_name,
                "starts_on": past_starts,
                "ends_on": past_starts + dt.timedelta(days=2),
                "is_current": False,
                "created_at": past_created,
            },
            {
                "id": 2,
                "name": self.event_name,
                "starts_on": starts,
                "ends_on": starts + dt.timedelta(days=2),
                "is_current": True,
                "created_at": current_created,
            },
        ):
            self.add("events", event)
        self.options = {1: [], 2: []}
        option_id = 0
        for event_id, specs in ((1, PAST_OPTIONS), (2, CURRENT_OPTIONS)):
            for position, spec in enumerate(specs):
                option_id += 1
                self.options[event_id].append((option_id, spec))
                self.add(
                    "event_options",
                    {
                        "id": option_id,
                        "event_id": event_id,
                        "name": spec.name,
                        "type": spec.type.value,
                        "choices": spec.choices,
                        "position": position,
                    },
                )

    # --- roles ---------------------------------------------------------------------------

    def _roles(self) -> None:
        created = _timestamp(self.history_start)
        for name, staff in ROLES:
            self.add(
                "roles", {"id": ROLE_IDS[name], "name": name, "staff": staff, "created_at": created}
            )

    def _add_role(self, user_id: int, role: str, created: float, *, global_: bool = False) -> None:
        """Give a role, unless the user already holds it."""
        role_id = ROLE_IDS[role]
        if (user_id, role_id) in self.role_pairs:
            return
        self.role_pairs.add((user_id, role_id))
        self._role(user_id, role_id, created, global_=global_)

    def _role(self, user_id: int, role_id: int, created: float, *, global_: bool = False) -> None:
        scope = RoleScope.GLOBAL if global_ else RoleScope.CONVENTION
        self.add(
            "user_roles",
            {
                "user_id": user_id,
                "role_id": role_id,
                "scope": scope.value,
                "created_at": _timestamp(created),
            },
        )

    # --- users ---------------------------------------------------------------------------

    def _user_creation_times(self) -> list[float]:
        """Sign-up times, ascending (user ids follow creation order): a steady trickle, and
        a rush whenever registration for an event opens."""
        rng, start, end = self.rng, self.history_start, self.now - 3600
        openings = [event.opened - 30 * 86400 for event in (self.past_event, self.current_event)]
        times = []
        for _ in range(self.user_count):
            if self.random() < 0.35:
                at = self._choice(openings) + rng.expovariate(1 / (12 * 86400))
                times.append(min(at, end - self.random() * 86400))
            else:
                times.append(start + self.random() * (end - start))
        times.sort()
        return times

    def _users(self) -> None:
        self.created = array("d", self._user_creation_times())
        for user_id, created in enumerate(self.created, start=1):
            self.add("users", self._user(user_id, created))

    def _user(self, user_id: int, created: float) -> dict[str, Any]:
        rng, tables = self.rng, self.tables
        region = tables.regions.pick(rng)
        country = region.country
        place_index = self._below(len(country.places))
        born = dt.date.fromordinal(self._between(*self.birthdays.pick(rng)))
        login = LOGINS.get(user_id)
        if login is None:
            first, last, preferred, first_slug, last_slug = self._name(region)
            username = self._username(first_slug, last_slug, preferred, born)
            email = self._email(first_slug, last_slug, username, born)
        else:
            first, last, preferred = login.first_name, login.last_name, login.preferred_name
            username, email = login.username, _login_email(login)
        phone = None
        if self.random() >= NO_PHONE_SHARE:
            pattern = region.phones[place_index]
            phone = f"{pattern.prefix}{self._below(10**pattern.digits):0{pattern.digits}d}"
        row = {
            "id": user_id,
            "username": username,
            "email": email,
            "verified": login is not None or self.random() < 0.92,
            "identity_verified": login is not None or self.random() < 0.35,
            "first_name": first,
            "last_name": last,
            "preferred_name": preferred,
            "phone": phone,
            "born_at": born,
            "newsletter": self.random() < 0.4,
            "profile_picture_url": (
                f"https://avatars.example.net/{username.lower()}.png"
                if self.random() < 0.05
                else None
            ),
            "password_hash": self.password_hashes.get(user_id),
            "created_at": _timestamp(created),
            "updated_at": self._updated(created),
        }
        row.update(self._address(country, place_index))
        return row

    def _name(self, region: _Region) -> tuple[str, str, str | None, str, str]:
        """(first, last, preferred or None, slug of first, slug of last)."""
        rng, tables = self.rng, self.tables
        local = bool(region.cultures) and self.random() < region.country.local_share
        names = (region.cultures if local else tables.cultures).pick(rng)
        form = self._below(2)  # feminine or masculine forms
        first = self._choice(names.given[form])
        family = [self._choice(names.family[form])]
        if self.random() < names.culture.double_family:
            second = self._choice(names.family[form])
            if second != family[0]:
                family.append(second)
        preferred = None
        if self.random() < PREFERRED_NAME_SHARE:
            preferred = self._preferred_name(names, first)
        first_slug, last_slug = tables.slugs[first] or "fan", tables.slugs[family[0]] or "con"
        if not local and self.random() < 0.3:  # abroad, many write their name without accents
            first, family = tables.folded[first], [tables.folded[part] for part in family]
        last = " ".join(family)
        return first, last, preferred, first_slug, last_slug

    def _preferred_name(self, names: _Names, first: str) -> str:
        nickname = names.nicknames.get(first)
        if nickname and self.random() < 0.7:
            return nickname
        if names.culture.adopted and self.random() < 0.6:
            return self._choice(names.culture.adopted)
        return self._choice(data.FAN_NAMES)

    def _username(self, first: str, last: str, preferred: str | None, born: dt.date) -> str:
        camel = self.random() < 0.15
        roll = self.random()
        if roll < 0.14:
            base = f"{first.capitalize()}{last.capitalize()}" if camel else first + last
        elif roll < 0.24:
            base = f"{first}.{last}"
        elif roll < 0.31:
            base = f"{first}_{last}"
        elif roll < 0.41:
            base = first[0] + last
        elif roll < 0.46:
            base = first + last[0]
        elif roll < 0.56:
            base = f"{first}{born.year % 100:02d}"
        elif roll < 0.8:
            word, creature = self._choice(data.HANDLE_WORDS), self._choice(data.HANDLE_CREATURES)
            if camel:
                base = word.capitalize() + creature.capitalize()
            else:
                base = f"{word}{self._choice(('', '_', '-'))}{creature}"
        elif roll < 0.88:
            base = f"{self._choice(data.HANDLE_CREATURES)}{self._between(1, 999)}"
        elif preferred is not None and self.tables.slugs[preferred]:
            base = f"{self._choice(('', '', 'the', 'its', 'x_'))}{self.tables.slugs[preferred]}"
        else:
            base = f"{first}{last}{self._between(1, 99)}"
        return self._unique(base, self.taken_usernames, 64)

    def _email(self, first: str, last: str, username: str, born: dt.date) -> str:
        rng = self.rng
        roll = self.random()
        if roll < 0.3:
            local = f"{first}.{last}"
        elif roll < 0.45:
            local = first + last
        elif roll < 0.55:
            local = first[0] + last
        elif roll < 0.6:
            local = f"{first}_{last}"
        elif roll < 0.7:
            local = f"{first}{last}{born.year % 100:02d}"
        elif roll < 0.9:
            local = username.lower().strip("._-") or first
        elif roll < 0.95:
            local = f"{last}.{first}"
        else:
            local = f"{first}{self._between(1, 999)}"
        domain = EMAIL_DOMAINS.pick(rng)
        return self._unique(local, self.taken_emails, 60, suffix=f"@{domain}")

    def _unique(self, base: str, taken: set[str], max_length: int, suffix: str = "") -> str:
        """base + suffix, with digits added to base until no one has it (ignoring case)."""
        candidate = base[:max_length] + suffix
        while candidate.lower() in taken:
            candidate = f"{base[: max_length - 4]}{self._between(2, 9999)}{suffix}"
        taken.add(candidate.lower())
        return candidate

    def _address(self, country: data.Country, place_index: int) -> dict[str, str | None]:
        if self.random() < NO_ADDRESS_SHARE:  # api.md 2.2: then every child attribute is null
            return dict.fromkeys(ADDRESS_FIELDS)
        place = country.places[place_index]
        street = self._choice(place.streets or country.streets)
        number = self._between(1, country.max_house)
        if "{a}" in country.line1:  # Japanese block numbers: chome-ban-go
            line1 = country.line1.format(
                street=street, a=number, b=self._between(1, 20), c=self._between(1, 30)
            )
        else:
            line1 = country.line1.format(street=street, n=number)
        line2 = None
        if self.random() < 0.2:
            line2 = self._choice(country.units).format(
                n=self._between(1, 9), L=self._choice(data.POSTCODE_LETTERS[:6])
            )
        return {
            "address_line1": line1,
            "address_line2": line2,
            "address_city": place.city,
            "address_state": place.state,
            "address_zipcode": self._postcode(place.postcode),
            "address_country": country.code,
        }

    def _postcode(self, pattern: str) -> str:
        parts = []
        for part in _postcode_parts(pattern):
            if part[0] == "#":
                parts.append(f"{self._below(10 ** len(part)):0{len(part)}d}")
            elif part == "@":
                parts.append(self._choice(data.POSTCODE_LETTERS))
            else:
                parts.append(part)
        return "".join(parts)

    # --- departments ---------------------------------------------------------------------

    def _departments(self) -> None:
        rng = self.rng
        created = self.history_start
        # Leads are users other than the demo logins, dealt out in turn: there are fewer of
        # them than places to fill, so some lead two departments, as people do.
        bulk = range(len(LOGINS) + 1, self.user_count + 1)
        slots = {d.name: self._choice((1, 1, 2, 2, 2, 3)) for d in data.DEPARTMENTS}
        candidates = rng.sample(bulk, min(len(bulk), round(sum(slots.values()) * 0.8)))
        turn = 0
        for department_id, department in enumerate(data.DEPARTMENTS, start=1):
            self.add(
                "departments",
                {
                    "id": department_id,
                    "name": department.name,
                    "email": f"{department.email_local}@{data.DEPARTMENT_EMAIL_DOMAIN}",
                    "publicly_visible": department.publicly_visible,
                    "created_at": _timestamp(created),
                    "updated_at": self._updated(created),
                },
            )
            leads = []
            if department.name in LEAD_DEPARTMENTS:
                leads.append(LEAD.user_id)
            for _ in range(min(slots[department.name] - len(leads), len(candidates))):
                leads.append(candidates[turn % len(candidates)])
                turn += 1
            self.leads[department_id] = leads
            for user_id in leads:
                self.add("department_leads", {"department_id": department_id, "user_id": user_id})

    # --- volunteers ----------------------------------------------------------------------

    def _volunteers(self) -> None:
        rng, past_event, current_event = self.rng, self.past_event, self.current_event
        led: dict[int, list[int]] = {}
        for department_id, user_ids in self.leads.items():
            for user_id in user_ids:
                led.setdefault(user_id, []).append(department_id)
        # The attendee login and the leads first, then anyone.
        chosen = list(dict.fromkeys([ATTENDEE.user_id, *led]))[: self.volunteer_count]
        taken = set(chosen)
        missing = self.volunteer_count - len(chosen)
        bulk = range(len(LOGINS) + 1, self.user_count + 1)
        for user_id in rng.sample(bulk, min(len(bulk), missing + len(taken))):
            if len(chosen) == self.volunteer_count:
                break
            if user_id not in taken:
                chosen.append(user_id)
                taken.add(user_id)

        # Last year's volunteers: mostly people who are back this year.
        signed_up = bisect.bisect_left(self.created, past_event.closed - 86400)
        returning = [u for u in chosen if u <= signed_up and u not in LOGINS]
        wanted = round(self.volunteer_count * PAST_VOLUNTEER_SHARE)
        past = rng.sample(returning, min(len(returning), round(wanted * 0.75)))
        others = range(len(LOGINS) + 1, signed_up + 1)
        past_set = set(past)
        for user_id in rng.sample(others, min(len(others), wanted)):
            if len(past) >= wanted:
                break
            if user_id not in taken and user_id not in past_set:
                past.append(user_id)
                past_set.add(user_id)
        self.past_volunteer_count = len(past)

        applications = [
            _Application(
                created=self._after(max(self.created[u - 1], past_event.opened), past_event.closed),
                event_id=past_event.event_id,
                user_id=u,
            )
            for u in past
        ]
        applications += [
            _Application(
                created=self._after(max(self.created[u - 1], current_event.opened)),
                event_id=current_event.event_id,
                user_id=u,
                leads=tuple(led.get(u, ())),
                volunteered_before=u in past_set,
            )
            for u in chosen
        ]
        applications.sort(key=lambda a: (a.created, a.event_id, a.user_id))
        # Their users' contact details, read back a chunk of volunteers at a time.
        for start in range(0, len(applications), self.out.chunk_rows):
            chunk = applications[start : start + self.out.chunk_rows]
            contacts = self.out.contacts(application.user_id for application in chunk)
            for volunteer_id, application in enumerate(chunk, start=start + 1):
                self._volunteer(volunteer_id, application, _User(*contacts[application.user_id]))

    def _volunteer(self, volunteer_id: int, application: _Application, person: _User) -> None:
        self.add(
            "volunteers",
            {
                "id": volunteer_id,
                "event_id": application.event_id,
                "user_id": application.user_id,
                "created_at": _timestamp(application.created),
                "updated_at": self._updated(application.created),
            },
        )
        self._contact_methods(volunteer_id, person)
        self._department_states(volunteer_id, application)
        for option_id, spec in self.options[application.event_id]:
            if self.random() < spec.answered:
                value = spec.answer(self.rng, application.volunteered_before)
                self.add(
                    "volunteer_option_values",
                    {"volunteer_id": volunteer_id, "option_id": option_id, "value": value},
                )
        if application.event_id == self.current_event.event_id:
            self._add_role(application.user_id, "Volunteer", application.created)

    def _contact_methods(self, volunteer_id: int, person: _User) -> None:
        rng = self.rng
        wanted = rng.choices((1, 2, 3), (45, 35, 20))[0]
        handle = "".join(c for c in person.username.lower() if c.isalnum() or c in "._")
        handle = handle.strip("._") or "volunteer"
        methods: dict[str, str] = {}
        for _attempt in range(12):
            if len(methods) == wanted:
                break
            name = CONTACT_METHODS.pick(rng)
            if name in methods or (name in ("Phone", "WhatsApp") and person.phone is None):
                continue
            methods[name] = self._contact_value(name, handle, person)
        if not methods:
            methods["E-mail"] = person.email
        primary = 0 if self.random() < 0.7 else self._below(len(methods))
        for position, (name, value) in enumerate(methods.items()):
            self.contact_method_id += 1
            self.add(
                "volunteer_contact_methods",
                {
                    "id": self.contact_method_id,
                    "volunteer_id": volunteer_id,
                    "position": position,
                    "name": name,
                    "value": value,
                    "is_primary": position == primary,
                },
            )

    def _contact_value(self, name: str, handle: str, person: _User) -> str:
        if name == "Discord":
            return handle.replace("-", "_")
        if name == "Telegram":
            return "@" + handle.replace(".", "_").ljust(5, "0")
        if name == "Signal":
            return person.phone or f"{handle}.{self._between(10, 99)}"
        if name in ("Phone", "WhatsApp"):
            return person.phone or person.email
        if name == "Bluesky":
            return f"{handle.replace('_', '-').replace('.', '-')}.bsky.social"
        return person.email

    def _department_states(self, volunteer_id: int, application: _Application) -> None:
        rng = self.rng
        past = application.event_id != self.current_event.event_id
        states: dict[int, tuple[str, ...]] = {}
        for department_id in application.leads:
            states[department_id] = ("experience", "assignment")
        if application.leads:
            wanted = len(states) + self._choice((0, 0, 1, 2))
        elif past:  # what they ended up doing last year
            wanted = self._choice((1, 1, 1, 2))
        else:
            wanted = rng.choices((1, 2, 3, 4), (30, 35, 25, 10))[0]
        combinations = PAST_STATES if past else CURRENT_STATES
        for _attempt in range(12):
            if len(states) >= wanted:
                break
            department_id = PUBLIC_DEPARTMENTS.pick(rng)
            if department_id not in states:
                states[department_id] = combinations.pick(rng)
        if self.random() < 0.03:  # staff placed in a department applicants do not see
            department_id = self._choice(HIDDEN_DEPARTMENT_IDS)
            states.setdefault(department_id, HIDDEN_STATES.pick(rng))
        for department_id, flags in states.items():
            for state in flags:
                self.add(
                    "volunteer_department_states",
                    {"volunteer_id": volunteer_id, "department_id": department_id, "state": state},
                )
        plain = not past and not application.leads and application.user_id not in LOGINS
        if plain and any("assignment" in flags for flags in states.values()):
            self.assigned.append(application.user_id)

    # --- roles and permissions of users --------------------------------------------------

    def _user_roles(self) -> None:
        rng, created = self.rng, self.created
        bulk = range(len(LOGINS) + 1, self.user_count + 1)
        self._add_role(ADMIN.user_id, "Staff", created[0], global_=True)
        self._add_role(ADMIN.user_id, "Board", created[0], global_=True)
        for user_id in rng.sample(bulk, min(len(bulk), BOARD_SIZE - 1)):
            self._add_role(user_id, "Board", created[user_id - 1], global_=True)
        for user_ids in self.leads.values():
            for user_id in user_ids:
                self._add_role(user_id, "Department Head", created[user_id - 1])
        for user_id in self.assigned:
            if self.random() < 0.3:
                self._add_role(user_id, "Staff", created[user_id - 1], global_=False)
        for user_id in rng.sample(bulk, min(len(bulk), GUESTS_OF_HONOR)):
            self._add_role(user_id, "Guest of Honor", created[user_id - 1])
        for role, share, global_share in OCCASIONAL_ROLES:
            count = min(len(bulk), round(self.user_count * share))
            for user_id in rng.sample(bulk, count):
                global_ = self.random() < global_share
                self._add_role(user_id, role, created[user_id - 1], global_=global_)
        # Attendee last: no one holds it yet and each user comes up once, so these pairs (a
        # million at a million users) need not be remembered in role_pairs.
        attendee = ROLE_IDS["Attendee"]
        for user_id in range(ADMIN.user_id + 1, self.user_count + 1):
            if user_id in LOGINS or self.random() < ATTENDEE_SHARE:
                self._role(user_id, attendee, created[user_id - 1])

    def _permissions(self) -> None:
        """The admin login holds `admin`; the lead login and a couple of staff hold sensitive
        scopes' permissions (decisions.md, Scopes)."""
        granted = {ADMIN.user_id: ["admin"], LEAD.user_id: ["volunteer:read", "user:read"]}
        registration = self.leads[DEPARTMENT_IDS["Registration"]]
        volunteer_ops = self.leads[DEPARTMENT_IDS["Volunteer Ops"]]
        for user_id in registration[:1]:
            granted.setdefault(user_id, []).append("user:read")
        for user_id in volunteer_ops:
            granted.setdefault(user_id, []).append("volunteer:read")
        for user_id, names in granted.items():
            for name in dict.fromkeys(names):
                self.add("user_permissions", {"user_id": user_id, "name": name})
