"""What every part of the demo convention draws on: one seeded random generator, the
clock of the convention's history, and the rows written so far that later rows need."""

from __future__ import annotations

import datetime as dt
import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from regdesk.demo.logins import LOGINS, login_email
from regdesk.demo.places import (
    T,
    Weighted,
    place_tables,
    timestamp_of,
    years_before,
)
from regdesk.demo.questions import OptionSpec
from regdesk.demo.writer import Writer
from regdesk.roles.models import RoleScope

HISTORY_DAYS = 900  # users signed up over the past two and a half years

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

# (youngest, oldest, weight): fandom skews young, but not only.
AGE_BUCKETS = ((16, 17, 3), (18, 24, 25), (25, 34, 35), (35, 44, 20), (45, 54, 10), (55, 64, 5),
               (65, 75, 2))  # fmt: skip


@dataclass(frozen=True)
class _EventWindow:
    """An event and when its volunteer applications were open (POSIX times)."""

    event_id: int
    opened: float
    closed: float


class Generator:
    """Makes rows from one seeded random generator and hands each to `out` as soon as it is
    made (People, Volunteering and Convention each make their part)."""

    def __init__(
        self,
        rng: random.Random,
        today: dt.date,
        user_count: int,
        volunteer_count: int,
        out: Writer,
        *,
        registration_count: int = 0,
        currency: str = "USD",  # the orders' (settings.currency)
    ) -> None:
        self.rng, self.today = rng, today
        self.random = rng.random
        self.user_count, self.volunteer_count = user_count, volunteer_count
        self.registration_count, self.currency = registration_count, currency
        self.tables = place_tables()
        self.out, self.add = out, out.add
        self.now = dt.datetime.combine(today, dt.time(), dt.UTC).timestamp()
        self.history_start = self.now - HISTORY_DAYS * 86400
        self.birthdays = Weighted(  # (first, last) ordinal of the birthdays of an age group
            (
                (
                    years_before(today, oldest + 1).toordinal() + 1,
                    years_before(today, youngest).toordinal(),
                ),
                weight,
            )
            for youngest, oldest, weight in AGE_BUCKETS
        )
        # Filled as the build goes:
        self.event_name = self.past_event_name = ""
        self.past_event = self.current_event = _EventWindow(0, 0.0, 0.0)
        self.options: dict[int, list[tuple[int, OptionSpec]]] = {}  # event id -> options
        self.created = array("d")  # sign-up times (POSIX); index: user id - 1
        self.taken_usernames = {login.username for login in LOGINS.values()}
        self.taken_emails = {login_email(login) for login in LOGINS.values()}
        self.leads: dict[int, list[int]] = {}  # department id -> user ids
        self.past_volunteer_count = 0
        self.paid_count = 0  # registrations whose order is paid
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

    def _after(self, start: float, end: float | None = None) -> float:
        """A time between start and end (default now), a little after start at the least."""
        end = self.now - 60 if end is None else end
        return start + self.random() * max(end - start, 1.0)

    def _updated(self, created: float, created_at: dt.datetime | None = None) -> dt.datetime:
        """updated_at: as created for many records, some time after it for the others
        (`created_at`: created's timestamp, when the caller has made it already)."""
        if self.random() < 0.45:
            return timestamp_of(created) if created_at is None else created_at
        return timestamp_of(self._after(created))

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
                "created_at": timestamp_of(created),
            },
        )
