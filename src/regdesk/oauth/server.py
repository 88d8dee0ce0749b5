"""The token endpoint's engine: Authlib's AuthorizationServer, adapted to our ASGI app.

The adapter is thin: the route reads the form once, keeping every value of a repeated field,
and hands it over as a `TokenRequest`; Authlib authenticates the client and runs the grant;
our hooks load clients and store tokens through the request's database session. A server is
made per request because Authlib's `query_client(client_id)` hook receives no request, so the
server itself must carry the session.

The grants are Authlib's, with our rules where they differ (decisions.md, Scopes and Tokens):
- client_credentials checks the requested scopes against the registry and the application's
  approved scopes; an omitted scope means every approved scope.
- authorization_code and refresh_token: oauth/user_grants.py (atomic code redemption, PKCE,
  rotation with reuse detection); revocation and introspection: oauth/token_info.py.
Tokens are random strings made by `_generate_token`; `save_token` writes their hashes with the
rows the grant needs, in the request's transaction.

The user's grants take extensions from above this layer (`GrantExtensions`): OpenID Connect
(regdesk.oidc) adds the ID token to their token responses; the app hands them over at start.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import (
    ClientCredentialsGrant,
    OAuth2Payload,
    OAuth2Request,
)
from authlib.oauth2.rfc6749.errors import (
    InvalidClientError,
    InvalidRequestError,
    InvalidScopeError,
)
from sqlalchemy import insert
from sqlalchemy.orm import Session

from regdesk.db import utcnow
from regdesk.oauth.clients import TOKEN_ENDPOINT_AUTH_METHODS, OAuthClient, load_client
from regdesk.oauth.models import (
    AccessToken,
    Grant,
    RefreshToken,
)
from regdesk.oauth.scopes import (
    SCOPES,
    ScopeError,
    check_service_scopes,
    parse_scopes,
)
from regdesk.oauth.token_info import Introspection, Revocation
from regdesk.oauth.tokens import (
    access_token_row,
    new_token,
    token_key,
)
from regdesk.oauth.user_grants import (
    Pkce,
    PresentedRefreshToken,
    RedeemedCode,
    UserAuthorizationGrant,
    UserRefreshGrant,
)

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
        client: OAuthClient = self.request.client
        try:
            check_service_scopes(
                parse_scopes(self.request.payload.scope), client.application.service_scopes
            )
        except ScopeError as exc:
            raise InvalidScopeError(description=error_description(f"{exc}.")) from None


# --- the server ------------------------------------------------------------------------------

# An Authlib grant extension made for one server (so for one request): called with the grant.
GrantExtension = Callable[["RegdeskAuthorizationServer"], Callable[[Any], None]]


@dataclass(frozen=True)
class GrantExtensions:
    """What a feature above the OAuth server adds to the user's grants (regdesk.oidc)."""

    authorization_code: tuple[GrantExtension, ...] = ()
    refresh_token: tuple[GrantExtension, ...] = ()


class RegdeskAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's server over one request: `client` is the client that request authenticated
    (oauth/routes.py, before anything ran), or None, and then `client_refusal` says why."""

    def __init__(
        self,
        session: Session,
        *,
        client: OAuthClient | None,
        client_refusal: str,
        access_token_ttl: int,
        refresh_token_idle_ttl: int = 0,
        issuer: str = "",
        extensions: GrantExtensions = GrantExtensions(),
    ) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.session = session
        self.client = client
        self.client_refusal = client_refusal
        self.access_token_ttl = access_token_ttl
        self.refresh_token_idle_ttl = refresh_token_idle_ttl
        self.issuer = issuer
        self.register_token_generator("default", self._generate_token)
        self.register_grant(ServiceIntegrationGrant)
        self.register_grant(
            UserAuthorizationGrant,
            [Pkce(required=False), *(make(self) for make in extensions.authorization_code)],
        )
        self.register_grant(UserRefreshGrant, [make(self) for make in extensions.refresh_token])
        self.register_endpoint(Revocation)
        self.register_endpoint(Introspection)

    def query_client(self, client_id: str) -> OAuthClient | None:
        return load_client(self.session, client_id)

    def authenticate_client(
        self, request: OAuth2Request, methods: list[str], endpoint: str = "token"
    ) -> OAuthClient:
        """The client authenticated once for this request, where Authlib's flow asks for it
        (so its other checks keep their order): one reading of the credentials for all."""
        if self.client is None:
            raise InvalidClientError(description=self.client_refusal)
        return self.client

    def _generate_token(
        self,
        grant_type: str,
        client: OAuthClient,
        user: Any = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        token: dict[str, Any] = {
            "access_token": new_token(),
            "token_type": "bearer",
            "expires_in": expires_in or self.access_token_ttl,
            "scope": client.get_allowed_scope(scope),
        }
        if include_refresh_token:
            token["refresh_token"] = new_token()
        return token

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        """Store the hashes of what `_generate_token` made, with the rows the grant needs."""
        client: OAuthClient = request.client
        grant_type = request.payload.grant_type
        user_id = request.user.id if request.user is not None else None
        grant_id = None
        if grant_type == "authorization_code":
            code: RedeemedCode = request.authorization_code
            grant = Grant(
                application_id=client.id,
                user_id=user_id,
                scope=code.row.scope,
                app_scopes_version=client.application.scopes_version,
                created_at=utcnow(),
                auth_time=code.row.auth_time,
                sid=code.row.sid,
            )
            self.session.add(grant)
            self.session.flush()
            code.row.grant_id = grant_id = grant.id
        elif grant_type == "refresh_token":
            grant_id = cast(PresentedRefreshToken, request.refresh_token).grant.id
        now = utcnow()
        row = access_token_row(
            token["access_token"],
            application_id=client.id,
            scope=token["scope"],
            ttl=token["expires_in"],
            now=now,
            user_id=user_id,
            grant_id=grant_id,
        )
        access_id = self.session.execute(
            insert(AccessToken).values(**row).returning(AccessToken.id)
        ).scalar_one()
        if "refresh_token" in token:
            self.session.execute(
                insert(RefreshToken).values(
                    token_hash=token_key(token["refresh_token"]),
                    grant_id=grant_id,
                    scope=token["scope"],
                    access_token_id=access_id,
                    created_at=now,
                )
            )

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
