"""The token endpoint's engine: Authlib's AuthorizationServer, adapted to our ASGI app.

The adapter is thin: the route reads the form once, keeping every value of a repeated field,
and hands it over as a `TokenRequest`; Authlib authenticates the client and runs the grant;
our hooks load clients and store tokens through the request's database session. A server is
made per request because Authlib's `query_client(client_id)` hook receives no request, so the
server itself must carry the session.

Where our rules differ from Authlib's defaults, the grant says so: client_credentials checks
the requested scopes against the registry and the application's approved scopes, and an
omitted scope means every approved scope (decisions.md, Scopes).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientCredentialsGrant, OAuth2Payload, OAuth2Request
from authlib.oauth2.rfc6749.errors import InvalidRequestError, InvalidScopeError
from sqlalchemy.orm import Session

from regdesk.oauth.clients import (
    TOKEN_ENDPOINT_AUTH_METHODS,
    OAuthClient,
    authenticate_client_secret_basic,
    load_client,
)
from regdesk.oauth.scopes import SCOPES, Holder, ScopeError, check_scopes, parse_scopes
from regdesk.oauth.tokens import issue_access_token

# Authlib logs issued tokens at DEBUG ("Issue token %r"): never let that reach a handler.
logging.getLogger("authlib").setLevel(logging.INFO)


def error_description(text: str, limit: int = 200) -> str:
    """Text fit for `error_description`: RFC 6749 5.2 allows printable ASCII less `"` and `\\`
    (Authlib raises on anything else), and a client's input echoed in it may hold anything."""
    safe = "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text)
    return safe if len(safe) <= limit else safe[: limit - 3] + "..."


class FormPayload(OAuth2Payload):  # type: ignore[misc]
    """The token request's fields. `scope` may be sent repeated (decisions.md): all its values
    count, joined by spaces; any other field sent twice is refused before we get here."""

    def __init__(self, fields: Mapping[str, Sequence[str]]) -> None:
        self._datalist = defaultdict(list, {k: list(v) for k, v in fields.items()})
        self._data = {
            key: " ".join(values) if key == "scope" else values[-1]
            for key, values in fields.items()
        }

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist


class TokenRequest(OAuth2Request):  # type: ignore[misc]
    def __init__(
        self, uri: str, headers: Mapping[str, str], fields: Mapping[str, Sequence[str]]
    ) -> None:
        # Starlette's Headers: Authlib looks up "Authorization" and needs case-insensitivity.
        super().__init__(method="POST", uri=uri, headers=headers)
        self.payload = FormPayload(fields)

    @property
    def form(self) -> dict[str, str]:
        fields: dict[str, str] = self.payload.data
        return fields


class ServiceIntegrationGrant(ClientCredentialsGrant):  # type: ignore[misc]
    """client_credentials (api.md 4.2, 5.2) with decisions.md's scope rules."""

    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(TOKEN_ENDPOINT_AUTH_METHODS)

    def validate_requested_scope(self) -> None:
        requested = parse_scopes(self.request.payload.scope)
        try:
            check_scopes(requested, Holder.SERVICE)
        except ScopeError as exc:
            raise InvalidScopeError(description=error_description(f"{exc}.")) from None
        client: OAuthClient = self.request.client
        approved = set(parse_scopes(client.application.service_scopes))
        beyond = [name for name in requested if name not in approved]
        if beyond:
            raise InvalidScopeError(
                description=error_description(
                    f"The scope {beyond[0]!r} is not approved for this application."
                )
            )


class RegdeskAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    def __init__(self, session: Session, access_token_ttl: int) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.session = session
        self.access_token_ttl = access_token_ttl
        self.register_token_generator("default", self._generate_token)
        self.register_client_auth_method("client_secret_basic", authenticate_client_secret_basic)
        self.register_grant(ServiceIntegrationGrant)

    def query_client(self, client_id: str) -> OAuthClient | None:
        return load_client(self.session, client_id)

    def _generate_token(
        self,
        grant_type: str,
        client: OAuthClient,
        user: Any = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        # The token is written here, where its id is known; save_token has nothing left to do.
        granted = client.get_allowed_scope(scope)
        ttl = expires_in or self.access_token_ttl
        token, _ = issue_access_token(
            self.session, application_id=client.id, scope=granted, ttl=ttl
        )
        return {"access_token": token, "token_type": "bearer", "expires_in": ttl, "scope": granted}

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        """Already stored by the generator, as a hash."""

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No listeners: the audit log is written by the grants themselves."""

    def create_oauth2_request(self, request: TokenRequest) -> TokenRequest:
        return request

    def create_token_response(
        self, request: TokenRequest
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        # RFC 6749 5.2 (3.1: empty means omitted): a missing grant_type is a missing parameter,
        # invalid_request; Authlib would answer unsupported_grant_type for "grant_type=None".
        if not request.payload.grant_type:
            error = InvalidRequestError("The parameter 'grant_type' is missing.")
            result: tuple[int, dict[str, Any], dict[str, str]] = self.handle_error_response(
                request, error
            )
            return result
        return super().create_token_response(request)  # type: ignore[no-any-return]

    def handle_response(
        self, status: int, body: dict[str, Any], headers: list[tuple[str, str]]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        return status, body, dict(headers)
