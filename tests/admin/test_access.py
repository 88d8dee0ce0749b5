"""Who may use each admin page and form action, as one table (pretix's pattern, STYLE.md).

Every route of the application under /admin, and the volunteer application form, has one
declared rule below; `test_every_route_has_a_declared_rule` fails as soon as a route is added
(or removed) without its line here, so no page can forget its guard. For each route:

- a signed-out visitor is sent to log in (303 to /login) and nothing in the database changes;
- a plain attendee is refused (403 "Not permitted"), except on the volunteer form;
- the lead of "Hotel" is refused on admin-only routes and on the "Security" department's
  records (its page, its volunteers' applications), and nothing changes;
- those who may use a route are let in: the administrator everywhere, the lead of
  "Security" on its records, any organizer on the organizers' pages.

A POST carries a valid CSRF token of the person's own session, so that what refuses it is the
permission rule, not the CSRF check. Path parameters are filled by their name: {user_id},
{department_id}, {role_id}, {client_id}, {volunteer_id}, {option_id} (under
/admin/registration-options, the registration option), {product_id}, {number} (an order's),
{registration_id} and {flag_id} name seeded records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from sqlalchemy import Engine, select

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.events.models import EventOption
from regdesk.events.options import OptionSpec
from regdesk.oauth.applications import create_application
from regdesk.registrations.flags import create_flag
from regdesk.registrations.options import REGISTRATION_OPTIONS
from regdesk.roles.models import Role
from regdesk.transfer.importer import import_document
from regdesk.volunteers.models import Volunteer
from regdesk.webhooks.endpoints import add_endpoint
from tests.admin.registering import make_product, registered
from tests.admin.support import People, Person
from tests.client import TestClient
from tests.helpers import every_table


class Rule(Enum):
    ADMIN = "administrators only"
    ORGANIZER = "administrators and every department lead"
    SECURITY = "administrators and the leads of the department the record belongs to"
    SIGNED_IN = "anyone signed in"


A, O, S = Rule.ADMIN, Rule.ORGANIZER, Rule.SECURITY  # noqa: E741 (short: the table reads as one)

# The admin area: (method, path) -> who may use it. {department_id} and {volunteer_id} name
# records of the "Security" department, so a route a lead may use for their own department's
# records is SECURITY here.
ADMIN_AREA: dict[tuple[str, str], Rule] = {
    ("GET", "/admin"): O,
    # users
    ("GET", "/admin/users"): A,
    ("GET", "/admin/users/{user_id}"): A,
    ("GET", "/admin/users/{user_id}/edit"): A,
    ("POST", "/admin/users/{user_id}/edit"): A,
    ("POST", "/admin/users/{user_id}/roles"): A,
    ("POST", "/admin/users/{user_id}/roles/{role_id}/remove"): A,
    ("POST", "/admin/users/{user_id}/permissions"): A,
    ("GET", "/admin/users/{user_id}/password"): A,
    ("POST", "/admin/users/{user_id}/password"): A,
    # roles
    ("GET", "/admin/roles"): A,
    ("POST", "/admin/roles"): A,
    ("GET", "/admin/roles/{role_id}"): A,
    ("POST", "/admin/roles/{role_id}"): A,
    ("POST", "/admin/roles/{role_id}/delete"): A,
    # departments
    ("GET", "/admin/departments"): O,
    ("POST", "/admin/departments"): A,
    ("GET", "/admin/departments/{department_id}"): S,
    ("POST", "/admin/departments/{department_id}"): S,
    ("POST", "/admin/departments/{department_id}/leads"): A,
    ("POST", "/admin/departments/{department_id}/leads/{user_id}/remove"): A,
    # volunteer applications
    ("GET", "/admin/volunteers"): O,
    ("GET", "/admin/volunteers/{volunteer_id}"): S,
    ("POST", "/admin/volunteers/{volunteer_id}/departments/{department_id}"): S,
    # the event's options on the application form
    ("GET", "/admin/options"): A,
    ("GET", "/admin/options/new"): A,
    ("POST", "/admin/options/new"): A,
    ("GET", "/admin/options/{option_id}"): A,
    ("POST", "/admin/options/{option_id}"): A,
    ("GET", "/admin/options/{option_id}/delete"): A,
    ("POST", "/admin/options/{option_id}/delete"): A,
    # products, orders and registrations (registrations.md, Pages)
    ("GET", "/admin/products"): A,
    ("GET", "/admin/products/new"): A,
    ("POST", "/admin/products/new"): A,
    ("GET", "/admin/products/{product_id}"): A,
    ("POST", "/admin/products/{product_id}"): A,
    ("GET", "/admin/orders"): A,
    ("GET", "/admin/orders/{number}"): A,
    ("POST", "/admin/orders/{number}/pay"): A,
    ("POST", "/admin/orders/{number}/cancel"): A,
    ("POST", "/admin/orders/{number}/refund"): A,
    ("POST", "/admin/orders/{number}/product"): A,
    ("GET", "/admin/registrations"): A,
    ("GET", "/admin/registrations.csv"): A,
    ("GET", "/admin/registrations/{registration_id}"): A,
    ("POST", "/admin/registrations/{registration_id}"): A,
    ("POST", "/admin/registrations/{registration_id}/flags"): A,
    # the event's options on the registration form, and the flags on registrations
    ("GET", "/admin/registration-options"): A,
    ("GET", "/admin/registration-options/new"): A,
    ("POST", "/admin/registration-options/new"): A,
    ("GET", "/admin/registration-options/{option_id}"): A,
    ("POST", "/admin/registration-options/{option_id}"): A,
    ("GET", "/admin/registration-options/{option_id}/delete"): A,
    ("POST", "/admin/registration-options/{option_id}/delete"): A,
    ("GET", "/admin/flags"): A,
    ("POST", "/admin/flags"): A,
    ("POST", "/admin/flags/{flag_id}"): A,
    ("POST", "/admin/flags/{flag_id}/delete"): A,
    # OAuth applications
    ("GET", "/admin/applications"): A,
    ("GET", "/admin/applications/new"): A,
    ("POST", "/admin/applications/new"): A,
    ("GET", "/admin/applications/{client_id}"): A,
    ("POST", "/admin/applications/{client_id}"): A,
    ("POST", "/admin/applications/{client_id}/rotate-secret"): A,
    ("POST", "/admin/applications/{client_id}/suspend"): A,
    ("POST", "/admin/applications/{client_id}/unsuspend"): A,
    # its webhook endpoints
    ("POST", "/admin/applications/{client_id}/webhooks"): A,
    ("GET", "/admin/applications/{client_id}/webhooks/{endpoint_id}"): A,
    ("POST", "/admin/applications/{client_id}/webhooks/{endpoint_id}/enable"): A,
    ("POST", "/admin/applications/{client_id}/webhooks/{endpoint_id}/disable"): A,
    ("POST", "/admin/applications/{client_id}/webhooks/{endpoint_id}/remove"): A,
    ("POST", "/admin/applications/{client_id}/webhooks/{endpoint_id}/ping"): A,
    ("POST", "/admin/applications/{client_id}/webhooks/{endpoint_id}/redeliver"): A,
    # import and export
    ("GET", "/admin/transfer"): A,
    ("POST", "/admin/transfer/import"): A,
    ("POST", "/admin/transfer/export"): A,
    # the audit log
    ("GET", "/admin/audit"): A,
    # the mail outbox
    ("GET", "/admin/mail"): A,
}

# Outside the admin area, but in this table: the form any signed-in attendee uses to apply.
VOLUNTEER_FORM: dict[tuple[str, str], Rule] = {
    ("GET", "/volunteer"): Rule.SIGNED_IN,
    ("POST", "/volunteer"): Rule.SIGNED_IN,
}

TABLE = {**ADMIN_AREA, **VOLUNTEER_FORM}
COVERED = ("/admin", "/volunteer")


def app_routes(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path) of every route under /admin and /volunteer, included routers flattened."""
    return {
        (method, context.path)
        for context in iter_route_contexts(app.routes)
        if context.path and context.path.startswith(COVERED)
        for method in context.methods or ()
        if method != "HEAD"
    }


def test_every_route_has_a_declared_rule(app: FastAPI) -> None:
    routes = app_routes(app)
    undeclared = sorted(routes - TABLE.keys())
    assert not undeclared, (
        f"routes without a rule in {__name__}: {undeclared}. Declare who may use each "
        "(ADMIN_AREA, or VOLUNTEER_FORM for pages any signed-in user may use)."
    )
    assert not sorted(TABLE.keys() - routes), "rules for routes that no longer exist"


# --- the records the paths name -------------------------------------------------------------


@dataclass(frozen=True)
class Records:
    user_id: int  # the attendee
    department_id: int  # "Security"
    role_id: int
    client_id: int
    volunteer_id: int  # the attendee's application, to "Security" only
    option_id: int
    registration_option_id: int
    product_id: int
    number: str  # the attendee's order
    registration_id: int  # the attendee's
    flag_id: int
    endpoint_id: int  # a webhook endpoint of the application

    def path(self, template: str) -> str:
        values = {name: str(value) for name, value in vars(self).items()}
        if template.startswith("/admin/registration-options/"):
            values["option_id"] = values["registration_option_id"]
        filled = template.format(**values)
        assert "{" not in filled, f"{template}: a parameter the table cannot fill"
        return filled


@pytest.fixture
def records(engine: Engine, people: People) -> Records:
    document: dict[str, Any] = {
        "roles": [{"name": "Staff", "staff": True}],
        "event": {
            "name": "Con 2026",
            "options": [{"name": "Shirt size", "type": "select", "choices": ["M", "L"]}],
        },
        "volunteers": [
            {
                "user": people.attendee.username,
                "contactMethods": [{"name": "Discord", "isPrimary": True, "value": "ann"}],
                "departments": [{"name": "Security", "states": ["interest"]}],
                "options": [{"name": "Shirt size", "type": "select", "value": "L"}],
            }
        ],
    }
    import_document(engine, document, actor=Actor("test"), phone_region="US")
    product_id = make_product(engine, "attendee")
    held = registered(engine, people.attendee.user_id, product_id, badge="Ann")
    with write_session(engine) as session:
        application, _ = create_application(
            session, Actor("test"), name="Time clock", service_scopes="user:read"
        )
        registration_option = REGISTRATION_OPTIONS.create(
            session, Actor("test"), OptionSpec("T-shirt size", "select", "S\nM")
        )
        return Records(
            user_id=people.attendee.user_id,
            department_id=people.security_id,
            role_id=session.scalars(select(Role.id)).one(),
            client_id=application.id,
            volunteer_id=session.scalars(select(Volunteer.id)).one(),
            option_id=session.scalars(select(EventOption.id)).one(),
            registration_option_id=registration_option.id,
            product_id=product_id,
            number=held.number,
            registration_id=held.registration_id,
            flag_id=create_flag(session, Actor("test"), "fursuits").id,
            endpoint_id=add_endpoint(
                session, Actor("test"), application.id, "http://127.0.0.1:9/", allow_private=True
            ).id,
        )


def table_dump(engine: Engine) -> dict[str, list[str]]:
    """Every row of every table. A session's last-seen time is left out: merely being
    signed in may move it (regdesk.web.sessions), which changes nothing anyone owns."""
    dump = {}
    tables = every_table(engine)
    with engine.connect() as connection:
        for table in tables:
            columns = [c for c in table.columns if c.name != "last_seen_at"]
            dump[table.name] = sorted(
                repr(tuple(row)) for row in connection.execute(select(*columns))
            )
    return dump


# --- asking ---------------------------------------------------------------------------------


def ask(client: TestClient, method: str, path: str, csrf_token: str) -> httpx.Response:
    if method == "GET":
        return client.get(path, follow_redirects=False)
    return client.post(path, data={"csrf_token": csrf_token}, follow_redirects=False)


def rows(rule: Rule) -> Iterator[tuple[str, str]]:
    return (key for key, declared in TABLE.items() if declared is rule)


def refused(response: httpx.Response) -> bool:
    """The permission rule's answer (not the CSRF check's "Form not accepted")."""
    return response.status_code == 403 and "Not permitted" in response.text


def let_in(response: httpx.Response) -> bool:
    location = response.headers.get("location", "")
    return response.status_code != 403 and not location.startswith("/login")


def test_a_signed_out_visitor_is_sent_to_log_in_and_changes_nothing(
    engine: Engine, people: People, records: Records, client: TestClient
) -> None:
    before = table_dump(engine)
    wrong = []
    for method, template in TABLE:
        path = records.path(template)
        response = ask(client, method, path, "no-session-no-token")
        location = response.headers.get("location", "")
        if response.status_code != 303 or not location.startswith("/login?next="):
            wrong.append(f"{method} {path}: {response.status_code} {location}")
    assert wrong == []
    assert table_dump(engine) == before


def _refusals(person: Person, keys: list[tuple[str, str]], records: Records) -> list[str]:
    token = person.csrf_token()
    wrong = []
    for method, template in keys:
        path = records.path(template)
        response = ask(person.client, method, path, token)
        if not refused(response):
            wrong.append(f"{method} {path}: {response.status_code}")
    return wrong


def test_a_plain_attendee_is_refused_everywhere_but_the_volunteer_form(
    engine: Engine, people: People, records: Records
) -> None:
    before = table_dump(engine)
    assert _refusals(people.attendee, list(ADMIN_AREA), records) == []
    assert table_dump(engine) == before
    token = people.attendee.csrf_token()
    for method, template in VOLUNTEER_FORM:
        response = ask(people.attendee.client, method, records.path(template), token)
        assert let_in(response), (method, template, response.status_code)


def test_the_lead_of_another_department_is_refused_on_admin_and_security_routes(
    engine: Engine, people: People, records: Records
) -> None:
    before = table_dump(engine)
    keys = [*rows(Rule.ADMIN), *rows(Rule.SECURITY)]
    assert _refusals(people.hotel_lead, keys, records) == []
    assert table_dump(engine) == before
    # ...and is let into the pages every organizer has (their own lists).
    for method, template in rows(Rule.ORGANIZER):
        response = ask(people.hotel_lead.client, method, records.path(template), "")
        assert response.status_code == 200, (method, template, response.status_code)


def test_the_departments_own_lead_is_let_in_to_its_records_only(
    people: People, records: Records
) -> None:
    lead = people.security_lead
    assert _refusals(lead, list(rows(Rule.ADMIN)), records) == []
    token = lead.csrf_token()
    for method, template in [*rows(Rule.ORGANIZER), *rows(Rule.SECURITY)]:
        response = ask(lead.client, method, records.path(template), token)
        assert let_in(response), (method, template, response.status_code)
        if method == "GET":
            assert response.status_code == 200, (template, response.status_code)


@pytest.mark.postgresql_too
def test_an_administrator_opens_every_page(people: People, records: Records) -> None:
    """Every GET of the table answers the administrator with a page: the guard is the only
    thing the other tests see refusing, and the paths' parameters name real records."""
    for method, template in TABLE:
        if method == "GET":
            response = people.admin.get(records.path(template))
            assert response.status_code == 200, (template, response.status_code)
