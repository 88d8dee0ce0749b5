"""A small Django site that signs its people in with regdesk through mozilla-django-oidc, as a
convention's wiki would (issue 19, Real components), for tests/oidc/test_django_site.py.

`django_site` writes the project into a folder, migrates its SQLite database there and runs it
with Django's own `runserver` on a loopback port. The site is configured the way the library's
documentation shows: its `OIDC_OP_*` settings read from regdesk's discovery document when the
settings load, the client's id and secret from the environment, RS256 checked against the
JWKS, PKCE, the nonce, and RP-initiated logout (`OIDC_OP_LOGOUT_URL_METHOD`) through regdesk's
`end_session_endpoint` with the ID token as the hint.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests import http_calls

PACKAGE = "wiki"

SETTINGS = '''\
"""The wiki's settings: regdesk is its only way in."""

import json
import os
from pathlib import Path
from urllib.request import urlopen

HERE = Path(__file__).resolve().parent
REGDESK = os.environ["WIKI_REGDESK_URL"]

# What regdesk says about itself (OpenID Connect Discovery 1.0), read once at start.
with urlopen(f"{REGDESK}/.well-known/openid-configuration", timeout=10) as answer:
    PROVIDER = json.load(answer)

SECRET_KEY = "a test site's key, good for nothing else"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "wiki.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "mozilla_django_oidc",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(HERE.parent / "wiki.sqlite3")}
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True

AUTHENTICATION_BACKENDS = ["wiki.auth.RegdeskBackend"]
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

OIDC_RP_CLIENT_ID = os.environ["WIKI_CLIENT_ID"]
OIDC_RP_CLIENT_SECRET = os.environ["WIKI_CLIENT_SECRET"]
OIDC_RP_SCOPES = "openid profile email"
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_USE_PKCE = True
OIDC_OP_AUTHORIZATION_ENDPOINT = PROVIDER["authorization_endpoint"]
OIDC_OP_TOKEN_ENDPOINT = PROVIDER["token_endpoint"]
OIDC_OP_USER_ENDPOINT = PROVIDER["userinfo_endpoint"]
OIDC_OP_JWKS_ENDPOINT = PROVIDER["jwks_uri"]
OIDC_OP_LOGOUT_ENDPOINT = PROVIDER["end_session_endpoint"]
OIDC_OP_LOGOUT_URL_METHOD = "wiki.auth.regdesk_logout_url"
OIDC_STORE_ID_TOKEN = True  # the logout's id_token_hint

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "django": {"handlers": ["console"], "level": "INFO"},
        "mozilla_django_oidc": {"handlers": ["console"], "level": "DEBUG"},
    },
}
'''

AUTH = '''\
"""Signing in with regdesk: Django's user made from regdesk's claims, and signing out of both."""

from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend


class RegdeskBackend(OIDCAuthenticationBackend):
    """The library's backend, keeping the person's name from the `profile` claims."""

    def create_user(self, claims):
        return self.update_user(super().create_user(claims), claims)

    def update_user(self, user, claims):
        user.first_name = claims.get("given_name", "")
        user.last_name = claims.get("family_name", "")
        user.email = claims.get("email", user.email)
        user.save()
        return user


def regdesk_logout_url(request):
    """RP-Initiated Logout 1.0: regdesk ends its session too, then sends the browser back to
    the wiki's "signed out" page, registered with regdesk as a post-logout redirect URI."""
    query = urlencode(
        {
            "id_token_hint": request.session["oidc_id_token"],
            "post_logout_redirect_uri": request.build_absolute_uri(reverse("signed_out")),
        }
    )
    return f"{settings.OIDC_OP_LOGOUT_ENDPOINT}?{query}"
'''

VIEWS = '''\
"""The wiki's two pages: who is signed in (with a way in or out), and "signed out"."""

from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.utils.html import format_html

PAGE = "<!doctype html><html lang=en><meta charset=utf-8><title>{}</title><h1>{}</h1>{}</html>"


def _page(title, body):
    return HttpResponse(format_html(PAGE, title, title, body))


def home(request):
    user = request.user
    if not user.is_authenticated:
        return _page(
            "Convention Wiki",
            format_html(
                '<p id="who">Not signed in.</p>'
                '<p><a href="/oidc/authenticate/">Sign in with regdesk</a></p>'
            ),
        )
    return _page(
        "Convention Wiki",
        format_html(
            '<p id="who">Signed in as <strong id="name">{}</strong> '
            '(<span id="email">{}</span>).</p>'
            '<form method="post" action="/oidc/logout/">'
            '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
            "<button>Sign out</button></form>",
            user.get_full_name(),
            user.email,
            get_token(request),
        ),
    )


def signed_out(request):
    return _page(
        "Signed out of the wiki",
        format_html('<p><a href="/">Back to the wiki</a></p>'),
    )
'''

URLS = """\
from django.urls import include, path

from wiki import views

urlpatterns = [
    path("", views.home, name="home"),
    path("signed-out/", views.signed_out, name="signed_out"),
    path("oidc/", include("mozilla_django_oidc.urls")),
]
"""

FILES = {
    "__init__.py": "",
    "settings.py": SETTINGS,
    "auth.py": AUTH,
    "views.py": VIEWS,
    "urls.py": URLS,
}


def callback(base: str) -> str:
    """Where regdesk sends the browser back to: mozilla-django-oidc's callback view."""
    return f"{base}/oidc/callback/"


def signed_out(base: str) -> str:
    """The wiki's page after RP-initiated logout: its post-logout redirect URI."""
    return f"{base}/signed-out/"


def write_project(directory: Path) -> None:
    package = directory / PACKAGE
    package.mkdir(parents=True)
    for name, text in FILES.items():
        (package / name).write_text(text)


@contextmanager
def django_site(
    directory: Path, port: int, regdesk: str, client_id: str, client_secret: str
) -> Iterator[str]:
    """The wiki, running at http://127.0.0.1:`port`, a client of `regdesk`; its log is
    `directory`/wiki.log (printed when the test fails: pytest shows what a test printed)."""
    write_project(directory)
    env = {
        **os.environ,
        "PYTHONPATH": str(directory),
        "DJANGO_SETTINGS_MODULE": f"{PACKAGE}.settings",
        "WIKI_REGDESK_URL": regdesk,
        "WIKI_CLIENT_ID": client_id,
        "WIKI_CLIENT_SECRET": client_secret,
    }
    django = [sys.executable, "-m", "django"]
    migrated = subprocess.run(
        [*django, "migrate", "--noinput"], env=env, capture_output=True, text=True, check=False
    )
    assert migrated.returncode == 0, migrated.stderr
    log_path = directory / "wiki.log"
    base = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*django, "runserver", "--noreload", f"127.0.0.1:{port}"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, log_path.read_text()
                try:
                    if http_calls.get(f"{base}/").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the wiki did not start in 30 s"
                time.sleep(0.1)
            yield base
        finally:
            process.terminate()
            process.wait(timeout=10)
            print(f"--- the wiki's log ({log_path}) ---\n{log_path.read_text()}")
