"""The demo convention: its events and roles, then its people, their volunteering and their
registrations, every row from one seeded random generator."""

from __future__ import annotations

import datetime as dt

from regdesk.demo.generator import ROLE_IDS, ROLES, _EventWindow
from regdesk.demo.logins import ADMIN, LEAD, LOGINS
from regdesk.demo.people import People
from regdesk.demo.places import (
    timestamp_of,
)
from regdesk.demo.questions import CURRENT_OPTIONS, PAST_OPTIONS
from regdesk.demo.registering import Registering
from regdesk.demo.volunteering import DEPARTMENT_IDS, Volunteering

CONVENTION = "RegCon"
ATTENDEE_SHARE = 0.78
# (role, share of users holding it, share of those holding it globally)
OCCASIONAL_ROLES = (
    ("Dealer", 0.012, 0.2),
    ("Artist", 0.018, 0.15),
    ("Panelist", 0.01, 0.0),
    ("Press", 0.002, 0.0),
)
BOARD_SIZE = 5
GUESTS_OF_HONOR = 4


class Convention(People, Volunteering, Registering):
    """Every row of the demo, in the order parents come before their children."""

    def build(self) -> None:
        self._events()
        self._roles()
        self._users()
        self._departments()
        self._volunteers()
        self._user_roles()
        self._permissions()
        self._registrations()  # last: the rows before it are as they were without it

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

    def _roles(self) -> None:
        created = timestamp_of(self.history_start)
        for name, staff in ROLES:
            self.add(
                "roles", {"id": ROLE_IDS[name], "name": name, "staff": staff, "created_at": created}
            )

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
