"""The OAuth applications pages (issue 8): register, show the secret once, change, rotate,
suspend; each through `regdesk.oauth.applications`, so the token endpoint and the API see the
change at once."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from regdesk.db import read_session
from regdesk.oauth.models import Application
from regdesk.security import verify_client_secret
from tests.admin.support import People, Person
from tests.client import TestClient
from tests.conftest import Apps, Cli, bearer
from tests.helpers import database_text
from tests.web.support import audit

CALLBACK = "https://clock.example.org/callback"


def register(admin: Person, **fields: Any) -> httpx.Response:
    data: dict[str, Any] = {
        "name": "Volunteer Time Clock",
        "description": "Clocks shifts in and out.",
        "redirect_uris": CALLBACK,
        "obo_scopes": ["pii:basic", "pii:email"],
        "service_scopes": ["user:read", "volunteer:read"],
    }
    data.update(fields)
    return admin.post("/admin/applications/new", data)


def shown_secret(page: httpx.Response) -> tuple[str, str]:
    """The client id and secret as the page shows them."""
    client_id = re.search(r'<code class="secret" id="client-id">([^<]+)</code>', page.text)
    secret = re.search(r'<code class="secret" id="client-secret"[^>]*>([^<]+)</code>', page.text)
    assert client_id, page.text
    assert secret, page.text
    return unescape(client_id.group(1)), unescape(secret.group(1))


def stored(engine: Engine, client_id: str | int) -> Application:
    with read_session(engine) as session:
        application = session.get(Application, int(client_id))
        assert application is not None
        return application


def token(
    client: TestClient, client_id: str, secret: str, scope: str | None = None
) -> httpx.Response:
    form = {"grant_type": "client_credentials"}
    if scope is not None:
        form["scope"] = scope
    return client.post("/api/oauth/token", data=form, auth=(client_id, secret))


def error_of(page: str, field: str) -> str:
    found = re.search(rf'<p class="field-error" id="{field}-error">([^<]*)</p>', page)
    assert found, f"no error shown for {field}"
    return unescape(found.group(1))


# --- registering ---------------------------------------------------------------------------


def test_registering_shows_the_secret_once_and_stores_only_its_hash(
    people: People, engine: Engine, client: TestClient
) -> None:
    page = register(people.admin)
    assert page.status_code == 201
    assert "no-store" in page.headers["cache-control"]
    client_id, secret = shown_secret(page)
    assert "shown only this once" in page.text
    application = stored(engine, client_id)
    assert application.name == "Volunteer Time Clock"
    assert application.redirect_uris == [CALLBACK]
    assert application.obo_scopes == "pii:basic pii:email"
    assert application.service_scopes == "user:read volunteer:read"
    assert verify_client_secret(application.secret_hash, secret)
    assert secret not in database_text(engine)
    # Never again: not on its page, not in the list.
    assert secret not in people.admin.get(f"/admin/applications/{client_id}").text
    assert secret not in people.admin.get("/admin/applications").text
    # And it works at once.
    granted = token(client, client_id, secret)
    assert granted.status_code == 200, granted.text
    assert granted.json()["scope"] == "user:read volunteer:read"
    (event,) = audit(engine, "app.created")
    assert event.actor == f"user:{people.admin.user_id}"
    assert event.target_id == client_id
    assert secret not in str(event.details)


def test_the_list_shows_name_client_id_state_and_scopes(people: People) -> None:
    client_id, _ = shown_secret(register(people.admin, name="Badge Printer"))
    people.admin.post(f"/admin/applications/{client_id}/suspend")
    page = people.admin.get("/admin/applications")
    assert page.status_code == 200
    row = re.search(r"<tr>\s*<th scope=\"row\">.*?</tr>", page.text, re.S)
    assert row, page.text
    text = row.group(0)
    assert f'href="/admin/applications/{client_id}">Badge Printer</a>' in text
    assert f"<code>{client_id}</code>" in text
    assert "Suspended" in text
    for scope in ("pii:basic", "pii:email", "user:read", "volunteer:read"):
        assert f">{scope}</code>" in text


def test_the_form_offers_every_scope_in_plain_words_and_marks_the_sensitive_ones(
    people: People,
) -> None:
    page = people.admin.get("/admin/applications/new").text
    # OBO: every scope a person can grant; service: only the ones a service may hold.
    assert 'id="obo_scopes-pii-basic"' in page
    assert 'id="service_scopes-pii-basic"' not in page
    assert 'id="service_scopes-user-read"' in page
    sensitive = re.search(
        r'<li class="check scope-choice scope-choice-sensitive">\s*<input type="checkbox" '
        r'id="service_scopes-user-read".*?</li>',
        page,
        re.S,
    )
    assert sensitive, page
    assert "Read every user&#39;s profile and roles" in sensitive.group(0)
    assert "Administrative" in sensitive.group(0)
    plain = re.search(
        r'<li class="check scope-choice">\s*<input[^>]*id="obo_scopes-pii-email".*?</li>',
        page,
        re.S,
    )
    assert plain
    assert "Administrative" not in plain.group(0)
    assert '<label for="obo_scopes-pii-email">' in page


def test_bad_fields_are_shown_on_the_form_with_what_was_typed(
    people: People, engine: Engine
) -> None:
    page = register(
        people.admin,
        name="  ",
        redirect_uris=f"{CALLBACK}\nhttp://clock.example.org/cb",
        obo_scopes=["pii:basic", "user:write"],
        service_scopes=["pii:email"],
    )
    assert page.status_code == 400
    assert "plain http is allowed only on loopback" in error_of(page.text, "redirect_uris")
    assert "Unknown scope 'user:write'" in error_of(page.text, "obo_scopes")
    assert "cannot be held by a service integration." in error_of(page.text, "service_scopes")
    assert error_of(page.text, "name") == "Enter the application's name."
    # Each error is tied to its field, and listed in the summary linking to it.
    assert re.search(
        r'id="redirect_uris"[^>]*aria-describedby="redirect_uris-hint '
        r'redirect_uris-error" aria-invalid="true"',
        page.text,
    )
    assert 'role="alert" id="error-summary"' in page.text
    assert '<a href="#obo_scopes">' in page.text
    # What was typed is kept.
    assert f"{CALLBACK}\nhttp://clock.example.org/cb</textarea>" in page.text
    assert re.search(
        r'id="obo_scopes-pii-basic" name="obo_scopes" value="pii:basic"\s+checked', page.text
    )
    assert "<title>Error: Register an application" in page.text
    assert audit(engine, "app.created") == []
    with read_session(engine) as session:
        assert session.query(Application).count() == 0


def test_a_fragment_in_a_redirect_uri_is_refused(people: People) -> None:
    page = register(people.admin, redirect_uris="https://clock.example.org/cb#top")
    assert page.status_code == 400
    assert "may not contain a fragment" in error_of(page.text, "redirect_uris")


def test_an_application_may_be_registered_with_nothing_but_a_name(
    people: People, engine: Engine
) -> None:
    page = register(
        people.admin, description="", redirect_uris="", obo_scopes=[], service_scopes=[]
    )
    assert page.status_code == 201
    client_id, _ = shown_secret(page)
    application = stored(engine, client_id)
    assert (application.redirect_uris, application.obo_scopes, application.service_scopes) == (
        [],
        "",
        "",
    )


# --- changing ------------------------------------------------------------------------------


def test_changing_the_scopes_takes_effect_at_once_and_asks_people_again(
    people: People, engine: Engine, client: TestClient
) -> None:
    client_id, secret = shown_secret(register(people.admin))
    before = stored(engine, client_id)
    issued = token(client, client_id, secret).json()["access_token"]
    assert client.get("/api/v0/roles", headers=bearer(issued)).status_code == 200
    edit = people.admin.get(f"/admin/applications/{client_id}")
    assert 'value="Volunteer Time Clock"' in edit.text
    answer = people.admin.post(
        f"/admin/applications/{client_id}",
        {
            "name": "Time Clock",
            "description": "Clocks shifts.",
            "redirect_uris": f"{CALLBACK}\r\nhttp://127.0.0.1:8080/cb\r\n",
            "obo_scopes": ["pii:basic"],
            "service_scopes": ["volunteer:read"],
        },
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/admin/applications/{client_id}?done=rescoped"
    after = stored(engine, client_id)
    assert after.name == "Time Clock"
    assert after.description == "Clocks shifts."
    assert after.redirect_uris == [CALLBACK, "http://127.0.0.1:8080/cb"]
    assert (after.obo_scopes, after.service_scopes) == ("pii:basic", "volunteer:read")
    assert after.scopes_version == before.scopes_version + 1
    # The token it already held lost user:read at once.
    assert client.get("/api/v0/roles", headers=bearer(issued)).status_code == 403
    assert token(client, client_id, secret, "user:read").json()["error"] == "invalid_scope"
    page = people.admin.get(answer.headers["location"])
    assert "must authorize it again" in page.text
    assert 'role="status"' in page.text
    (event,) = audit(engine, "app.updated")
    assert set(event.details["fields"]) == {
        "name",
        "description",
        "redirect_uris",
        "obo_scopes",
        "service_scopes",
    }


def test_saving_without_changing_the_scopes_keeps_people_s_authorizations(
    people: People, engine: Engine
) -> None:
    client_id, _ = shown_secret(register(people.admin))
    answer = people.admin.post(
        f"/admin/applications/{client_id}",
        {
            "name": "Time Clock",
            "description": "",
            "redirect_uris": CALLBACK,
            "obo_scopes": ["pii:email", "pii:basic"],
            "service_scopes": ["user:read", "volunteer:read"],
        },
    )
    assert answer.headers["location"].endswith("?done=saved")
    assert stored(engine, client_id).scopes_version == 1


def test_a_bad_change_is_refused_on_the_form_and_changes_nothing(
    people: People, engine: Engine
) -> None:
    client_id, _ = shown_secret(register(people.admin))
    page = people.admin.post(
        f"/admin/applications/{client_id}",
        {"name": "Time Clock", "redirect_uris": "ftp://clock.example.org/cb"},
    )
    assert page.status_code == 400
    assert "is not an absolute https URI" in error_of(page.text, "redirect_uris")
    assert 'value="Time Clock"' in page.text
    assert stored(engine, client_id).name == "Volunteer Time Clock"
    assert audit(engine, "app.updated") == []


def test_rotating_the_secret_stops_the_old_one_at_once(
    people: People, engine: Engine, client: TestClient
) -> None:
    client_id, old = shown_secret(register(people.admin))
    page = people.admin.post(f"/admin/applications/{client_id}/rotate-secret")
    assert page.status_code == 200
    assert "no-store" in page.headers["cache-control"]
    assert "The old secret has stopped working" in page.text
    same_id, new = shown_secret(page)
    assert same_id == client_id
    assert new != old
    assert token(client, client_id, old).status_code == 401
    assert token(client, client_id, new).status_code == 200
    assert new not in database_text(engine)
    assert new not in people.admin.get(f"/admin/applications/{client_id}").text
    (event,) = audit(engine, "app.secret_rotated")
    assert event.actor == f"user:{people.admin.user_id}"


def test_suspending_ends_its_tokens_at_once_and_for_good(
    people: People, engine: Engine, client: TestClient
) -> None:
    client_id, secret = shown_secret(register(people.admin))
    issued = token(client, client_id, secret).json()["access_token"]
    answer = people.admin.post(f"/admin/applications/{client_id}/suspend")
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/admin/applications/{client_id}?done=suspended"
    assert client.get("/api/v0/roles", headers=bearer(issued)).status_code == 401
    refused = token(client, client_id, secret)
    assert (refused.status_code, refused.json()["error"]) == (401, "invalid_client")
    page = people.admin.get(answer.headers["location"])
    assert "The application is suspended" in page.text
    assert "Lift the suspension" in page.text
    lifted = people.admin.post(f"/admin/applications/{client_id}/unsuspend")
    assert lifted.headers["location"].endswith("?done=unsuspended")
    # decisions.md, Scopes: lifting it brings no token back; it gets new ones.
    assert client.get("/api/v0/roles", headers=bearer(issued)).status_code == 401
    renewed = token(client, client_id, secret).json()["access_token"]
    assert client.get("/api/v0/roles", headers=bearer(renewed)).status_code == 200
    assert [e.action for e in audit(engine, "app.suspended")] == ["app.suspended"]
    assert [e.action for e in audit(engine, "app.unsuspended")] == ["app.unsuspended"]


def test_an_unknown_application_is_a_404_page(people: People, apps: Apps) -> None:
    for path in ("/admin/applications/999", "/admin/applications/abc"):
        page = people.admin.get(path)
        assert page.status_code == 404
        assert "No such application" in page.text
    refused = people.admin.post("/admin/applications/999/suspend")
    assert refused.status_code == 404


def test_only_administrators_may_manage_applications(people: People, apps: Apps) -> None:
    registered = apps.register(service_scopes="user:read")
    for person in (people.security_lead, people.attendee):
        assert person.get("/admin/applications").status_code == 403
        assert person.post(f"/admin/applications/{registered.client_id}/suspend").status_code == 403
        assert person.post("/admin/applications/new", {"name": "Sneaky"}).status_code == 403
    forged = people.admin.post(
        f"/admin/applications/{registered.client_id}/rotate-secret", token="forged"
    )
    assert forged.status_code == 403
    assert "Form not accepted" in forged.text


# --- OpenID Connect settings (oidc.md: post-logout redirect URIs, the ID token's algorithm) ---

LOGGED_OUT = "https://clock.example.org/logged-out"


def test_an_application_is_registered_with_its_openid_settings(
    people: People, engine: Engine
) -> None:
    form_page = people.admin.get("/admin/applications/new").text
    # RS256 is chosen unless the administrator picks ES256.
    assert re.search(r'id="id_token_alg-RS256"[^>]*\s+checked', form_page)
    assert not re.search(r'id="id_token_alg-ES256"[^>]*\s+checked', form_page)
    assert '<label for="post_logout_redirect_uris">' in form_page
    page = register(
        people.admin,
        obo_scopes=["openid", "profile", "email"],
        post_logout_redirect_uris=f"{LOGGED_OUT}\r\nhttp://127.0.0.1:8080/bye\r\n{LOGGED_OUT}\r\n",
        id_token_alg="ES256",
    )
    assert page.status_code == 201, page.text
    client_id, _ = shown_secret(page)
    application = stored(engine, client_id)
    assert application.post_logout_redirect_uris == [LOGGED_OUT, "http://127.0.0.1:8080/bye"]
    assert application.id_token_alg == "ES256"
    # Without them: none, and RS256.
    bare = stored(engine, shown_secret(register(people.admin, name="Badge Printer"))[0])
    assert (bare.post_logout_redirect_uris, bare.id_token_alg) == ([], "RS256")


def test_the_openid_settings_are_changed_with_an_audit_event(
    people: People, engine: Engine
) -> None:
    client_id, _ = shown_secret(register(people.admin, post_logout_redirect_uris=LOGGED_OUT))
    edit = people.admin.get(f"/admin/applications/{client_id}").text
    assert f">{LOGGED_OUT}</textarea>" in edit
    assert re.search(r'id="id_token_alg-RS256"[^>]*\s+checked', edit)
    fields = {
        "name": "Volunteer Time Clock",
        "description": "Clocks shifts in and out.",
        "redirect_uris": CALLBACK,
        "obo_scopes": ["pii:basic", "pii:email"],
        "service_scopes": ["user:read", "volunteer:read"],
    }
    answer = people.admin.post(
        f"/admin/applications/{client_id}",
        {
            **fields,
            "post_logout_redirect_uris": "https://clock.example.org/bye\nhttps://clock.example.org/",
            "id_token_alg": "ES256",
        },
    )
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"].endswith("?done=saved")  # no new consent for this
    after = stored(engine, client_id)
    assert after.post_logout_redirect_uris == [
        "https://clock.example.org/bye",
        "https://clock.example.org/",
    ]
    assert after.id_token_alg == "ES256"
    assert after.scopes_version == 1
    (event,) = audit(engine, "app.updated")
    assert event.actor == f"user:{people.admin.user_id}"
    assert event.target_id == client_id
    assert event.details == {"fields": ["post_logout_redirect_uris", "id_token_alg"]}
    shown = people.admin.get(f"/admin/applications/{client_id}").text
    assert re.search(r'id="id_token_alg-ES256"[^>]*\s+checked', shown)
    # Emptied: no post-logout address left. No algorithm sent: the one it has is kept.
    cleared = people.admin.post(
        f"/admin/applications/{client_id}", {**fields, "post_logout_redirect_uris": ""}
    )
    assert cleared.status_code == 303
    after = stored(engine, client_id)
    assert (after.post_logout_redirect_uris, after.id_token_alg) == ([], "ES256")
    assert [e.details for e in audit(engine, "app.updated")][-1] == {
        "fields": ["post_logout_redirect_uris"]
    }


@pytest.mark.parametrize(
    "uri",
    [
        "http://clock.example.org/bye",  # plain http beyond loopback
        "https://clock.example.org/bye#top",  # a fragment
        "ftp://clock.example.org/bye",
        "/bye",
        "https:///bye",
    ],
)
def test_a_post_logout_uri_is_refused_as_regdesk_apps_refuses_it(
    people: People, engine: Engine, cli: Cli, uri: str
) -> None:
    """The admin form and `regdesk apps` ask the same service rule, and say the same."""
    typed = register(people.admin, post_logout_redirect_uris=f"{LOGGED_OUT}\n{uri}")
    assert typed.status_code == 400
    shown = error_of(typed.text, "post_logout_redirect_uris")
    command = cli("apps", "create", "--name", "X", "--post-logout-redirect-uri", uri)
    assert command.exit_code == 1
    said = command.stderr.strip()
    # The same words, the form's capitalised and ending in a full stop.
    assert shown.startswith("Post-logout redirect URI ")
    assert said == f"Error: post_logout_redirect_uris: {shown[:1].lower()}{shown[1:-1]}"
    # What was typed is kept, and nothing was registered.
    assert f"{LOGGED_OUT}\n{uri}</textarea>" in typed.text
    with read_session(engine) as session:
        assert session.query(Application).count() == 0
    assert audit(engine, "app.created") == []


def test_a_bad_openid_change_is_refused_and_changes_nothing(people: People, engine: Engine) -> None:
    client_id, _ = shown_secret(register(people.admin, post_logout_redirect_uris=LOGGED_OUT))
    many = "\n".join(f"https://clock.example.org/bye{n}" for n in range(21))
    long = f"https://clock.example.org/{'x' * 2000}"
    for change, field, message in [
        ({"id_token_alg": "HS256"}, "id_token_alg", "Choose RS256 or ES256."),
        ({"id_token_alg": "none"}, "id_token_alg", "Choose RS256 or ES256."),
        ({"post_logout_redirect_uris": many}, "post_logout_redirect_uris", "At most 20"),
        ({"post_logout_redirect_uris": long}, "post_logout_redirect_uris", "at most 2000"),
        (
            {"post_logout_redirect_uris": "http://clock.example.org/bye"},
            "post_logout_redirect_uris",
            "Post-logout redirect URI",
        ),
    ]:
        page = people.admin.post(
            f"/admin/applications/{client_id}",
            {"name": "Volunteer Time Clock", "redirect_uris": CALLBACK, **change},
        )
        assert page.status_code == 400, change
        assert message in error_of(page.text, field), change
        assert f'<a href="#{field}">' in page.text
    after = stored(engine, client_id)
    assert (after.post_logout_redirect_uris, after.id_token_alg) == ([LOGGED_OUT], "RS256")
    assert audit(engine, "app.updated") == []


def test_a_post_logout_uri_set_here_is_where_end_session_goes_back_to(
    people: People, engine: Engine, client: TestClient
) -> None:
    client_id, _ = shown_secret(register(people.admin, obo_scopes=["openid"]))
    params = {"client_id": client_id, "post_logout_redirect_uri": LOGGED_OUT, "state": "s"}
    before = client.get("/oauth/end-session", params=params, follow_redirects=False)
    assert before.status_code == 200  # not registered yet: the "Signed out" page
    people.admin.post(
        f"/admin/applications/{client_id}",
        {
            "name": "Volunteer Time Clock",
            "redirect_uris": CALLBACK,
            "obo_scopes": ["openid"],
            "post_logout_redirect_uris": LOGGED_OUT,
        },
    )
    after = client.get("/oauth/end-session", params=params, follow_redirects=False)
    assert after.status_code == 303
    assert after.headers["location"] == f"{LOGGED_OUT}?state=s"
