"""What the observability tests share: a user and an application made through the services,
a user's grant obtained the real way, and a scrape of /metrics read into numbers."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qs, urlsplit

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.applications import create_application
from regdesk.oauth.authorization import approve, check_authorization_request
from regdesk.users.service import NewUser, create_user
from tests import http_calls
from tests.conftest import Registered
from tests.helpers import shared_redis_url

TOKEN = "metrics-token-" + "x" * 32  # REGDESK_METRICS_TOKEN of the tests' servers
REDIRECT = "https://tool.example.org/callback"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def redis_url() -> str:
    """Rate-limit counters every worker shares (else each worker counts alone)."""
    return shared_redis_url()


def add_user(engine: Engine, username: str = "fox") -> int:
    with write_session(engine) as session:
        user = create_user(
            session,
            Actor("test"),
            NewUser(
                username=username,
                email=f"{username}@example.org",
                first_name="Fae",
                last_name="Fox",
            ),
        )
        return user.id


def register(engine: Engine, *, service_scopes: str = "", obo_scopes: str = "") -> Registered:
    with write_session(engine) as session:
        application, secret = create_application(
            session,
            Actor("test"),
            name="Tool",
            service_scopes=service_scopes,
            obo_scopes=obo_scopes,
            redirect_uris=[REDIRECT] if obo_scopes else [],
        )
    return Registered(str(application.id), secret)


def authorization_code(engine: Engine, tool: Registered, user_id: int, issuer: str) -> str:
    """The code the consent page's own function hands the tool for `pii:basic`."""
    params = [
        ("client_id", tool.client_id),
        ("response_type", "code"),
        ("redirect_uri", REDIRECT),
        ("scope", "pii:basic"),
    ]
    with write_session(engine) as session:
        request = check_authorization_request(session, params, issuer)
        location = approve(session, Actor("test"), request, user_id, issuer)
    return parse_qs(urlsplit(location).query)["code"][0]


def scrape(url: str, token: str | None = None) -> Samples:
    """Every sample of a /metrics answer, by name and labels."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = http_calls.get(url, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, labels: Mapping[str, str] | None = None) -> float:
    """A sample's value; 0 when the series has no such sample (nothing counted yet)."""
    return samples.get((name, frozenset((labels or {}).items())), 0.0)


def label_values(samples: Samples, name: str, label: str) -> set[str]:
    return {dict(labels)[label] for sample, labels in samples if sample == name}
