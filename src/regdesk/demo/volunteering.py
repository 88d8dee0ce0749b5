"""The demo's volunteering: departments with leads, and volunteer applications with contact
methods, department states and answers to the event's questions."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from regdesk.demo import data
from regdesk.demo.generator import Generator
from regdesk.demo.logins import ATTENDEE, LEAD, LEAD_DEPARTMENTS, LOGINS
from regdesk.demo.places import Weighted, timestamp_of

PAST_VOLUNTEER_SHARE = 0.35  # past-event volunteers, per volunteer of the current event
CONTACT_METHODS = Weighted(data.CONTACT_METHODS)
DEPARTMENT_IDS = {department.name: i for i, department in enumerate(data.DEPARTMENTS, start=1)}
PUBLIC_DEPARTMENTS = Weighted(
    (DEPARTMENT_IDS[d.name], d.popularity) for d in data.DEPARTMENTS if d.publicly_visible
)
HIDDEN_DEPARTMENT_IDS = [DEPARTMENT_IDS[d.name] for d in data.DEPARTMENTS if not d.publicly_visible]
CURRENT_STATES = Weighted(data.STATE_COMBINATIONS)
PAST_STATES = Weighted(data.PAST_STATE_COMBINATIONS)
HIDDEN_STATES = Weighted(data.HIDDEN_STATE_COMBINATIONS)


@dataclass
class _Application:
    """A volunteer application before it has its id (ids follow creation time)."""

    created: float
    event_id: int
    user_id: int
    leads: tuple[int, ...] = ()  # departments the volunteer leads
    volunteered_before: bool = False


@dataclass(frozen=True)
class _User:
    """What a volunteer's contact methods need to know about their user."""

    username: str
    email: str
    phone: str | None


class Volunteering(Generator):
    """The departments' and the volunteers' rows."""

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
                    "created_at": timestamp_of(created),
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
                "created_at": timestamp_of(application.created),
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
