"""What the second-factor tests share: setting up an authenticator app on /account as a
browser does, the codes it would show, and the second step of signing in."""

from __future__ import annotations

import re
import time

import httpx
import pyotp

from tests.client import TestClient
from tests.web.support import form

SECRET = re.compile(r'<code class="totp-secret" id="totp-secret">([A-Z2-7 ]+)</code>')
RECOVERY_CODE = re.compile(r"<li><code>([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4})</code></li>")
STEP = 30


def start_app_setup(client: TestClient) -> str:
    """Press "Add an authenticator app" on /account: the secret the setup page shows."""
    fields = form(client.get("/account").text, "/account/totp").fields
    started = client.post("/account/totp", data=fields, follow_redirects=False)
    assert (started.status_code, started.headers["location"]) == (303, "/account/totp")
    page = client.get("/account/totp")
    assert page.status_code == 200, page.text
    found = SECRET.search(page.text)
    assert found, page.text
    return found.group(1).replace(" ", "")


def code(secret: str, steps_ahead: int = 0) -> str:
    """The code the app shows now, or `steps_ahead` 30-second steps from now."""
    return pyotp.TOTP(secret).at(time.time() + steps_ahead * STEP)


def confirm_app(client: TestClient, typed: str) -> httpx.Response:
    fields = form(client.get("/account/totp").text, "/account/totp/confirm").fields
    return client.post(
        "/account/totp/confirm", data={**fields, "code": typed}, follow_redirects=False
    )


def add_app(client: TestClient) -> tuple[str, list[str]]:
    """Set up and confirm an app (signed in): its secret and the recovery codes shown."""
    secret = start_app_setup(client)
    done = confirm_app(client, code(secret))
    assert done.status_code == 200, done.text
    return secret, RECOVERY_CODE.findall(done.text)


def second_step(client: TestClient, typed: str) -> httpx.Response:
    """Send the second step's code form (after a right password)."""
    page = client.get("/login/second-factor")
    assert page.status_code == 200, page.text
    fields = form(page.text, "/login/second-factor").fields
    return client.post(
        "/login/second-factor", data={**fields, "code": typed}, follow_redirects=False
    )


def account_form(client: TestClient, action: str) -> dict[str, str]:
    return form(client.get("/account").text, action).fields
