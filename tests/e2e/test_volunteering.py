"""The volunteer application form and its review, in a real browser against `regdesk serve`.

An attendee applies and edits their application; an administrator adds a question to the
form; a department lead finds an application by department and state and assigns the
volunteer; the lead of another department can neither see nor change it. Each result is
checked through the API as a tool reads it (api.md 2.5). Screenshots: build/screenshots/.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.departments.models import Department, DepartmentLead
from regdesk.oauth.applications import create_application
from regdesk.users.service import NewUser, create_user
from regdesk.volunteers.form import Application, ContactMethod, save_application
from regdesk.volunteers.options import OptionSpec, create_option
from tests import http_calls
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, log_in, screenshot
from tests.helpers import live_server

DEPARTMENTS = ("Security", "Hotel", "Registration")  # publicly visible, in id order
HIDDEN = "Backstage"


@dataclass(frozen=True)
class Site:
    base: str
    engine: Engine
    users: dict[str, int]
    departments: dict[str, int]
    client_id: str
    client_secret: str

    def api(self, path: str) -> httpx.Response:
        """A GET of the API by a service integration holding volunteer:read."""
        token = http_calls.post(
            f"{self.base}/api/oauth/token",
            data={"grant_type": "client_credentials", "scope": "volunteer:read"},
            auth=(self.client_id, self.client_secret),
        )
        assert token.status_code == 200, token.text
        bearer = {"Authorization": f"Bearer {token.json()['access_token']}"}
        return http_calls.get(f"{self.base}{path}", headers=bearer)

    def volunteer(self, username: str) -> Any:
        response = self.api(f"/api/v0/users/{self.users[username]}/volunteer")
        assert response.status_code == 200, response.text
        return response.json()


def _user(session: Any, username: str, permissions: list[str] | None = None) -> int:
    made = create_user(
        session,
        Actor("test"),
        NewUser(
            username=username,
            email=f"{username}@example.org",
            first_name=username.capitalize(),
            last_name="Tester",
            password=PASSWORD,
            permissions=permissions or [],
        ),
    )
    return made.id


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e-volunteering") / "regdesk.sqlite3")
    engine = make_engine(url)
    with write_session(engine) as session:
        users = {name: _user(session, name) for name in ("fox", "owl", "sam", "hal", "kit", "lou")}
        users["ada"] = _user(session, "ada", ["admin"])
        departments: dict[str, int] = {}
        for name in (*DEPARTMENTS, HIDDEN):
            made = Department(
                name=name, email=f"{name.lower()}@example.org", publicly_visible=name != HIDDEN
            )
            session.add(made)
            session.flush()
            departments[name] = made.id
        session.add(DepartmentLead(department_id=departments["Security"], user_id=users["sam"]))
        session.add(DepartmentLead(department_id=departments["Hotel"], user_id=users["hal"]))
        for spec in (
            OptionSpec("Shirt size", "select", "S\nM\nL\nXL"),
            OptionSpec("Skills", "multi", "First aid\nDriving\nSign language"),
            OptionSpec("Notes", "text"),
            OptionSpec("Hours", "number"),
        ):
            create_option(session, Actor("test"), spec)
        # Two applications already in: kit would like to help Security, lou Hotel.
        for username, wanted in (("kit", "Security"), ("lou", "Hotel")):
            save_application(
                session,
                Actor("test"),
                users[username],
                Application(
                    [ContactMethod("Discord", f"{username}#0001", True)],
                    {departments[wanted]: {"interest"}},
                ),
            )
        application, secret = create_application(
            session, Actor("test"), name="Volunteer Time Clock", service_scopes="volunteer:read"
        )
    try:
        with live_server(url) as base:
            yield Site(base, engine, users, departments, str(application.id), secret)
    finally:
        engine.dispose()


def nested_user(site: Site, username: str) -> dict[str, Any]:
    return {
        "id": str(site.users[username]),
        "firstName": username.capitalize(),
        "lastName": "Tester",
        "username": username,
        "preferredName": None,
        "phone": None,
        "email": f"{username}@example.org",
        "isStaff": False,
    }


def department(site: Site, name: str, *states: str) -> dict[str, Any]:
    return {"id": str(site.departments[name]), "name": name, "states": list(states)}


def no_sideways_scroll(page: Page) -> None:
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0


# --- the tests ---------------------------------------------------------------------------


def test_an_attendee_applies_and_edits_their_application(page: Page, site: Site) -> None:
    page.goto(f"{site.base}/account")
    log_in(page, "fox")
    page.get_by_role("link", name="Your volunteer application").click()
    expect(page.get_by_role("heading", name="Volunteer application")).to_be_visible()
    expect(page.get_by_role("group", name=HIDDEN)).to_have_count(0)

    first = page.get_by_role("group", name="Contact method 1")
    first.get_by_label("Kind").fill("Discord")
    first.get_by_label("Name or number there").fill("fox#1234")
    first.get_by_label("Preferred way to reach me").check()
    page.get_by_role("group", name="Security").get_by_label("I'd like to help here").check()
    page.get_by_role("group", name="Security").get_by_label("I have experience here").check()
    page.get_by_role("group", name="Registration").get_by_label("I'd like to help here").check()
    page.get_by_role("group", name="Hotel").get_by_label("I'd rather not be placed here").check()
    page.get_by_role("group", name="Shirt size").get_by_label("L", exact=True).check()
    skills = page.get_by_role("group", name="Skills")
    skills.get_by_label("First aid").check()
    skills.get_by_label("Driving").check()
    page.get_by_label("Notes").fill("Can lift 20 kg")
    page.get_by_label("Hours").fill("12")
    screenshot(page, "volunteer-form")
    page.get_by_role("button", name="Send application").click()

    expect(page.get_by_role("status")).to_have_text(
        "Your application was saved. You can change it here at any time."
    )
    record = site.volunteer("fox")
    assert {k: v for k, v in record.items() if k not in ("createdAt", "updatedAt")} == {
        "contactMethods": [{"name": "Discord", "isPrimary": True, "value": "fox#1234"}],
        "departments": [
            department(site, "Security", "experience", "interest"),
            department(site, "Hotel", "avoid"),
            department(site, "Registration", "interest"),
        ],
        "user": nested_user(site, "fox"),
        "options": [
            {"name": "Shirt size", "type": "select", "value": "L"},
            {"name": "Skills", "type": "multi", "value": ["First aid", "Driving"]},
            {"name": "Notes", "type": "text", "value": "Can lift 20 kg"},
            {"name": "Hours", "type": "number", "value": 12},
        ],
    }
    assert record["createdAt"] == record["updatedAt"]

    # Later: the form shows what they sent; they change their mind about a few things.
    page.goto(f"{site.base}/volunteer")
    expect(page.get_by_role("group", name="Contact method 1").get_by_label("Kind")).to_have_value(
        "Discord"
    )
    expect(page.get_by_label("Hours")).to_have_value("12")
    page.get_by_role("group", name="Registration").get_by_label("I'd like to help here").uncheck()
    second = page.get_by_role("group", name="Contact method 2")
    second.get_by_label("Kind").fill("Telegram")  # and forgets the handle: refused
    page.get_by_label("Hours").fill("7.5")
    page.get_by_label("Notes").fill("Can lift 20 kg, and drive a van")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("alert")).to_contain_text("Your application was not saved")
    handle = page.get_by_role("group", name="Contact method 2").get_by_label("Name or number there")
    expect(handle).to_have_attribute("aria-invalid", "true")
    expect(handle).to_have_accessible_description("Enter how to reach you there.")
    expect(page.get_by_label("Hours")).to_have_value("7.5")  # what was typed is kept
    assert site.volunteer("fox") == record
    screenshot(page, "volunteer-form-errors")
    page.get_by_role("link", name="Enter how to reach you there.").click()  # the summary's link
    expect(handle).to_be_focused()
    page.keyboard.type("@fae_fox")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_contain_text("Your application was saved.")

    changed = site.volunteer("fox")
    assert changed["contactMethods"] == [
        {"name": "Discord", "isPrimary": True, "value": "fox#1234"},
        {"name": "Telegram", "isPrimary": False, "value": "@fae_fox"},
    ]
    assert changed["departments"] == [
        department(site, "Security", "experience", "interest"),
        department(site, "Hotel", "avoid"),
    ]
    assert changed["options"][2:] == [
        {"name": "Notes", "type": "text", "value": "Can lift 20 kg, and drive a van"},
        {"name": "Hours", "type": "number", "value": 7.5},
    ]
    assert changed["createdAt"] == record["createdAt"] < changed["updatedAt"]

    page.set_viewport_size({"width": 360, "height": 740})
    expect(page.get_by_role("button", name="Save changes")).to_be_visible()
    no_sideways_scroll(page)
    screenshot(page, "volunteer-form-360")


def test_an_admin_adds_a_question_that_the_form_then_asks(browser: Browser, site: Site) -> None:
    admin = browser.new_context(viewport={"width": 1024, "height": 800})
    attendee = browser.new_context(viewport={"width": 1024, "height": 800})
    try:
        page = admin.new_page()
        page.goto(f"{site.base}/admin")
        log_in(page, "ada")
        page.get_by_role("navigation", name="Admin").get_by_role(
            "link", name="Event options"
        ).click()
        expect(page.get_by_role("heading", name="Event options")).to_be_visible()
        page.get_by_role("link", name="Add an option").click()
        page.get_by_label("Name").fill("T-shirt fit")
        page.get_by_role("group", name="Type").get_by_label("Select").check()
        page.get_by_role("textbox", name="Choices").fill("Regular\nFitted")
        page.get_by_role("button", name="Add the option").click()
        expect(page.get_by_role("status")).to_have_text(
            "The option was added to the volunteer form."
        )
        row = page.get_by_role("row").filter(has_text="T-shirt fit")
        expect(row).to_contain_text("Regular, Fitted")
        screenshot(page, "admin-options")

        form = attendee.new_page()
        form.goto(f"{site.base}/volunteer")
        log_in(form, "owl")
        form.get_by_role("group", name="T-shirt fit").get_by_label("Fitted").check()
        form.get_by_role("button", name="Send application").click()
        expect(form.get_by_role("status")).to_contain_text("Your application was saved.")
        assert site.volunteer("owl")["options"] == [
            {"name": "T-shirt fit", "type": "select", "value": "Fitted"}
        ]
    finally:
        admin.close()
        attendee.close()


def test_a_lead_finds_an_application_and_assigns_the_volunteer(
    browser: Browser, site: Site
) -> None:
    lead = browser.new_context(viewport={"width": 1024, "height": 800})
    other = browser.new_context(viewport={"width": 1024, "height": 800})
    try:
        page = lead.new_page()
        page.goto(f"{site.base}/admin/volunteers")
        log_in(page, "sam")
        filters = page.get_by_role("search", name="Filter the volunteers")
        filters.get_by_label("Department").select_option(label="Security")
        filters.get_by_label("State").select_option("interest")
        filters.get_by_role("button", name="Filter").click()
        table = page.get_by_role("table", name="Volunteer applications")
        expect(table.get_by_role("link", name="Kit Tester")).to_be_visible()
        expect(table.get_by_role("link", name="Lou Tester")).to_have_count(0)  # Hotel's
        screenshot(page, "admin-volunteers-list")

        table.get_by_role("link", name="Kit Tester").click()
        expect(page.get_by_role("heading", name="Kit Tester", level=1)).to_be_visible()
        expect(page.get_by_text("kit#0001")).to_be_visible()
        # With the keyboard: tick "assignment" in Security's form, Tab to its button, Enter.
        security = page.get_by_role("group", name="Security")
        security.get_by_label("assignment").focus()
        page.keyboard.press("Space")
        page.keyboard.press("Tab")  # "request"
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.textContent") == "Save Security"
        page.keyboard.press("Enter")
        expect(page.get_by_role("status")).to_have_text("The department's states were saved.")
        expect(
            page.get_by_role("group", name="Security").get_by_label("assignment")
        ).to_be_checked()
        screenshot(page, "admin-volunteer")
        kit = site.volunteer("kit")
        assert kit["departments"] == [department(site, "Security", "interest", "assignment")]
        application_url = page.url.split("?")[0]

        # The lead of Hotel sees neither the application in the list nor on its own page,
        # and a form sent for it anyway is refused.
        hotel = other.new_page()
        hotel.goto(f"{site.base}/admin/volunteers")
        log_in(hotel, "hal")
        expect(hotel.get_by_role("link", name="Lou Tester")).to_be_visible()
        expect(hotel.get_by_role("link", name="Kit Tester")).to_have_count(0)
        refused = hotel.goto(application_url)
        assert refused is not None
        assert refused.status == 403
        expect(hotel.get_by_role("heading", name="Not permitted")).to_be_visible()
        token = hotel.locator("input[name=csrf_token]").first.get_attribute("value")
        sent = hotel.request.post(
            f"{application_url}/departments/{site.departments['Security']}",
            form={"csrf_token": token or "", "states": "request"},
            max_redirects=0,
        )
        assert sent.status == 403
        assert site.volunteer("kit") == kit
    finally:
        lead.close()
        other.close()
