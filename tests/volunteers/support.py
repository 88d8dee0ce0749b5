"""What the volunteer-application page tests share: the current event's options and
departments, the form as a volunteer fills it, the record the API must show for it, and readers
of the pages. Used by tests/web/test_volunteering.py (the form at /volunteer),
tests/admin/test_options.py (/admin/options) and tests/admin/test_volunteers.py (the review)."""

from __future__ import annotations

import html as html_module
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.volunteers.models import Volunteer
from regdesk.volunteers.options import OptionSpec, create_option
from tests.admin.support import People, Person, department
from tests.conftest import Apps, bearer


@dataclass(frozen=True)
class Event:
    """The options of the current event, and the departments, by name -> id."""

    options: dict[str, int]
    departments: dict[str, int]


def make_event(engine: Engine, people: People) -> Event:
    """Four options of each type, and the departments: the people's two, another one open to
    applicants and a hidden one (the `event` fixture of each test file)."""
    options = {}
    with write_session(engine) as session:
        for spec in (
            OptionSpec("Shirt size", "select", "S\nM\nL\nXL"),
            OptionSpec("Skills", "multi", "First aid\nDriving\nSign language"),
            OptionSpec("Notes", "text"),
            OptionSpec("Hours", "number"),
        ):
            options[spec.name] = create_option(session, Actor("test"), spec).id
    departments = {
        "Security": people.security_id,
        "Hotel": people.hotel_id,
        "Registration": department(engine, "Registration"),
        "Backstage": department(engine, "Backstage", visible=False),
    }
    return Event(options, departments)


def api_record(apps: Apps, user_id: int) -> Any:
    """GET /api/v0/users/{id}/volunteer with a service token, as a tool reads it."""
    response = apps.client.get(
        f"/api/v0/users/{user_id}/volunteer", headers=bearer(apps.service_token("volunteer:read"))
    )
    return response.json() if response.status_code == 200 else response.status_code


def contact(index: int, name: str, value: str, primary: bool = False) -> dict[str, str]:
    fields = {f"contact-{index}-name": name, f"contact-{index}-value": value}
    if primary:
        fields[f"contact-{index}-primary"] = "yes"
    return fields


def full_form(event: Event) -> dict[str, Any]:
    """Every kind of field filled: two contact rows of three, two interests, one avoid and an
    experience, and each type of option."""
    o, d = event.options, event.departments
    return {
        **contact(0, "Discord", "fox#1234", primary=True),
        **contact(1, "", ""),
        **contact(2, "Telegram", "@fae_fox"),
        f"department-{d['Security']}": ["interest", "experience"],
        f"department-{d['Registration']}": ["interest"],
        f"department-{d['Hotel']}": ["avoid"],
        f"option-{o['Shirt size']}": "L",
        f"option-{o['Skills']}": ["First aid", "Driving"],
        f"option-{o['Notes']}": "Can lift 20 kg",
        f"option-{o['Hours']}": "12",
    }


def expected_record(event: Event, user: Person) -> dict[str, Any]:
    d = event.departments
    return {
        "contactMethods": [
            {"name": "Discord", "isPrimary": True, "value": "fox#1234"},
            {"name": "Telegram", "isPrimary": False, "value": "@fae_fox"},
        ],
        # Departments in id order (Security, Hotel, Registration), states in api.md's order.
        "departments": [
            {"id": str(d["Security"]), "name": "Security", "states": ["experience", "interest"]},
            {"id": str(d["Hotel"]), "name": "Hotel", "states": ["avoid"]},
            {"id": str(d["Registration"]), "name": "Registration", "states": ["interest"]},
        ],
        "user": {
            "id": str(user.user_id),
            "firstName": "Fae",
            "lastName": user.username.capitalize(),
            "username": user.username,
            "preferredName": None,
            "phone": None,
            "email": f"{user.username}@example.org",
            "isStaff": False,
        },
        "options": [
            {"name": "Shirt size", "type": "select", "value": "L"},
            {"name": "Skills", "type": "multi", "value": ["First aid", "Driving"]},
            {"name": "Notes", "type": "text", "value": "Can lift 20 kg"},
            {"name": "Hours", "type": "number", "value": 12},
        ],
    }


def without_times(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in ("createdAt", "updatedAt")}


def volunteer_count(engine: Engine) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(Volunteer)) or 0


def volunteer_id(engine: Engine, user_id: int) -> int:
    with Session(engine) as session:
        found = session.scalar(select(Volunteer.id).where(Volunteer.user_id == user_id))
        assert found is not None
        return found


def is_checked(html: str, element_id: str) -> bool:
    tag = re.search(rf'<input id="{re.escape(element_id)}"[^>]*>', html)
    assert tag is not None, f"no input {element_id}"
    return " checked" in tag.group(0)


def field_error(html: str, name: str) -> str:
    """The message shown under a field, which the field points at (aria-describedby)."""
    found = re.search(rf'<p class="field-error" id="{re.escape(name)}-error">([^<]*)</p>', html)
    assert found is not None, f"no error shown for {name}"
    assert f'aria-describedby="{name}-error"' in html or f"{name}-error" in html
    return html_module.unescape(found.group(1))
