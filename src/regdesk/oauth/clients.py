"""An application as Authlib's server core sees it: the ClientMixin over our Application row."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import unquote, unquote_plus

from authlib.oauth2.rfc6749 import OAuth2Request
from sqlalchemy.orm import Session

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


def load_client(session: Session, client_id: str | None) -> OAuthClient | None:
    """The application behind a `client_id`, or None (unknown, malformed or suspended)."""
    if not client_id or not client_id.isascii() or not client_id.isdigit() or len(client_id) > 18:
        return None
    application = session.get(Application, int(client_id))
    if application is None or application.suspended:
        return None
    return OAuthClient(application)


def authenticate_client_secret_basic(
    query_client: Callable[[str], OAuthClient | None], request: OAuth2Request
) -> OAuthClient | None:
    """HTTP Basic, with the id and secret form-encoded (RFC 6749 2.3.1) or raw, as most client
    libraries send them (requests, Authlib's own client, the Ruby oauth2 gem).

    Replaces Authlib's version, which only percent-decodes (so a raw imported secret holding
    `%41` or a form-encoded one holding a space fails) and answers 500 to a header that is
    not UTF-8.
    """
    credentials = basic_credentials(request.headers.get("Authorization", ""))
    if credentials is None:
        return None
    client_id, readings = credentials
    client = query_client(client_id)
    if client is None:
        return None
    if any(client.check_client_secret(secret) for secret in readings):
        return client
    return None


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
    """The `user:password` of an HTTP Basic header, as `authenticate_client_secret_basic`
    decodes it; None when it is not Basic."""
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        return base64.b64decode(encoded.strip()).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def named_clients(fields: Mapping[str, Sequence[str]], authorization: str) -> list[str]:
    """The clients a request names, in the form and in HTTP Basic, as the rate limit counts
    them: both, since authentication tries both; `01` is client 1, as `load_client` reads it;
    whatever can name no client is `unknown`."""
    named = [*fields.get("client_id", ()), _basic_user(authorization)]
    ids = [str(int(n)) for n in named if n and n.isascii() and n.isdigit() and len(n) <= 18]
    return ids or ["unknown"]


def _basic_user(authorization: str) -> str | None:
    decoded = _basic_decoded(authorization)
    return None if decoded is None else unquote_plus(decoded.partition(":")[0])
