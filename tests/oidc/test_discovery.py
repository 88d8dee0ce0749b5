"""Discovery, the RFC 8414 document and the JWKS (oidc.md, Discovery and Keys)."""

from __future__ import annotations

from sqlalchemy import Engine

from regdesk.db import write_session
from regdesk.oauth.scopes import SCOPES
from regdesk.webhooks.signing import current_key
from tests.client import TestClient
from tests.oidc.support import ISSUER


def test_the_discovery_document_lists_what_oidc_md_asks(client: TestClient) -> None:
    response = client.get("/.well-known/openid-configuration")
    assert response.status_code == 200
    document = response.json()
    assert document["issuer"] == ISSUER
    assert document["authorization_endpoint"] == f"{ISSUER}/oauth/authorize"
    assert document["token_endpoint"] == f"{ISSUER}/api/oauth/token"
    assert document["userinfo_endpoint"] == f"{ISSUER}/oauth/userinfo"
    assert document["jwks_uri"] == f"{ISSUER}/oauth/jwks"
    assert document["end_session_endpoint"] == f"{ISSUER}/oauth/end-session"
    assert document["revocation_endpoint"] == f"{ISSUER}/api/oauth/revoke"
    assert document["introspection_endpoint"] == f"{ISSUER}/api/oauth/introspect"
    assert document["response_types_supported"] == ["code"]
    assert document["id_token_signing_alg_values_supported"] == ["RS256", "ES256"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["subject_types_supported"] == ["public"]
    assert document["token_endpoint_auth_methods_supported"] == [
        "client_secret_basic",
        "client_secret_post",
    ]
    assert {"openid", "profile", "email", "phone", "address", "groups"} <= set(
        document["scopes_supported"]
    )
    assert document["scopes_supported"] == list(SCOPES)
    assert {"sub", "name", "email", "phone_number", "address", "groups", "sid"} <= set(
        document["claims_supported"]
    )
    # Every endpoint it names answers (none of them a 404).
    for endpoint in ("jwks_uri", "userinfo_endpoint", "end_session_endpoint"):
        path = document[endpoint].removeprefix(ISSUER)
        assert client.get(path, follow_redirects=False).status_code != 404, endpoint


def test_the_rfc_8414_document_is_the_same(client: TestClient) -> None:
    oauth = client.get("/.well-known/oauth-authorization-server").json()
    assert oauth == client.get("/.well-known/openid-configuration").json()
    assert oauth["authorization_response_iss_parameter_supported"] is True


def test_the_jwks_has_public_oidc_keys_only(client: TestClient, engine: Engine) -> None:
    with write_session(engine) as session:
        webhook = current_key(session).kid  # the key store holds other purposes' keys too
    keys = client.get("/oauth/jwks").json()["keys"]
    assert sorted(key["alg"] for key in keys) == ["ES256", "RS256"]
    for key in keys:
        assert key["kid"]
        assert key["use"] == "sig"
        assert not {"d", "p", "q", "dp", "dq", "qi"} & set(key), "a private member is published"
    assert webhook not in [key["kid"] for key in keys]
