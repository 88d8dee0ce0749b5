"""The users' admin pages: search, the profile form and its checks, roles, permissions and the
password reset; each change seen through the API and the audit log."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.permissions import permissions_of
from regdesk.roles.service import create_role
from regdesk.users.service import NewUser, create_user, find_users
from tests.accounts.password_support import outbox
from tests.admin.support import People
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.helpers import database_text
from tests.oauth.support import assert_oauth_error
from tests.oauth.user_flow import REDIRECT, Flow
from tests.web.support import audit, form, log_in, make_user


def _listed(html: str) -> list[str]:
    """The usernames in the results table, in order."""
    return re.findall(r"<td>([^<@]+)</td>\s*<td>[^<]*@", html)


def _words(html: str) -> str:
    """The page's text with its line breaks and indentation as single spaces."""
    return " ".join(html.split())


def _field_errors(html: str) -> dict[str, str]:
    return dict(re.findall(r'<p class="field-error" id="([^"]+)-error">([^<]*)</p>', html))


# --- search ---------------------------------------------------------------------------------


@pytest.mark.postgresql_too
def test_search_finds_users_by_name_username_email_and_id(people: People, engine: Engine) -> None:
    with write_session(engine) as session:
        for username, first, last in [
            ("foxglove", "Fae", "Smith"),
            ("badger", "Bea", "Foxworth"),
            ("otter", "Ollie", "Stone"),
        ]:
            create_user(
                session,
                Actor("test"),
                NewUser(username, f"{username}@example.org", first, last),
            )
    admin = people.admin

    def search(q: str) -> list[str]:
        page = admin.get("/admin/users", params={"q": q})
        assert page.status_code == 200
        return _listed(page.text)

    assert search("FOX") == ["foxglove", "badger"]  # a username and a last name, any case
    assert search("ollie") == ["otter"]  # a first name
    assert search("bea fox") == ["badger"]  # "first last"
    assert search("Otter@Example.org") == ["otter"]  # a whole e-mail, any case
    assert search("otter@") == []  # e-mails match whole
    assert search(str(people.hotel_lead.user_id)) == ["hal"]  # an id
    assert search("zzz") == []
    assert search("fox\x00") == ["foxglove", "badger"]  # a NUL is dropped, not a 500
    assert "No user matches" in admin.get("/admin/users", params={"q": "zzz"}).text


@pytest.mark.postgresql_too
def test_search_pages_by_id_and_the_next_link_continues(people: People, engine: Engine) -> None:
    ids = [make_user(engine, f"guest{n:02}", password=None) for n in range(53)]
    first = people.admin.get("/admin/users", params={"q": "guest"})
    listed = _listed(first.text)
    assert listed == [f"guest{n:02}" for n in range(50)]
    next_link = re.search(r'<a href="([^"]+)" rel="next">', first.text)
    assert next_link is not None
    second = people.admin.get(next_link.group(1).replace("&amp;", "&"))
    assert _listed(second.text) == ["guest50", "guest51", "guest52"]
    assert 'rel="next"' not in second.text
    assert "First page" in second.text
    with Session(engine) as session:
        page, after = find_users(session, "guest", ids[1], limit=2)
        assert [u.username for u in page] == ["guest02", "guest03"]
        assert after == ids[3]


@pytest.mark.postgresql_too
def test_every_search_is_answered_from_an_index(people: People, engine: Engine) -> None:
    """No kind of search reads the whole users table (it may hold 100,000 rows)."""
    statements = []
    with Session(engine) as session:

        def remember(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
            if re.search(r"FROM (users|user_roles)\b", statement) and "IN (" not in statement:
                statements.append((statement, parameters))

        event.listen(engine, "before_cursor_execute", remember)
        try:
            for typed in ("fox", "bea fox", "fox@example.org", "17", ""):
                find_users(session, typed, 0)
            find_users(session, "", 0, role_id=1)
            find_users(session, "fox", 0, role_id=1)
        finally:
            event.remove(engine, "before_cursor_execute", remember)
        assert len(statements) == 7
        postgresql = engine.dialect.name == "postgresql"
        if postgresql:
            session.execute(text("SET enable_seqscan = off"))  # a tiny table: ask what it could do
        for statement, parameters in statements:
            explain = "EXPLAIN " if postgresql else "EXPLAIN QUERY PLAN "
            plan = " | ".join(
                str(row[-1])
                for row in session.connection().exec_driver_sql(explain + statement, parameters)
            )
            assert not re.search(r"\b(Seq Scan on|SCAN) (users|user_roles)\b", plan), plan


# --- the profile ----------------------------------------------------------------------------


def test_an_administrator_edits_a_profile_and_the_api_shows_it(
    people: People, engine: Engine, apps: Apps, client: TestClient
) -> None:
    user_id = people.attendee.user_id
    page = people.admin.get(f"/admin/users/{user_id}/edit")
    assert page.status_code == 200
    fields = form(page.text, f"/admin/users/{user_id}/edit").fields
    assert fields["username"] == "ann"
    assert fields["email"] == "ann@example.org"
    fields.update(
        preferredName="Annie",
        phone="(775) 555-0123",
        addressLine1="1 Main St",
        addressCity="Reno",
        addressState="NV",
        addressZipcode="89501",
        addressCountry="us",
        verified="true",
        email="Annie@Example.org",
    )
    saved = people.admin.client.post(
        f"/admin/users/{user_id}/edit", data=fields, follow_redirects=False
    )
    assert saved.status_code == 303
    assert saved.headers["location"] == f"/admin/users/{user_id}?done=saved"
    assert "The profile was saved." in people.admin.get(saved.headers["location"]).text

    token = apps.service_token("user:read")
    record = client.get(f"/api/v0/users/{user_id}", headers=bearer(token)).json()
    assert record == {
        "id": str(user_id),
        "email": "Annie@example.org",  # the import's normalisation: the domain in lower case
        "preferredName": "Annie",
        "firstName": "Fae",
        "lastName": "Ann",
        "username": "ann",
        "verified": True,
        "phone": "+17755550123",
        "address": {
            "addressLine1": "1 Main St",
            "addressLine2": None,
            "addressCity": "Reno",
            "addressState": "NV",
            "addressZipcode": "89501",
            "addressCountry": "US",
        },
    }
    (event,) = audit(engine, "user.updated")
    assert event.actor == f"user:{people.admin.user_id}"
    assert set(event.details["fields"]) >= {"preferredName", "phone", "email", "verified"}


def test_a_bad_profile_is_refused_field_by_field_and_nothing_changes(
    people: People, engine: Engine
) -> None:
    user_id = people.attendee.user_id
    before = database_text(engine)
    fields = {
        "firstName": "",
        "lastName": "x" * 101,
        "username": "HAL",  # taken, whatever its case
        "email": "not-an-address",
        "phone": "12",
        "addressCountry": "XX",
        "preferredName": "Kept as typed",
    }
    refused = people.admin.post(f"/admin/users/{user_id}/edit", fields)
    assert refused.status_code == 400
    errors = _field_errors(refused.text)
    assert set(errors) == {"firstName", "lastName", "username", "email", "phone", "addressCountry"}
    assert "belongs to another user" in errors["username"]
    assert "not a possible phone number" in errors["phone"]
    assert 'id="phone" name="phone" type="tel" value="12"' in refused.text  # kept as typed
    assert 'value="Kept as typed"' in refused.text
    assert 'aria-invalid="true"' in refused.text
    assert 'role="alert"' in refused.text
    assert 'href="#username"' in refused.text  # the summary leads to the field
    taken_email = people.admin.post(
        f"/admin/users/{user_id}/edit",
        {"firstName": "A", "lastName": "B", "username": "ann", "email": "HAL@example.org"},
    )
    assert _field_errors(taken_email.text).keys() == {"email"}
    assert database_text(engine) == before


def test_an_unknown_user_is_a_404_page(people: People) -> None:
    for path in ("/admin/users/999999", "/admin/users/abc", "/admin/users/999999/edit"):
        page = people.admin.get(path)
        assert page.status_code == 404, path
        assert "No such user" in page.text


# --- roles and permissions ------------------------------------------------------------------


def test_roles_are_given_and_taken_as_the_api_does(
    people: People, engine: Engine, apps: Apps, client: TestClient
) -> None:
    with write_session(engine) as session:
        staff = create_role(session, Actor("test"), "Staff", staff=True).id
    user_id = people.attendee.user_id
    given = people.admin.post(
        f"/admin/users/{user_id}/roles", {"role": str(staff), "scope": "global"}
    )
    assert given.headers["location"] == f"/admin/users/{user_id}?done=role_given"
    token = apps.service_token("user:read")
    held = client.get(f"/api/v0/users/{user_id}/roles", headers=bearer(token)).json()
    assert held == {"data": [{"id": str(staff), "name": "Staff", "scope": "global"}]}
    page = people.admin.get(f"/admin/users/{user_id}").text
    assert "Staff" in page
    assert f"/roles/{staff}/remove" in page

    taken = people.admin.post(f"/admin/users/{user_id}/roles/{staff}/remove")
    assert taken.headers["location"] == f"/admin/users/{user_id}?done=role_removed"
    assert client.get(f"/api/v0/users/{user_id}/roles", headers=bearer(token)).json() == {
        "data": []
    }
    assert [e.details for e in audit(engine, "user.role_assigned")] == [
        {"role": "Staff", "scope": "global"}
    ]
    assert len(audit(engine, "user.role_removed")) == 1
    unknown = people.admin.post(f"/admin/users/{user_id}/roles", {"role": "9999"})
    assert unknown.status_code == 400


def test_permissions_are_granted_and_revoked(people: People, engine: Engine) -> None:
    user_id = people.attendee.user_id
    granted = people.admin.post(
        f"/admin/users/{user_id}/permissions", {"permission": ["user:read", "volunteer:read"]}
    )
    assert granted.status_code == 303
    with Session(engine) as session:
        assert permissions_of(session, user_id) == ["user:read", "volunteer:read"]
    people.admin.post(f"/admin/users/{user_id}/permissions", {"permission": ["volunteer:read"]})
    with Session(engine) as session:
        assert permissions_of(session, user_id) == ["volunteer:read"]
    details = [e.details for e in audit(engine, "user.permissions_changed")]
    assert details == [
        {"granted": ["user:read", "volunteer:read"], "revoked": []},
        {"granted": [], "revoked": ["user:read"]},
    ]
    unknown = people.admin.post(f"/admin/users/{user_id}/permissions", {"permission": "root"})
    assert unknown.status_code == 400


def test_an_administrator_cannot_take_their_own_admin_permission(
    people: People, engine: Engine
) -> None:
    admin = people.admin
    refused = admin.post(f"/admin/users/{admin.user_id}/permissions", {"permission": []})
    assert refused.status_code == 400
    assert "cannot take the admin permission from yourself" in refused.text
    with Session(engine) as session:
        assert permissions_of(session, admin.user_id) == ["admin"]


# --- the password ---------------------------------------------------------------------------


def test_a_generated_password_is_shown_once_and_ends_the_users_sessions(
    people: People, engine: Engine
) -> None:
    ann = people.attendee
    assert ann.get("/account").status_code == 200
    page = people.admin.get(f"/admin/users/{ann.user_id}/password")
    assert form(page.text, f"/admin/users/{ann.user_id}/password").fields["method"]
    done = people.admin.post(f"/admin/users/{ann.user_id}/password", {"method": "generate"})
    assert done.status_code == 200
    assert "no-store" in done.headers["cache-control"]
    found = re.search(r'<code class="secret" id="new-password">([^<]+)</code>', done.text)
    assert found is not None
    password = found.group(1)
    assert re.fullmatch(r"([a-z2-9]{4}-){3}[a-z2-9]{4}", password)

    assert ann.get("/account").status_code == 303  # logged out everywhere
    fresh = TestClient(ann.client.app, base_url="https://testserver")
    assert log_in(fresh, "ann", password).status_code == 303
    assert (
        log_in(TestClient(ann.client.app, base_url="https://testserver"), "ann").status_code == 200
    )

    assert "They had no connected application." in done.text
    (event,) = audit(engine, "user.password_reset")
    assert event.details == {"generated": True, "sessions_ended": 1, "grants_revoked": 0}
    assert password not in database_text(engine)
    # accounts.md: every change is mailed to the user; never the password itself.
    [mail] = outbox(engine)
    assert (mail.to, mail.subject) == ("ann@example.org", "Your password was changed")
    assert "by an organizer" in mail.text
    assert "by an organizer" in mail.html
    assert password not in mail.text + mail.html


def test_a_password_reset_disconnects_every_application_of_the_user(
    people: People, engine: Engine, client: TestClient, apps: Apps
) -> None:
    """ASVS V3.3.3: the answer to a takeover also cuts off the tool the intruder connected:
    its access and refresh tokens and a code not yet redeemed all stop working."""
    ann = people.attendee
    tool = apps.register(obo_scopes="pii:basic", redirect_uris=[REDIRECT])
    flow = Flow(client, engine, tool, ann.user_id)
    tokens = flow.tokens("pii:basic")
    pending = flow.code("pii:basic")
    access = bearer(tokens["access_token"])
    assert client.get("/api/users/current", headers=access).status_code == 200

    page = people.admin.get(f"/admin/users/{ann.user_id}/password")
    assert "Every application they connected loses its access" in _words(page.text)
    done = people.admin.post(f"/admin/users/{ann.user_id}/password", {"method": "generate"})
    assert done.status_code == 200

    assert client.get("/api/users/current", headers=access).status_code == 401
    assert_oauth_error(flow.refresh(tokens["refresh_token"]), 400, "invalid_grant")
    assert_oauth_error(flow.exchange(pending), 400, "invalid_grant")
    assert ann.get("/account").status_code == 303  # the web sessions end too, as before
    told = "The applications they connected lost their access (1 authorization revoked)."
    assert told in _words(done.text)
    (event,) = audit(engine, "user.password_reset")
    assert event.details == {"generated": True, "sessions_ended": 1, "grants_revoked": 1}


def test_a_typed_password_is_checked_then_set(people: People, engine: Engine) -> None:
    """The one rule (accounts/password_rule.py): too short, common in any case, or the user's
    own address is refused by its field, and nothing happens."""
    ann = people.attendee
    refusals = {
        "short": "must be at least 10 characters long",
        "PassWord123": "is one of the most common passwords, the first an attacker tries: "
        "choose another",
        "Ann@Example.org": "must not be the username or e-mail address of the account",
    }
    for typed, problem in refusals.items():
        refused = people.admin.post(
            f"/admin/users/{ann.user_id}/password", {"method": "set", "password": typed}
        )
        assert refused.status_code == 400
        assert _field_errors(refused.text) == {"password": problem}
    assert ann.get("/account").status_code == 200  # nothing happened
    assert audit(engine, "user.password_reset") == []
    done = people.admin.post(
        f"/admin/users/{ann.user_id}/password",
        {"method": "set", "password": "a long enough passphrase"},
    )
    assert done.status_code == 200
    assert 'class="secret"' not in done.text
    fresh = TestClient(ann.client.app, base_url="https://testserver")
    assert log_in(fresh, "ann", "a long enough passphrase").status_code == 303
