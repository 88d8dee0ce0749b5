"""/signup and the verification link's pages (accounts.md, Sign-up and verification): a person
makes an account, is signed in, and confirms the address by the mailed link (a button: a mail
scanner's fetch uses nothing up); closed by configuration; the organizer's terms; throttled per
address; the forms carry the pre-sign-in CSRF token."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine, func, select

from regdesk.accounts import throttle
from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import read_session
from regdesk.users.models import User
from tests.accounts.password_support import field_errors, outbox
from tests.client import TestClient
from tests.conftest import PUBLIC_URL
from tests.web.support import form, forms

pytestmark = pytest.mark.postgres
LINK = re.compile(r"https://testserver/verify/([A-Za-z0-9_-]+)")
TYPED = {
    "username": "fae",
    "first_name": "Fae",
    "last_name": "Fox",
    "preferred_name": "",
    "email": "fae@example.org",
    "born": "1994-05-17",
    "password": "a quiet fox at dusk",
}


@pytest.fixture
def browser(
    engine: Engine, database_url: str, request: pytest.FixtureRequest
) -> Iterator[TestClient]:
    """A visitor's browser on an app configured as the test's `settings` marker says."""
    marker = request.node.get_closest_marker("settings")
    extra = marker.kwargs if marker else {}
    app = create_app(load_settings(database_url=database_url, public_url=PUBLIC_URL, **extra))
    with TestClient(app, base_url=PUBLIC_URL) as client:
        yield client


def sign_up(browser: TestClient, **changes: str) -> httpx.Response:
    fields = form(browser.get("/signup").text, "/signup").fields
    return browser.post("/signup", data={**fields, **TYPED, **changes}, follow_redirects=False)


def users(engine: Engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(User)) or 0


def verified(engine: Engine, username: str) -> bool:
    with read_session(engine) as session:
        return bool(session.scalar(select(User.verified).where(User.username == username)))


def test_a_person_signs_up_is_signed_in_and_confirms_the_address_by_the_mailed_link(
    browser: TestClient, engine: Engine
) -> None:
    made = sign_up(browser)
    assert (made.status_code, made.headers["location"]) == (303, "/account")
    assert ">fae<" in browser.get("/account").text.replace("<strong>", ">").replace(
        "</strong>", "<"
    )
    [mail] = outbox(engine)
    assert (mail.to, mail.subject) == ("fae@example.org", "Confirm your e-mail address")
    found = LINK.search(mail.text)
    assert found
    link = found.group(0)
    assert f'href="{link}"' in mail.html
    assert not verified(engine, "fae")

    stranger = TestClient(browser.app, base_url=PUBLIC_URL)  # the mail opened elsewhere
    for _ in range(2):  # a fetch, as a mail scanner makes, uses nothing up
        page = stranger.get(link)
        assert page.status_code == 200
        assert "fae@example.org" in page.text
    [button] = forms(page.text)
    done = stranger.post(link, data=button.fields)
    assert done.status_code == 200
    assert "is confirmed" in done.text
    assert verified(engine, "fae")
    again = stranger.post(link, data=button.fields)
    assert again.status_code == 410
    assert stranger.get(link).status_code == 410


def test_the_login_page_leads_to_sign_up_while_it_is_open(browser: TestClient) -> None:
    assert 'href="/signup"' in browser.get("/login").text


@pytest.mark.settings(signup="closed")
def test_the_login_page_does_not_lead_to_a_closed_sign_up(browser: TestClient) -> None:
    assert 'href="/signup"' not in browser.get("/login").text


def test_a_bad_form_names_each_field_and_makes_nothing(browser: TestClient, engine: Engine) -> None:
    refused = sign_up(browser, email="nope", password="short", born="")
    assert refused.status_code == 400
    assert set(field_errors(refused.text)) >= {"email", "password", "bornAt"}
    assert 'value="fae"' in refused.text  # what was typed stays, but never the password
    assert "short" not in refused.text.replace("shortName", "")
    assert (users(engine), outbox(engine)) == (0, [])


def test_a_taken_username_is_said_to_be_taken(browser: TestClient, engine: Engine) -> None:
    assert sign_up(browser).status_code == 303
    other = TestClient(browser.app, base_url=PUBLIC_URL)
    refused = sign_up(other, username="FAE", email="someone@example.org")
    assert refused.status_code == 400
    assert "username" in field_errors(refused.text)
    assert users(engine) == 1


def test_without_the_token_the_form_is_refused(browser: TestClient, engine: Engine) -> None:
    browser.get("/signup")
    refused = browser.post("/signup", data=TYPED, follow_redirects=False)
    assert refused.status_code == 403
    assert users(engine) == 0


@pytest.mark.settings(signup="closed")
def test_closed_sign_up_is_not_there(browser: TestClient, engine: Engine) -> None:
    assert browser.get("/signup").status_code == 404
    refused = browser.post("/signup", data=TYPED, follow_redirects=False)
    assert refused.status_code == 404
    assert "Sign-up is closed" in refused.text
    assert users(engine) == 0


@pytest.mark.settings(terms_url="https://con.example.org/terms")
def test_the_organizers_terms_are_agreed_to(browser: TestClient, engine: Engine) -> None:
    page = browser.get("/signup").text
    assert 'href="https://con.example.org/terms"' in page
    refused = sign_up(browser, terms="")  # the box left unticked
    assert refused.status_code == 400
    assert "terms" in field_errors(refused.text)
    assert sign_up(browser, terms="yes").status_code == 303


def test_sign_up_is_throttled_per_address(browser: TestClient, engine: Engine) -> None:
    for n in range(throttle.SIGNUP_PER_ADDRESS):
        browser.cookies.clear()
        assert sign_up(browser, username=f"fae{n}", email=f"fae{n}@example.org").status_code == 303
    browser.cookies.clear()
    refused = sign_up(browser, username="one-more", email="one-more@example.org")
    assert refused.status_code == 429
    assert users(engine) == throttle.SIGNUP_PER_ADDRESS
