"""Helpers for tests of a user's grant: a code as the consent screen issues it, and exchanges."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.authorization import approve, check_authorization_request
from tests.client import TestClient
from tests.conftest import Apps, Registered
from tests.transfer.support import import_

REDIRECT = "https://tool.example.org/callback"
ISSUER = "https://testserver"


@dataclass
class Flow:
    client: TestClient
    engine: Engine
    app: Registered
    user_id: int

    def code(
        self,
        scope: str = "pii:basic pii:email",
        *,
        challenge: str | None = None,
        redirect_uri: str = REDIRECT,
    ) -> str:
        params = [
            ("client_id", self.app.client_id),
            ("response_type", "code"),
            ("redirect_uri", redirect_uri),
            ("scope", scope),
            ("state", "s"),
        ]
        if challenge is not None:
            params += [("code_challenge", challenge), ("code_challenge_method", "S256")]
        with write_session(self.engine) as session:
            request = check_authorization_request(session, params, ISSUER)
            location = approve(session, Actor("test"), request, self.user_id, ISSUER)
        return parse_qs(urlsplit(location).query)["code"][0]

    def token(self, **form: str) -> httpx.Response:
        return self.client.post(
            "/api/oauth/token",
            data=form,
            auth=(self.app.client_id, self.app.client_secret),
        )

    def exchange(self, code: str, **extra: str) -> httpx.Response:
        return self.token(
            grant_type="authorization_code", code=code, redirect_uri=REDIRECT, **extra
        )

    def tokens(self, scope: str = "pii:basic pii:email") -> dict[str, Any]:
        response = self.exchange(self.code(scope))
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def refresh(self, refresh_token: str, **extra: str) -> httpx.Response:
        return self.token(grant_type="refresh_token", refresh_token=refresh_token, **extra)


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_flow(client: TestClient, apps: Apps, engine: Engine, **scopes: str) -> Flow:
    ids = import_(
        engine,
        {
            "users": [
                {
                    "username": "fox",
                    "email": "fox@example.org",
                    "firstName": "Fae",
                    "lastName": "Fox",
                    "phone": "+15555550123",
                },
            ]
        },
    ).as_json()
    app = apps.register(
        obo_scopes=scopes.get("obo", "pii:basic pii:email pii:phone"),
        service_scopes=scopes.get("service", ""),
        redirect_uris=[REDIRECT],
    )
    return Flow(client, engine, app, int(ids["users"]["fox"]))
