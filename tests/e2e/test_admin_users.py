"""Users, roles and departments in the admin area, in a real browser against `regdesk serve`.

An administrator finds a user, edits their phone and preferred name, gives them a staff role
and a permission, and resets their password; the user then logs in with it and authorizes an
application, whose token reads all of it back (api.md 2.4). The administrator creates a
department, makes someone its lead and hides it; its lead changes its e-mail on a phone, by
keyboard. Every result is checked through the API, as api.md shows the records. Screenshots
of each page: build/screenshots/admin-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.departments.service import add_lead, create_department
from regdesk.oauth.applications import create_application
from regdesk.roles.service import create_role
from regdesk.transfer.importer import import_document
from regdesk.users.service import NewUser, create_user
from tests import http_calls
from tests.conftest import migrated_sqlite_url
from tests.e2e.support import PASSWORD, application_callback, log_in, screenshot
from tests.helpers import live_server


@dataclass(frozen=True)
class Site:
    base: str
    client_id: str
    client_secret: str
    callback: str
    fox_id: int
    staff_role_id: int

    def service_token(self) -> str:
        granted = http_calls.post(
            f"{self.base}/api/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(self.client_id, self.client_secret),
        )
        assert granted.status_code == 200, granted.text
        token: str = granted.json()["access_token"]
        return token

    def api(self, path: str, token: str | None = None) -> Any:
        answer = http_calls.get(
            f"{self.base}{path}",
            headers={"Authorization": f"Bearer {token or self.service_token()}"},
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    def sign_in(self, page: Page, path: str, username: str = "ada") -> None:
        page.goto(f"{self.base}{path}")
        log_in(page, username)
        page.wait_for_url(f"{self.base}{path}")
        expect(page.get_by_role("navigation", name="Admin")).to_be_visible()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with application_callback() as callback:
        url = migrated_sqlite_url(tmp_path_factory.mktemp("e2e-admin-users") / "regdesk.sqlite3")
        engine = make_engine(url)
        actor = Actor("test")
        with write_session(engine) as session:
            people = [
                ("ada", "Ada", "Lovelace", ["admin"]),
                ("sam", "Sam", "Vimes", []),
                ("fox", "Fae", "Fox", []),
                ("owl", "Olive", "Owl", []),
                *((f"guest{n}", "Guest", f"Number {n}", []) for n in range(1, 13)),
            ]
            for username, first, last, permissions in people:
                create_user(
                    session,
                    actor,
                    NewUser(
                        username,
                        f"{username}@example.org",
                        first,
                        last,
                        password=PASSWORD,
                        permissions=permissions,
                    ),
                )
            staff_role = create_role(session, actor, "Staff", staff=True)
            create_role(session, actor, "Dealer", staff=False)
            security = create_department(
                session, actor, name="Security", email="security@example.org", publicly_visible=True
            )
            add_lead(session, actor, security, "sam")
            create_department(
                session, actor, name="Hotel", email="hotel@example.org", publicly_visible=True
            )
            application, secret = create_application(
                session,
                actor,
                name="Time Clock",
                redirect_uris=[callback],
                obo_scopes="pii:basic pii:phone user:read",
                service_scopes="user:read volunteer:read",
            )
            ids = (application.id, staff_role.id)
        import_document(
            engine,
            {
                "volunteers": [
                    {"user": "fox", "departments": [{"name": "Security", "states": ["interest"]}]}
                ]
            },
            actor=actor,
            phone_region="US",
        )
        with engine.connect() as connection:
            fox_id = connection.exec_driver_sql(
                "SELECT id FROM users WHERE username = 'fox'"
            ).scalar()
        try:
            with live_server(url) as base:
                yield Site(base, str(ids[0]), secret, callback, int(fox_id or 0), ids[1])
        finally:
            engine.dispose()


def says(page: Page, message: str) -> None:
    """The page the last step loaded has `message` as its status (waited for: the page before
    it may still be showing the previous step's)."""
    expect(page.get_by_role("status")).to_have_text(message)


# --- users ----------------------------------------------------------------------------------


def test_an_administrator_edits_a_user_who_then_logs_in_with_a_new_password(
    page: Page, browser: Browser, site: Site
) -> None:
    site.sign_in(page, "/admin/users")
    expect(page.get_by_role("heading", name="Users", exact=True)).to_be_visible()
    screenshot(page, "admin-users-list")

    # Find Fae Fox by the start of her last name, and open her page.
    page.get_by_label("Name, username or e-mail").fill("fo")
    page.get_by_role("button", name="Search").click()
    results = page.get_by_role("table")
    expect(results.get_by_role("row")).to_have_count(2)  # the heading row and Fae Fox
    results.get_by_role("link", name="Fae Fox").click()
    expect(page.get_by_role("heading", name="Fae Fox", level=1)).to_be_visible()

    # Edit her phone and preferred name.
    page.get_by_role("link", name="Edit profile").click()
    page.get_by_label("Preferred name").fill("Foxy")
    page.get_by_label("Phone").fill("775 555 0199")  # national: read in the default region
    screenshot(page, "admin-users-edit")
    page.get_by_role("button", name="Save profile").click()
    says(page, "The profile was saved.")
    record = site.api(f"/api/v0/users/{site.fox_id}")
    assert record == {
        "id": str(site.fox_id),
        "email": "fox@example.org",
        "preferredName": "Foxy",
        "firstName": "Fae",
        "lastName": "Fox",
        "username": "fox",
        "verified": False,
        "phone": "+17755550199",
        "address": dict.fromkeys(
            (
                "addressLine1",
                "addressLine2",
                "addressCity",
                "addressState",
                "addressZipcode",
                "addressCountry",
            )
        ),
    }

    # A role that makes her staff, and a permission.
    assert site.api(f"/api/v0/users/{site.fox_id}/volunteer")["user"]["isStaff"] is False
    page.get_by_label("Role to give").select_option(label="Staff (staff)")
    page.get_by_role("button", name="Give role").click()
    says(page, "The role was given.")
    assert site.api(f"/api/v0/users/{site.fox_id}/volunteer")["user"]["isStaff"] is True
    assert site.api(f"/api/v0/users/{site.fox_id}/roles") == {
        "data": [{"id": str(site.staff_role_id), "name": "Staff", "scope": "convention"}]
    }
    permissions = page.get_by_role("group", name="What fox may do beyond their own account")
    permissions.get_by_label(re.compile(r"^user:read:")).check()
    page.get_by_role("button", name="Save permissions").click()
    says(page, "The permissions were saved.")
    expect(page.get_by_role("cell", name="user.permissions_changed")).to_be_visible()
    screenshot(page, "admin-users-view")

    # A new password, generated and shown once.
    page.get_by_role("link", name="Reset password").click()
    screenshot(page, "admin-users-password")
    page.get_by_role("button", name="Reset password").click()
    expect(page.get_by_role("heading", name="The password of fox was reset")).to_be_visible()
    password = page.locator("#new-password").inner_text()
    screenshot(page, "admin-users-password-done")

    # Fox logs in with it and lets an application read her record: what it sees is all of the
    # above (api.md 2.4): the preferred name, phone, her role and her permission.
    context = browser.new_context()
    fox = context.new_page()
    try:
        query = {
            "client_id": site.client_id,
            "response_type": "code",
            "redirect_uri": site.callback,
            "scope": "pii:basic pii:phone user:read",
            "state": "s1",
        }
        fox.goto(f"{site.base}/oauth/authorize?{urlencode(query)}")
        log_in(fox, "fox", PASSWORD)
        expect(fox.get_by_role("alert")).to_contain_text("do not match")  # the old one is gone
        log_in(fox, "fox", password)
        fox.get_by_role("button", name="Authorize").click()
        fox.wait_for_url(re.compile(re.escape(site.callback) + r"\?"))
        code = parse_qs(urlsplit(fox.url).query)["code"][0]
    finally:
        context.close()
    tokens = http_calls.post(
        f"{site.base}/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": site.callback},
        auth=(site.client_id, site.client_secret),
    )
    assert tokens.status_code == 200, tokens.text
    current = site.api("/api/users/current", tokens.json()["access_token"])
    assert current["id"] == site.fox_id
    assert current["preferredName"] == "Foxy"
    assert current["phone"] == "+17755550199"
    assert current["userRoles"] == [{"id": site.staff_role_id, "name": "Staff"}]
    assert current["permissions"] == ["user:read"]


def test_the_user_list_on_a_phone(browser: Browser, site: Site) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        site.sign_in(page, "/admin/users")
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0  # the table scrolls inside its own box, not the page
        screenshot(page, "admin-users-list-360")
    finally:
        context.close()


# --- roles ----------------------------------------------------------------------------------


def test_an_administrator_creates_and_renames_a_role(page: Page, site: Site) -> None:
    site.sign_in(page, "/admin/roles")
    page.get_by_label("Name").fill("Crew")
    page.get_by_role("button", name="Create role").click()
    says(page, "The role was created.")
    screenshot(page, "admin-roles-list")
    page.get_by_role("link", name="Crew").click()
    page.get_by_label("Name").fill("Stage crew")
    page.get_by_label("Holders are staff").check()
    screenshot(page, "admin-roles-edit")
    page.get_by_role("button", name="Save role").click()
    says(page, "The role was saved.")
    roles = site.api("/api/v0/roles")["data"]
    assert {"name": "Stage crew", "isStaff": True} in [
        {k: v for k, v in role.items() if k != "id"} for role in roles
    ]


# --- departments ----------------------------------------------------------------------------


def _department(site: Site, name: str) -> dict[str, Any]:
    listed = site.api("/api/v0/volunteers/departments")
    found: dict[str, Any] = next(d for d in listed if d["name"] == name)
    return found


def test_an_administrator_creates_a_department_sets_a_lead_and_hides_it(
    page: Page, site: Site
) -> None:
    site.sign_in(page, "/admin/departments")
    new = page.get_by_role("region", name="New department")
    new.get_by_label("Name").fill("Art Show")
    new.get_by_label("Contact e-mail").fill("art@example.org")
    screenshot(page, "admin-departments-list")
    new.get_by_role("button", name="Create department").click()
    says(page, "The department was created.")
    expect(page.get_by_role("heading", name="Art Show", level=1)).to_be_visible()

    page.get_by_label("Username or e-mail of the new lead").fill("owl")
    page.get_by_role("button", name="Add lead").click()
    says(page, "The lead was added.")
    page.get_by_label("Shown to everyone applying to volunteer").uncheck()
    page.get_by_role("button", name="Save department").click()
    says(page, "The department was saved.")
    screenshot(page, "admin-departments-edit")

    art = _department(site, "Art Show")
    assert art["email"] == "art@example.org"
    assert art["publiclyVisible"] is False
    assert [lead["username"] for lead in art["leads"]] == ["owl"]
    assert art["leads"][0] == {
        "id": art["leads"][0]["id"],
        "firstName": "Olive",
        "lastName": "Owl",
        "username": "owl",
        "preferredName": None,
        "phone": None,
        "email": "owl@example.org",
    }


def test_a_lead_edits_their_departments_email_on_a_phone_by_keyboard(
    browser: Browser, site: Site
) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        page.goto(f"{site.base}/account")
        log_in(page, "sam")
        page.get_by_role("link", name="Admin", exact=True).click()  # in the site header
        page.get_by_role("navigation", name="Admin").get_by_role("link", name="Departments").click()
        listed = page.get_by_role("table")
        expect(listed.get_by_role("link")).to_have_text(["Security"])  # only theirs
        listed.get_by_role("link", name="Security").click()
        expect(page.get_by_label("Name", exact=True)).to_have_count(0)  # admins rename

        # From the top of the page, Tab until the e-mail field has the focus, then type.
        page.locator("body").focus()
        for _ in range(40):
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement.id") == "email":
                break
        outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
        assert outline == "solid"  # the focus is visible
        page.keyboard.press("Control+A")
        page.keyboard.type("security-desk@example.org")
        page.keyboard.press("Enter")
        says(page, "The department was saved.")
        assert page.evaluate("() => document.documentElement.clientWidth") == 360
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0
        screenshot(page, "admin-departments-lead-360")
    finally:
        context.close()
    assert _department(site, "Security")["email"] == "security-desk@example.org"
    assert _department(site, "Security")["publiclyVisible"] is True  # left as it was
