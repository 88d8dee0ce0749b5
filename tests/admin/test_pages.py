"""The admin area's frame: who sees the Admin link in the site header, and the navigation."""

from __future__ import annotations

from tests.admin.support import People
from tests.client import TestClient

ADMIN_LINK = '<a href="/admin">Admin</a>'


def test_the_admin_link_is_shown_to_organizers_only(people: People) -> None:
    for organizer in (people.admin, people.security_lead, people.hotel_lead):
        page = organizer.get("/account")
        assert page.status_code == 200
        assert ADMIN_LINK in page.text, organizer.username
    assert ADMIN_LINK not in people.attendee.get("/account").text


def test_the_login_page_is_unchanged_for_a_signed_out_visitor(
    people: People, client: TestClient
) -> None:
    page = client.get("/login")
    assert page.status_code == 200
    assert ADMIN_LINK not in page.text
    assert "Log out" not in page.text


def test_a_lead_sees_the_sections_a_lead_may_use(people: People) -> None:
    lead_page = people.security_lead.get("/admin")
    assert lead_page.status_code == 200
    assert 'href="/admin/departments"' in lead_page.text
    assert 'href="/admin/users"' not in lead_page.text
    admin_page = people.admin.get("/admin")
    assert 'href="/admin/users"' in admin_page.text
    assert 'aria-current="page"' in admin_page.text
    assert '<body class="wide">' in admin_page.text


def test_a_plain_attendee_is_refused_the_admin_area(people: People) -> None:
    refused = people.attendee.get("/admin")
    assert refused.status_code == 403
    assert "Not permitted" in refused.text
