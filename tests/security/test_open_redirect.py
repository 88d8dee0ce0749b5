"""Open redirection (RFC 9700 4.11.2: the authorization server as open redirector; RFC 6749
10.15; ASVS 4.0 V5.1.5): no `next` makes a page send the browser to a place an attacker chose.

`/login` and `/oauth/authorize` may only go on to a path of this site; `/oauth/logout` also to
the origin of one of the client's registered redirect addresses; `/logout` nowhere else.
Each payload is judged by where a browser would really go (support.browser_target).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from sqlalchemy import Engine

from tests.client import TestClient
from tests.security.support import BASE_URL, new_user, stays_within
from tests.web.support import CALLBACK, PASSWORD, authorize_params, form, register_app

EVIL = "evil.example"

# Ways to name another site where a local path is expected.
OFF_SITE = {
    "absolute": f"https://{EVIL}/",
    "plain http": f"http://{EVIL}/",
    "scheme-relative": f"//{EVIL}/",
    "three slashes": f"///{EVIL}/",
    "four slashes": f"////{EVIL}/",
    "slash backslash": f"/\\{EVIL}/",
    "backslash slash": f"\\/{EVIL}/",
    "two backslashes": f"\\\\{EVIL}/",
    "slash backslash slash": f"/\\/{EVIL}/",
    "tab inside": f"/\t/{EVIL}/",
    "line feed inside": f"/\n/{EVIL}/",
    "carriage return inside": f"/\r/{EVIL}/",
    "leading space": f" //{EVIL}/",
    "leading tab": f"\t//{EVIL}/",
    "NUL inside": f"/\x00/{EVIL}/",
    "scheme without slashes": f"https:{EVIL}",
    "scheme with one slash": f"https:/{EVIL}",
    "javascript": "javascript:alert(document.domain)",
    "javascript, mixed case": "JaVaScRiPt:alert(1)",
    "data": "data:text/html,<script>alert(1)</script>",
    "vbscript": "vbscript:msgbox(1)",
    "userinfo before our host": f"https://testserver@{EVIL}/",
    "our host as a subdomain": f"https://testserver.{EVIL}/",
    "backslash before userinfo": f"https://{EVIL}\\@testserver/",
    "fragment before userinfo": f"https://{EVIL}#@testserver/",
    "our address in the query": f"https://{EVIL}/?next=https://testserver/",
    "encoded slashes": f"%2F%2F{EVIL}/",
    "encoded backslash": f"%5C%5C{EVIL}/",
    "double-encoded slashes": f"%252F%252F{EVIL}/",
    "fullwidth solidus": f"\uff0f\uff0f{EVIL}/",
    "unicode line separator": f"/\u2028/{EVIL}/",
    "overlong": "/" + "a" * 20_000 + f"//{EVIL}",
}
# Odd, but paths of this site: kept or dropped, the browser stays here.
ON_SITE = {
    "relative": "account",
    "encoded slashes in a path": f"/%2F%2F{EVIL}",
    "javascript after a slash": "/javascript:alert(1)//",
    "dot segments": f"/../../{EVIL}/",
}


def log_in_with_next(client: TestClient, username: str, next_: str, *, in_post: bool) -> str:
    """The Location after logging in, `next_` given in the login page's address (which puts it
    in the form) or added to the POST by hand (a forged form)."""
    page = client.get("/login", params=None if in_post else {"next": next_})
    assert page.status_code == 200, page.text
    fields = {**form(page.text, "/login").fields, "username": username, "password": PASSWORD}
    if in_post:
        fields["next"] = next_
    response = client.post("/login", data=fields, follow_redirects=False)
    assert response.status_code == 303, response.text
    assert stays_within(response, BASE_URL), response.headers["location"]
    location: str = response.headers["location"]
    return location


@pytest.mark.parametrize("in_post", [False, True], ids=["next-in-url", "next-in-post"])
@pytest.mark.parametrize("next_", list(OFF_SITE.values()), ids=list(OFF_SITE))
def test_login_next_never_leads_off_site(
    client: TestClient, engine: Engine, next_: str, in_post: bool
) -> None:
    username, _ = new_user(engine)
    assert log_in_with_next(client, username, next_, in_post=in_post) == "/account"
    assert EVIL not in client.get("/login", params={"next": next_}).text


@pytest.mark.parametrize("next_", list(ON_SITE.values()), ids=list(ON_SITE))
def test_login_next_that_looks_odd_still_stays_on_this_site(
    client: TestClient, engine: Engine, next_: str
) -> None:
    username, _ = new_user(engine)
    assert log_in_with_next(client, username, next_, in_post=True) in ("/account", next_)


def test_login_next_to_a_local_path_is_kept(client: TestClient, engine: Engine) -> None:
    """The control: the same path with an ordinary local `next` does redirect there."""
    username, _ = new_user(engine)
    assert log_in_with_next(client, username, "/account?x=1", in_post=True) == "/account?x=1"


@pytest.mark.parametrize("next_", list(OFF_SITE.values()), ids=list(OFF_SITE))
def test_logout_has_no_next_at_all(client: TestClient, engine: Engine, next_: str) -> None:
    """`/logout` ignores any `next`: the confirmation page, then the signed-out page."""
    username, _ = new_user(engine)
    log_in_with_next(client, username, "/account", in_post=True)
    page = client.get("/logout", params={"next": next_}, follow_redirects=False)
    assert page.status_code == 200
    assert "location" not in page.headers
    fields = {**form(page.text, "/logout").fields, "next": next_}
    answer = client.post("/logout", params={"next": next_}, data=fields, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/logout"
    assert EVIL not in client.get("/logout", params={"next": next_}).text


# Ways to name another site where the origin of a registered redirect address is expected
# (registered: https://app.example/cb).
OFF_ORIGIN = {
    "another site": f"https://{EVIL}/",
    "scheme-relative": "//app.example/",
    "http instead of https": "http://app.example/",
    "another port": "https://app.example:8443/",
    "port out of range": "https://app.example:99999/",
    "registered host as a subdomain": f"https://app.example.{EVIL}/",
    "registered host as userinfo": f"https://app.example@{EVIL}/",
    "registered host and port as userinfo": f"https://app.example:443@{EVIL}/",
    "userinfo before the registered host": f"https://{EVIL}@app.example/",
    "backslash before userinfo": f"https://{EVIL}\\@app.example/",
    "fragment before userinfo": f"https://{EVIL}#@app.example/",
    "query before userinfo": f"https://{EVIL}?@app.example/",
    "tab inside the host": f"https://app.example\t.{EVIL}/",
    "encoded at sign": f"https://app.example%40{EVIL}/",
    "encoded slash": f"https://{EVIL}%2F@app.example/",
    "trailing dot": "https://app.example./",
    "homograph": "https://\u0430pp.example/",  # a Cyrillic a
    "registered address in the path": f"https://{EVIL}/https://app.example/",
    "one slash": "https:/app.example/",
    "no slash": "https:app.example/",
    "javascript": "javascript://app.example/%0aalert(1)",
    "data": "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "local path": "/account",
    "NUL inside": "https://app.example\x00.evil.example/",
}


@pytest.mark.parametrize("next_", list(OFF_ORIGIN.values()), ids=list(OFF_ORIGIN))
def test_oauth_logout_next_only_to_a_registered_origin(
    client: TestClient, engine: Engine, next_: str
) -> None:
    registered = register_app(engine, redirect_uris=[CALLBACK])
    params = {"client_id": registered.client_id, "next": next_}
    response = client.get("/oauth/logout", params=params, follow_redirects=False)
    assert response.status_code == 200, response.headers.get("location")
    assert "location" not in response.headers
    assert EVIL not in response.text
    assert "app.example" not in response.text  # no link to follow either


@pytest.mark.parametrize(
    "next_", ["https://app.example/bye", "https://APP.example:443/bye?x=1"], ids=["plain", "case"]
)
def test_oauth_logout_next_at_the_registered_origin_is_followed(
    client: TestClient, engine: Engine, next_: str
) -> None:
    """The control: the origin check is what refuses the others."""
    registered = register_app(engine, redirect_uris=[CALLBACK])
    params = {"client_id": registered.client_id, "next": next_}
    response = client.get("/oauth/logout", params=params, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == next_


@pytest.mark.parametrize(
    "client_id",
    ["999999", "", "1 OR 1=1", "%31", "-1"],
    ids=["unknown", "empty", "sqli", "enc", "neg"],
)
def test_oauth_logout_of_no_known_client_goes_nowhere(
    client: TestClient, engine: Engine, client_id: str
) -> None:
    register_app(engine, redirect_uris=[CALLBACK])
    params = {"client_id": client_id, "next": "https://app.example/"}
    response = client.get("/oauth/logout", params=params, follow_redirects=False)
    assert response.status_code == 200
    assert "location" not in response.headers


@pytest.mark.parametrize("next_", list(OFF_SITE.values())[:12], ids=list(OFF_SITE)[:12])
def test_authorize_takes_no_next_through_the_login_detour(
    client: TestClient, engine: Engine, next_: str
) -> None:
    """A `next` smuggled into the authorization request rides along through /login (as a
    parameter of the local path), and the browser still ends up on this site, then at the
    registered redirect address."""
    username, _ = new_user(engine)
    registered = register_app(engine, redirect_uris=[CALLBACK])
    params = {**authorize_params(registered), "next": next_}
    detour = client.get("/oauth/authorize", params=params, follow_redirects=False)
    assert detour.status_code == 303
    assert stays_within(detour, BASE_URL)
    login_page = client.get(detour.headers["location"])
    back = log_in_with_next(
        client, username, form(login_page.text, "/login").fields["next"], in_post=True
    )
    assert back.startswith("/oauth/authorize?"), back
    consent = client.get(back)
    assert consent.status_code == 200, consent.text
    fields = {**form(consent.text, "/oauth/authorize").fields, "decision": "authorize"}
    answer = client.post("/oauth/authorize", data=fields, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith(CALLBACK + "?")
    assert quote(EVIL) not in answer.headers["location"].split("?")[0]
