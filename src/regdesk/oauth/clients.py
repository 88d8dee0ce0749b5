"""Client authentication (RFC 6749 2.3), and an application as Authlib's server core sees it:
the ClientMixin over our Application row.

One reading of a request's credentials (`client_credentials`) serves every path that
authenticates a client (the quick token path, Authlib's grants, revocation, introspection), so
they cannot disagree about who is asking: HTTP Basic or the form fields, never both (RFC 6749
2.3: one method per request), and never two clients named in one request.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, unquote_plus

from sqlalchemy.orm import Session

from regdesk.db import ID_MAX
from regdesk.errors import OAuthError
from regdesk.oauth.models import Application
from regdesk.oauth.scopes import format_scopes, parse_scopes
from regdesk.security import verify_client_secret

# decisions.md, Tokens: form fields or HTTP Basic; never a public client.
TOKEN_ENDPOINT_AUTH_METHODS = ("client_secret_basic", "client_secret_post")


class OAuthClient:
    """Authlib's ClientMixin, implemented over one Application."""

    def __init__(self, application: Application) -> None:
        self.application = application

    @property
    def id(self) -> int:
        return self.application.id

    def get_client_id(self) -> str:
        return str(self.application.id)

    def get_default_redirect_uri(self) -> str | None:
        uris = self.application.redirect_uris
        return uris[0] if len(uris) == 1 else None

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.application.redirect_uris  # exact string match

    def check_client_secret(self, client_secret: str) -> bool:
        return verify_client_secret(self.application.secret_hash, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in TOKEN_ENDPOINT_AUTH_METHODS

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code" and bool(self.application.obo_scopes)

    def check_grant_type(self, grant_type: str) -> bool:
        if grant_type == "client_credentials":
            return bool(self.application.service_scopes)
        return grant_type in ("authorization_code", "refresh_token") and bool(
            self.application.obo_scopes
        )

    def get_allowed_scope(self, scope: str | None) -> str:
        """The token's scope: what was asked (already checked), or every approved scope."""
        if scope:
            return format_scopes(parse_scopes(scope))
        return self.application.service_scopes


def client_number(client_id: str | None) -> int | None:
    """The application id a `client_id` names (`01` is 1), or None when it names none.
    The length first: int() refuses 4300 digits and more."""
    if not client_id or not client_id.isascii() or not client_id.isdigit() or len(client_id) > 18:
        return None
    number = int(client_id)
    return number if 0 < number <= ID_MAX else None


def load_client(session: Session, client_id: str | None) -> OAuthClient | None:
    """The application behind a `client_id`, or None (unknown, malformed or suspended)."""
    number = client_number(client_id)
    application = session.get(Application, number) if number is not None else None
    if application is None or application.suspended:
        return None
    return OAuthClient(application)


@dataclass(frozen=True)
class ClientCredentials:
    """The credentials a request offers: its client id, and the readings of its secret to try
    (HTTP Basic's may be form-encoded or raw, see `basic_credentials`)."""

    client_id: str
    secrets: tuple[str, ...]

    def match(self, secret_hash: str) -> bool:
        return any(verify_client_secret(secret_hash, secret) for secret in self.secrets)


TWO_METHODS = (
    "Authenticate the client one way: HTTP Basic, or client_id and client_secret in the form, "
    "not both."
)
TWO_CLIENTS = "The client_id in the form is not the client of the HTTP Basic credentials."


def client_credentials(
    fields: Mapping[str, Sequence[str]], authorization: str
) -> ClientCredentials | None:
    """The client credentials of a token, revocation or introspection request, or None when it
    offers none that can be read. OAuthError (invalid_request, RFC 6749 5.2) when it uses two
    methods at once, or names another client in the form than in HTTP Basic; the form's
    `client_id` beside matching Basic credentials is accepted (common libraries send it)."""
    if authorization.partition(" ")[0].lower() == "basic":
        if "client_secret" in fields:
            raise OAuthError("invalid_request", TWO_METHODS)
        basic = basic_credentials(authorization)
        if basic is None:
            return None
        client_id, readings = basic
        if any(not _same_client(named, client_id) for named in fields.get("client_id", ())):
            raise OAuthError("invalid_request", TWO_CLIENTS)
        return ClientCredentials(client_id, tuple(readings))
    ids, secrets = fields.get("client_id", ()), fields.get("client_secret", ())
    if len(ids) != 1 or len(secrets) != 1 or not ids[0] or not secrets[0]:
        return None
    return ClientCredentials(ids[0], (secrets[0],))


def _same_client(one: str, other: str) -> bool:
    return one == other or (client_number(one) or 0) == (client_number(other) or -1)


def authenticate(session: Session, credentials: ClientCredentials | None) -> OAuthClient | None:
    """The live application whose secret the credentials hold, or None."""
    if credentials is None:
        return None
    client = load_client(session, credentials.client_id)
    if client is None or not credentials.match(client.application.secret_hash):
        return None
    return client


def basic_credentials(authorization: str) -> tuple[str, list[str]] | None:
    """The client id of an HTTP Basic header, and the readings of its secret to try: as sent,
    form-decoded, percent-decoded. None when it is not Basic, or not a pair."""
    decoded = _basic_decoded(authorization)
    if decoded is None:
        return None
    user, colon, password = decoded.partition(":")
    if not colon or not user or not password:
        return None
    return unquote_plus(user), list(
        dict.fromkeys((password, unquote_plus(password), unquote(password)))
    )


def _basic_decoded(authorization: str) -> str | None:
    """The `user:password` of an HTTP Basic header; None when it is not Basic or not UTF-8.
    (Authlib's own reading only percent-decodes, so a raw imported secret holding `%41` or a
    form-encoded one holding a space would fail, and answers 500 to a header not UTF-8.)"""
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        return base64.b64decode(encoded.strip()).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
