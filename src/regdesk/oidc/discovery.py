"""What the server says about itself (oidc.md, Discovery): one document, served both as
OpenID Connect Discovery 1.0's `/.well-known/openid-configuration` and as RFC 8414's
`/.well-known/oauth-authorization-server`, so the two cannot disagree."""

from __future__ import annotations

from typing import Any

from regdesk.oauth.clients import TOKEN_ENDPOINT_AUTH_METHODS
from regdesk.oauth.scopes import SCOPES
from regdesk.oidc.claims import CLAIMS_SUPPORTED
from regdesk.oidc.keys import ALGORITHMS

AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/api/oauth/token"
REVOKE_PATH = "/api/oauth/revoke"
INTROSPECT_PATH = "/api/oauth/introspect"
USERINFO_PATH = "/oauth/userinfo"
JWKS_PATH = "/oauth/jwks"
END_SESSION_PATH = "/oauth/end-session"


def server_metadata(issuer: str) -> dict[str, Any]:
    methods = list(TOKEN_ENDPOINT_AUTH_METHODS)
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}{AUTHORIZE_PATH}",
        "token_endpoint": f"{issuer}{TOKEN_PATH}",
        "userinfo_endpoint": f"{issuer}{USERINFO_PATH}",
        "jwks_uri": f"{issuer}{JWKS_PATH}",
        "end_session_endpoint": f"{issuer}{END_SESSION_PATH}",
        "revocation_endpoint": f"{issuer}{REVOKE_PATH}",
        "introspection_endpoint": f"{issuer}{INTROSPECT_PATH}",
        "scopes_supported": list(SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": list(ALGORITHMS),
        "claims_supported": list(CLAIMS_SUPPORTED),
        "claims_parameter_supported": False,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "prompt_values_supported": ["none", "login", "consent", "select_account"],
        "token_endpoint_auth_methods_supported": methods,
        "revocation_endpoint_auth_methods_supported": methods,
        "introspection_endpoint_auth_methods_supported": methods,
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "service_documentation": f"{issuer}/docs",
    }
